#pragma once

#include <Eigen/Geometry>
#include <geometry_msgs/msg/pose.hpp>

namespace loink_kinematics
{
// A Pose as a transform; the quaternion is normalised first (MoveIt's callers may send one
// that is off by round-off).
inline Eigen::Isometry3d toEigen(const geometry_msgs::msg::Pose& pose)
{
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  t.translation() = Eigen::Vector3d(pose.position.x, pose.position.y, pose.position.z);
  t.linear() = Eigen::Quaterniond(pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z)
                   .normalized()
                   .toRotationMatrix();
  return t;
}
}  // namespace loink_kinematics
