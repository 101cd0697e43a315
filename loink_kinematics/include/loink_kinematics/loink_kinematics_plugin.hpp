// A MoveIt kinematics plugin that takes its answers from a running loink_node
// (~/solve_pose, loink_msgs/srv/SolvePose): ranked, cost-optimal full-pose IK.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <Eigen/Geometry>
#include <loink_msgs/srv/solve_pose.hpp>
#include <moveit/kinematics_base/kinematics_base.hpp>
#include <moveit/robot_model/joint_model_group.hpp>
#include <moveit/robot_model/link_model.hpp>
#include <rclcpp/rclcpp.hpp>

namespace loink_kinematics
{
class LOInKKinematicsPlugin : public kinematics::KinematicsBase
{
public:
  LOInKKinematicsPlugin() = default;
  ~LOInKKinematicsPlugin() override;

  bool initialize(const rclcpp::Node::SharedPtr& node, const moveit::core::RobotModel& robot_model,
                  const std::string& group_name, const std::string& base_frame,
                  const std::vector<std::string>& tip_frames, double search_discretization) override;

  bool getPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                     std::vector<double>& solution, moveit_msgs::msg::MoveItErrorCodes& error_code,
                     const kinematics::KinematicsQueryOptions& options) const override;

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, std::vector<double>& solution,
                        moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override;

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, const std::vector<double>& consistency_limits,
                        std::vector<double>& solution, moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override;

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, std::vector<double>& solution, const IKCallbackFn& solution_callback,
                        moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override;

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, const std::vector<double>& consistency_limits,
                        std::vector<double>& solution, const IKCallbackFn& solution_callback,
                        moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override;

  bool getPositionFK(const std::vector<std::string>& link_names, const std::vector<double>& joint_angles,
                     std::vector<geometry_msgs::msg::Pose>& poses) const override;

  const std::vector<std::string>& getJointNames() const override { return joint_names_; }
  const std::vector<std::string>& getLinkNames() const override { return link_names_; }

  bool supportsGroup(const moveit::core::JointModelGroup* jmg, std::string* error_text_out) const override;

  // The redundancy (the Panda's 7th degree of freedom) is resolved by the model's cost, not
  // by discretising chosen joints: only an empty set is accepted.
  using kinematics::KinematicsBase::setRedundantJoints;
  bool setRedundantJoints(const std::vector<unsigned int>& redundant_joint_indices) override;

private:
  using SolvePose = loink_msgs::srv::SolvePose;

  // The one search behind every IK call; `attempts` 1 for getPositionIK (no re-seeding).
  bool search(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed, double timeout,
              const std::vector<double>& consistency_limits, std::vector<double>& solution,
              const IKCallbackFn& solution_callback, moveit_msgs::msg::MoveItErrorCodes& error_code,
              double seed_weight, unsigned attempts) const;
  SolvePose::Request::SharedPtr request(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed,
                                        const std::vector<double>& consistency_limits, double seed_weight,
                                        unsigned attempt, unsigned count, double remaining) const;
  // One answered request before any caller's (resent until `until`); false if none came.
  bool firstRoundTrip(std::chrono::steady_clock::time_point until) const;
  // The group's joints of one answer (names mapped), or empty when it does not list them all.
  std::vector<double> groupJoints(const sensor_msgs::msg::JointState& state) const;
  // Inside the group's limits and at the pose by the RobotModel's transforms.
  bool checked(const std::vector<double>& q, const geometry_msgs::msg::Pose& ik_pose) const;
  Eigen::Isometry3d linkTransform(const std::vector<double>& q, const moveit::core::LinkModel* link) const;

  const moveit::core::JointModelGroup* group_{ nullptr };
  std::vector<std::string> joint_names_, link_names_;
  std::unordered_map<std::string, std::size_t> joint_index_;
  std::string service_;
  bool position_only_{ false };
  double seed_consistency_{ 0.0 }, position_tolerance_{ 1e-5 }, orientation_tolerance_{ 1e-4 };
  int solutions_per_call_{ 8 };

  // Our own node and executor thread: move_group's node is never added to a second executor.
  rclcpp::Node::SharedPtr client_node_;
  std::shared_ptr<rclcpp::executors::SingleThreadedExecutor> executor_;
  std::thread spinner_;
  std::atomic<bool> stopping_{ false };
  rclcpp::Client<SolvePose>::SharedPtr client_;
};
}  // namespace loink_kinematics
