// A MoveIt kinematics plugin: LOInK's ranked, cost-optimal full-pose IK, solved in-process by
// the model's library (the node's own C solve, `loink moveit-library MODEL`; the default) or,
// when kinematics.yaml names a loink_service instead of a loink_model, answered by a running
// loink_node (~/solve_pose, loink_msgs/srv/SolvePose).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <Eigen/Geometry>
#include <moveit/kinematics_base/kinematics_base.hpp>
#include <moveit/robot_model/joint_model_group.hpp>
#include <moveit/robot_model/link_model.hpp>
#include <rclcpp/rclcpp.hpp>

#include "loink_kinematics/goal_samples.hpp"
#include "loink_kinematics/inprocess_solver.hpp"
#include "loink_kinematics/service_solver.hpp"

namespace loink_kinematics
{
class LOInKKinematicsPlugin : public kinematics::KinematicsBase
{
public:
  LOInKKinematicsPlugin() = default;

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

  // MoveIt's cost-function overload (RobotState::setFromIK's cost_function, also through the
  // Cartesian interpolator): the ranked answers, each checked and accepted by the callback, and
  // the one lowest in cost_function's cost returned (ties: the model's cheaper). Where the request
  // continues from the seed, only answers no farther from the seed than its continuation
  // compete (no jump). Without a cost function: KinematicsBase's (the single-pose overloads).
  using kinematics::KinematicsBase::searchPositionIK;
  bool searchPositionIK(const std::vector<geometry_msgs::msg::Pose>& ik_poses, const std::vector<double>& ik_seed_state,
                        double timeout, const std::vector<double>& consistency_limits,
                        std::vector<double>& solution, const IKCallbackFn& solution_callback,
                        const IKCostFn& cost_function, moveit_msgs::msg::MoveItErrorCodes& error_code,
                        const kinematics::KinematicsQueryOptions& options = kinematics::KinematicsQueryOptions(),
                        const moveit::core::RobotState* context_state = nullptr) const override;

  // LOInK's distinct ranked answers, cheapest first (at most solutions_per_call), in-process;
  // one answer from the node in service mode (KinematicsBase's behaviour).
  using kinematics::KinematicsBase::getPositionIK;
  bool getPositionIK(const std::vector<geometry_msgs::msg::Pose>& ik_poses, const std::vector<double>& ik_seed_state,
                     std::vector<std::vector<double>>& solutions, kinematics::KinematicsResult& result,
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

  // The in-process search behind every IK call: the ranked answers checked by the RobotModel
  // and the callback, fresh starts until the timeout. Answers at once for what is certain
  // (bad input, beyond reach).
  bool searchInProcess(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed, double timeout,
                       const std::vector<double>& consistency_limits, std::vector<double>& solution,
                       const IKCallbackFn& solution_callback, moveit_msgs::msg::MoveItErrorCodes& error_code,
                       double seed_weight, unsigned count = 1, InProcessSolver::Outcome* outcome = nullptr,
                       bool approximate = false) const;
  // A goal asked again with another seed (GoalSamples' turn k > 0): the k-th of the accepted
  // ranked answers, cycling, instead of the first, where found within the timeout (else the
  // first); a continuation stays the continuation, at the cost of any continuation.
  bool searchInTurn(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed, double timeout,
                    const std::vector<double>& consistency_limits, std::vector<double>& solution,
                    const IKCallbackFn& solution_callback, moveit_msgs::msg::MoveItErrorCodes& error_code,
                    unsigned turn) const;
  // return_approximate_solution (KDL's meaning): with no solution, `closest` (the answer
  // closest to the pose; a continuation's: nearest the seed on its branch) as the solution
  // where the callback accepts it, SUCCESS; false when there is none.
  bool approximately(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& closest,
                     const IKCallbackFn& solution_callback, std::vector<double>& solution,
                     moveit_msgs::msg::MoveItErrorCodes& error_code) const;
  // In-process: the ranked answers (cheapest first), then the answer kept near the seed
  // unless it is one of them; each checked by the RobotModel. getPositionIK returns the
  // nearest of them, the multiple-solution getPositionIK all of them.
  std::vector<std::vector<double>> nearSeed(const geometry_msgs::msg::Pose& ik_pose,
                                            const std::vector<double>& seed) const;
  // Every accepted answer of one search, the model's cheapest first (in-process: one ranked
  // call, the continuation first where there is one, `continued` set; service mode: the
  // node's first answered attempt).
  std::vector<std::vector<double>> candidates(const geometry_msgs::msg::Pose& ik_pose,
                                              const std::vector<double>& seed, double timeout,
                                              const std::vector<double>& consistency_limits,
                                              const IKCallbackFn& solution_callback, bool& continued,
                                              moveit_msgs::msg::MoveItErrorCodes& error_code) const;
  // Seed and consistency limits usable, else INVALID_ROBOT_STATE with a warning.
  bool validRequest(const std::vector<double>& seed, const std::vector<double>& consistency_limits,
                    moveit_msgs::msg::MoveItErrorCodes& error_code) const;
  // The one service search behind every IK call; `attempts` 1 for getPositionIK (no re-seeding).
  // `all` (optional) receives every accepted answer of the attempt that gave the solution.
  bool search(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed, double timeout,
              const std::vector<double>& consistency_limits, std::vector<double>& solution,
              const IKCallbackFn& solution_callback, moveit_msgs::msg::MoveItErrorCodes& error_code,
              double seed_weight, unsigned attempts, std::vector<std::vector<double>>* all = nullptr,
              bool approximate = false) const;
  // One finite value per group joint.
  bool isSeed(const std::vector<double>& q) const;
  // MoveIt's solution callback accepts q (SUCCESS), or there is none.
  static bool callbackAccepts(const IKCallbackFn& solution_callback, const geometry_msgs::msg::Pose& ik_pose,
                              const std::vector<double>& q);
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
  std::unique_ptr<InProcessSolver> inprocess_;   // null in service mode
  mutable GoalSamples goal_samples_;             // turns of goals asked again (in-process)

  std::unique_ptr<ServiceSolver> service_solver_;  // null in-process
};
}  // namespace loink_kinematics
