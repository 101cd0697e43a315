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

inline geometry_msgs::msg::Pose toMsg(const Eigen::Isometry3d& t)
{
  geometry_msgs::msg::Pose pose;
  pose.position.x = t.translation().x();
  pose.position.y = t.translation().y();
  pose.position.z = t.translation().z();
  const Eigen::Quaterniond q(t.linear());
  pose.orientation.x = q.x();
  pose.orientation.y = q.y();
  pose.orientation.z = q.z();
  pose.orientation.w = q.w();
  return pose;
}
}  // namespace loink_kinematics
