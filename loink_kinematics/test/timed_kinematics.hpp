// A kinematics plugin seen from outside: every call forwarded to the plugin it wraps, and
// each IK call of RobotState::setFromIK (the cost-function overload, the one it makes) timed
// with its error code, so a bench can report what the calls that failed cost.
#pragma once

#include <chrono>
#include <utility>
#include <vector>

#include <moveit/kinematics_base/kinematics_base.hpp>

namespace loink_kinematics
{
struct TimedCall
{
  double ms;
  int code;
};

class TimedKinematics : public kinematics::KinematicsBase
{
public:
  explicit TimedKinematics(kinematics::KinematicsBasePtr inner) : inner_(std::move(inner))
  {
  }

  // The calls since the last take, oldest first.
  std::vector<TimedCall> take()
  {
    return std::exchange(calls_, {});
  }

  bool searchPositionIK(const std::vector<geometry_msgs::msg::Pose>& ik_poses, const std::vector<double>& ik_seed_state,
                        double timeout, const std::vector<double>& consistency_limits, std::vector<double>& solution,
                        const IKCallbackFn& solution_callback, const IKCostFn& cost_function,
                        moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options = kinematics::KinematicsQueryOptions(),
                        const moveit::core::RobotState* context_state = nullptr) const override
  {
    const auto began = std::chrono::steady_clock::now();
    const bool found = inner_->searchPositionIK(ik_poses, ik_seed_state, timeout, consistency_limits, solution,
                                                solution_callback, cost_function, error_code, options, context_state);
    calls_.push_back(
        { std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count(), error_code.val });
    return found;
  }

  bool getPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                     std::vector<double>& solution, moveit_msgs::msg::MoveItErrorCodes& error_code,
                     const kinematics::KinematicsQueryOptions& options) const override
  {
    return inner_->getPositionIK(ik_pose, ik_seed_state, solution, error_code, options);
  }

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, std::vector<double>& solution, moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override
  {
    return inner_->searchPositionIK(ik_pose, ik_seed_state, timeout, solution, error_code, options);
  }

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, const std::vector<double>& consistency_limits, std::vector<double>& solution,
                        moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override
  {
    return inner_->searchPositionIK(ik_pose, ik_seed_state, timeout, consistency_limits, solution, error_code, options);
  }

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, std::vector<double>& solution, const IKCallbackFn& solution_callback,
                        moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override
  {
    return inner_->searchPositionIK(ik_pose, ik_seed_state, timeout, solution, solution_callback, error_code, options);
  }

  bool searchPositionIK(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& ik_seed_state,
                        double timeout, const std::vector<double>& consistency_limits, std::vector<double>& solution,
                        const IKCallbackFn& solution_callback, moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options) const override
  {
    return inner_->searchPositionIK(ik_pose, ik_seed_state, timeout, consistency_limits, solution, solution_callback,
                                    error_code, options);
  }

  bool getPositionFK(const std::vector<std::string>& link_names, const std::vector<double>& joint_angles,
                     std::vector<geometry_msgs::msg::Pose>& poses) const override
  {
    return inner_->getPositionFK(link_names, joint_angles, poses);
  }

  const std::string& getGroupName() const override
  {
    return inner_->getGroupName();
  }
  const std::string& getBaseFrame() const override
  {
    return inner_->getBaseFrame();
  }
  const std::string& getTipFrame() const override
  {
    return inner_->getTipFrame();
  }
  const std::vector<std::string>& getTipFrames() const override
  {
    return inner_->getTipFrames();
  }
  const std::vector<std::string>& getJointNames() const override
  {
    return inner_->getJointNames();
  }
  const std::vector<std::string>& getLinkNames() const override
  {
    return inner_->getLinkNames();
  }
  bool supportsGroup(const moveit::core::JointModelGroup* jmg, std::string* error_text_out) const override
  {
    return inner_->supportsGroup(jmg, error_text_out);
  }

private:
  kinematics::KinematicsBasePtr inner_;
  mutable std::vector<TimedCall> calls_;
};
}  // namespace loink_kinematics
