#pragma once

#include <Eigen/Geometry>
#include <geometry_msgs/msg/pose.hpp>

namespace loink_kinematics
{
// A Pose as a transform; the quaternion is normalised first (MoveIt's callers may send one
// that is off by round-off), after scaling by its largest component, so that any non-zero
// length, 1e300 or 1e-300 too, stands for its rotation (as in the node).
inline Eigen::Isometry3d toEigen(const geometry_msgs::msg::Pose& pose)
{
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  t.translation() = Eigen::Vector3d(pose.position.x, pose.position.y, pose.position.z);
  Eigen::Quaterniond q(pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z);
  const double largest = q.coeffs().cwiseAbs().maxCoeff();
  if (largest > 0.0)
    q.coeffs() /= largest;
  t.linear() = q.normalized().toRotationMatrix();
  return t;
}
}  // namespace loink_kinematics
