#include "loink_kinematics/loink_kinematics_plugin.hpp"
#include "loink_kinematics/pose_conversion.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include <class_loader/class_loader.hpp>
#include <moveit/robot_model/joint_model_group.hpp>
#include <moveit/robot_model/robot_model.hpp>
#include <moveit/robot_state/robot_state.hpp>

namespace loink_kinematics
{
namespace
{
const rclcpp::Logger LOGGER = rclcpp::get_logger("loink_kinematics");

// A parameter of this group's entry in kinematics.yaml
// (robot_description_kinematics.<group>.<name>), declared with its default when absent. A value
// of another type (an integer is taken for a double) or one that `valid` refuses is named in
// `errors`, and the default is returned.
template <typename T>
T groupParameter(const rclcpp::Node::SharedPtr& node, const std::string& group, const std::string& name,
                 const T& fallback, std::string& errors, const std::function<bool(const T&)>& valid = nullptr)
{
  const std::string full = "robot_description_kinematics." + group + "." + name;
  rclcpp::Parameter parameter;
  T value = fallback;
  try
  {
    if (!node->has_parameter(full))
    {
      rcl_interfaces::msg::ParameterDescriptor any_type;
      any_type.dynamic_typing = true;
      node->declare_parameter(full, rclcpp::ParameterValue(fallback), any_type);
    }
    parameter = node->get_parameter(full);
    if constexpr (std::is_same_v<T, double>)
      value = parameter.get_type() == rclcpp::ParameterType::PARAMETER_INTEGER ?
                  static_cast<double>(parameter.as_int()) :
                  parameter.get_value<double>();
    else
      value = parameter.get_value<T>();
  }
  catch (const std::exception& e)  // a wrong type (declaring it may throw, or reading it)
  {
    errors += " " + full + ": " + e.what() + ";";
    return fallback;
  }
  if (valid && !valid(value))
  {
    errors += " " + full + " = " + parameter.value_to_string() + " is out of range;";
    return fallback;
  }
  return value;
}

// Answers closer than this (rad, largest joint difference) are one answer (pose_solver.DISTINCT).
constexpr double DISTINCT = 0.05;

double maxDifference(const std::vector<double>& a, const std::vector<double>& b)
{
  double largest = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    largest = std::max(largest, std::fabs(a[i] - b[i]));
  return largest;
}

// The L1 distance MoveIt's getNearestIKSolution test measures.
double distance(const std::vector<double>& a, const std::vector<double>& b)
{
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    sum += std::fabs(a[i] - b[i]);
  return sum;
}

}  // namespace

bool LOInKKinematicsPlugin::initialize(const rclcpp::Node::SharedPtr& node, const moveit::core::RobotModel& robot_model,
                                       const std::string& group_name, const std::string& base_frame,
                                       const std::vector<std::string>& tip_frames, double search_discretization)
{
  node_ = node;
  storeValues(robot_model, group_name, base_frame, tip_frames, search_discretization);
  group_ = robot_model.getJointModelGroup(group_name);
  std::string why;
  if (!group_ || !supportsGroup(group_, &why))
  {
    RCLCPP_ERROR(LOGGER, "group '%s': %s", group_name.c_str(), group_ ? why.c_str() : "not in the robot model");
    return false;
  }
  joint_names_ = group_->getActiveJointModelNames();
  for (std::size_t i = 0; i < joint_names_.size(); ++i)
    joint_index_[joint_names_[i]] = i;
  link_names_ = { getTipFrame() };
  const auto positive = [](const double& v) { return v > 0.0; };
  const auto not_negative = [](const double& v) { return v >= 0.0; };
  std::string errors;
  InProcessSolver::Options in_process;
  in_process.model = groupParameter<std::string>(node, group_name, "loink_model", "", errors);
  in_process.library = groupParameter<std::string>(node, group_name, "loink_library", "", errors);
  service_ = groupParameter<std::string>(node, group_name, "loink_service", "", errors);
  position_only_ = groupParameter<bool>(node, group_name, "position_only_ik", false, errors);
  seed_consistency_ = groupParameter<double>(node, group_name, "seed_consistency", 0.0, errors, not_negative);
  position_tolerance_ = groupParameter<double>(node, group_name, "position_tolerance", 1e-5, errors, positive);
  orientation_tolerance_ = groupParameter<double>(node, group_name, "orientation_tolerance", 1e-4, errors, positive);
  solutions_per_call_ = groupParameter<int>(node, group_name, "solutions_per_call", 8, errors,
                                            [](const int& v) { return v >= 1 && v <= 10000; });
  const double wait = groupParameter<double>(node, group_name, "service_wait", 2.0, errors, not_negative);
  if (in_process.model.empty() == service_.empty())
    errors += " set either loink_model (in-process, e.g. panda_full or a model .json) or loink_service (a running "
              "loink_node's ~/solve_pose);";
  if (!errors.empty())
  {
    RCLCPP_ERROR(LOGGER, "group '%s': kinematics.yaml:%s see docs/MOVEIT.md", group_name.c_str(), errors.c_str());
    return false;
  }
  if (!service_.empty())
  {
    ServiceSolver::Options options{ service_, base_frame_, getTipFrame(), joint_names_, position_only_,
                                    solutions_per_call_ };
    std::vector<double> middle;
    for (const moveit::core::JointModel* joint : group_->getActiveJointModels())
    {
      const auto& bounds = joint->getVariableBounds()[0];
      middle.push_back(0.5 * (bounds.min_position_ + bounds.max_position_));
    }
    const auto probe = toMsg(linkTransform(middle, robot_model_->getLinkModel(getTipFrame())));
    std::string why_not;
    service_solver_ = ServiceSolver::create(node, group_name, options, wait, probe, middle, why_not);
    if (!service_solver_)
    {
      RCLCPP_ERROR(LOGGER, "group '%s': %s", group_name.c_str(), why_not.c_str());
      return false;
    }
    RCLCPP_INFO(LOGGER, "group '%s' (%zu joints, tip %s): answers from %s", group_name.c_str(), joint_names_.size(),
                getTipFrame().c_str(), service_.c_str());
    return true;
  }

  in_process.position_only = position_only_;
  in_process.position_tolerance = position_tolerance_;
  in_process.orientation_tolerance = orientation_tolerance_;
  const LinkTransform transform = [this](const std::vector<double>& q, const std::string& link) {
    return linkTransform(q, robot_model_->getLinkModel(link));
  };
  std::string why_not;
  inprocess_ = InProcessSolver::create(*group_, base_frame_, getTipFrame(), transform, in_process, why_not);
  if (!inprocess_)
  {
    RCLCPP_ERROR(LOGGER, "group '%s': %s", group_name.c_str(), why_not.c_str());
    return false;
  }
  RCLCPP_INFO(LOGGER, "group '%s' (%zu joints, tip %s): answers in-process from %s", group_name.c_str(),
              joint_names_.size(), getTipFrame().c_str(), inprocess_->library().path().c_str());
  return true;
}

bool LOInKKinematicsPlugin::supportsGroup(const moveit::core::JointModelGroup* jmg, std::string* error_text_out) const
{
  std::string why;
  if (!jmg->isChain())
    why = "not a chain";
  else if (jmg->getMimicJointModels().size() > 0)
    why = "mimic joints are not supported";
  for (const moveit::core::JointModel* joint : jmg->getActiveJointModels())
    if (why.empty() && joint->getVariableCount() != 1)
      why = "joint '" + joint->getName() + "' has " + std::to_string(joint->getVariableCount()) + " variables";
  if (!why.empty() && error_text_out)
    *error_text_out = why;
  return why.empty();
}

bool LOInKKinematicsPlugin::setRedundantJoints(const std::vector<unsigned int>& redundant_joint_indices)
{
  if (redundant_joint_indices.empty())
    return true;
  RCLCPP_WARN(LOGGER, "group '%s': redundant joints are not discretised; the model's cost chooses among the "
              "solutions", getGroupName().c_str());
  return false;
}

bool LOInKKinematicsPlugin::getPositionIK(const geometry_msgs::msg::Pose& ik_pose,
                                          const std::vector<double>& ik_seed_state, std::vector<double>& solution,
                                          moveit_msgs::msg::MoveItErrorCodes& error_code,
                                          const kinematics::KinematicsQueryOptions& /*options*/) const
{
  // The answer nearest the seed (KinematicsBase's contract). A seed that already solves the
  // pose is that answer itself: the node's weighted search may leave it for another branch.
  if (isSeed(ik_seed_state) && checked(ik_seed_state, ik_pose))
  {
    solution = ik_seed_state;
    error_code.val = moveit_msgs::msg::MoveItErrorCodes::SUCCESS;
    return true;
  }
  if (inprocess_ && validRequest(ik_seed_state, {}, error_code))
  {
    // The nearest of the answers the multiple-solution call gives, so that the two agree.
    const auto answers = nearSeed(ik_pose, ik_seed_state);
    const auto nearest = std::min_element(answers.begin(), answers.end(), [&](const auto& a, const auto& b) {
      return distance(a, ik_seed_state) < distance(b, ik_seed_state);
    });
    if (nearest == answers.end())
    {
      error_code.val = moveit_msgs::msg::MoveItErrorCodes::NO_IK_SOLUTION;
      return false;
    }
    solution = *nearest;
    error_code.val = moveit_msgs::msg::MoveItErrorCodes::SUCCESS;
    return true;
  }
  // Otherwise one request kept near the seed, without re-seeding.
  return search(ik_pose, ik_seed_state, default_timeout_, {}, solution, IKCallbackFn(), error_code, 100.0, 1);
}

std::vector<std::vector<double>> LOInKKinematicsPlugin::nearSeed(const geometry_msgs::msg::Pose& ik_pose,
                                                                 const std::vector<double>& seed) const
{
  const InProcessSolver::Accept accept = [&](const std::vector<double>& q) { return checked(q, ik_pose); };
  const Eigen::Isometry3d pose = toEigen(ik_pose);
  const double deadline = InProcessSolver::monotonicNow() + default_timeout_;
  const auto& lower = inprocess_->lower();
  const auto& upper = inprocess_->upper();
  auto answers = inprocess_->solve(pose, seed, 0.0, lower, upper, deadline, solutions_per_call_, accept).answers;
  // The answer kept near the seed (weight 100, as the service mode asks), unless one of the
  // ranked ones is the same answer.
  for (const auto& q : inprocess_->solve(pose, seed, 100.0, lower, upper, deadline, 1, accept).answers)
    if (std::none_of(answers.begin(), answers.end(), [&](const auto& a) { return maxDifference(a, q) <= DISTINCT; }))
      answers.push_back(q);
  return answers;
}

bool LOInKKinematicsPlugin::searchPositionIK(const geometry_msgs::msg::Pose& ik_pose,
                                             const std::vector<double>& ik_seed_state, double timeout,
                                             std::vector<double>& solution,
                                             moveit_msgs::msg::MoveItErrorCodes& error_code,
                                             const kinematics::KinematicsQueryOptions& options) const
{
  return search(ik_pose, ik_seed_state, timeout, {}, solution, IKCallbackFn(), error_code, seed_consistency_, 0,
                nullptr, options.return_approximate_solution);
}

bool LOInKKinematicsPlugin::searchPositionIK(const geometry_msgs::msg::Pose& ik_pose,
                                             const std::vector<double>& ik_seed_state, double timeout,
                                             const std::vector<double>& consistency_limits,
                                             std::vector<double>& solution,
                                             moveit_msgs::msg::MoveItErrorCodes& error_code,
                                             const kinematics::KinematicsQueryOptions& options) const
{
  return search(ik_pose, ik_seed_state, timeout, consistency_limits, solution, IKCallbackFn(), error_code,
                seed_consistency_, 0, nullptr, options.return_approximate_solution);
}

bool LOInKKinematicsPlugin::searchPositionIK(const geometry_msgs::msg::Pose& ik_pose,
                                             const std::vector<double>& ik_seed_state, double timeout,
                                             std::vector<double>& solution, const IKCallbackFn& solution_callback,
                                             moveit_msgs::msg::MoveItErrorCodes& error_code,
                                             const kinematics::KinematicsQueryOptions& options) const
{
  return search(ik_pose, ik_seed_state, timeout, {}, solution, solution_callback, error_code, seed_consistency_, 0,
                nullptr, options.return_approximate_solution);
}

bool LOInKKinematicsPlugin::searchPositionIK(const geometry_msgs::msg::Pose& ik_pose,
                                             const std::vector<double>& ik_seed_state, double timeout,
                                             const std::vector<double>& consistency_limits,
                                             std::vector<double>& solution, const IKCallbackFn& solution_callback,
                                             moveit_msgs::msg::MoveItErrorCodes& error_code,
                                             const kinematics::KinematicsQueryOptions& options) const
{
  return search(ik_pose, ik_seed_state, timeout, consistency_limits, solution, solution_callback, error_code,
                seed_consistency_, 0, nullptr, options.return_approximate_solution);
}

bool LOInKKinematicsPlugin::search(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed,
                                   double timeout, const std::vector<double>& consistency_limits,
                                   std::vector<double>& solution, const IKCallbackFn& solution_callback,
                                   moveit_msgs::msg::MoveItErrorCodes& error_code, double seed_weight,
                                   unsigned attempts, std::vector<std::vector<double>>* all, bool approximate) const
{
  using moveit_msgs::msg::MoveItErrorCodes;
  if (!validRequest(seed, consistency_limits, error_code))
    return false;
  if (inprocess_)
  {
    // Turns only where the seed plays no part but to be continued (no seed weight, no
    // approximate call: those follow their seed).
    const unsigned turn = seed_weight > 0.0 || approximate ?
                              0 :
                              goal_samples_.turn(toEigen(ik_pose), seed, InProcessSolver::monotonicNow());
    if (turn > 0)
      return searchInTurn(ik_pose, seed, timeout, consistency_limits, solution, solution_callback, error_code, turn);
    return searchInProcess(ik_pose, seed, timeout, consistency_limits, solution, solution_callback, error_code,
                           seed_weight, 1, nullptr, approximate);
  }
  // Ranked alternatives only for a callback that may reject answers, or for all of them.
  const unsigned count = solution_callback || all ? static_cast<unsigned>(std::max(1, solutions_per_call_)) : 1;
  const ServiceSolver::Accept accept = [&](const std::vector<double>& q) {
    return checked(q, ik_pose) && callbackAccepts(solution_callback, ik_pose, q);
  };
  std::vector<double> closest;
  const auto answers = service_solver_->solve(ik_pose, seed, timeout > 0.0 ? timeout : default_timeout_,
                                              consistency_limits, seed_weight, attempts, count, all != nullptr,
                                              accept, error_code, approximate ? &closest : nullptr);
  if (answers.empty())
    return approximately(ik_pose, closest, solution_callback, solution, error_code);
  solution = answers.front();
  if (all)
    *all = answers;
  return true;
}

bool LOInKKinematicsPlugin::validRequest(const std::vector<double>& seed, const std::vector<double>& consistency_limits,
                                         moveit_msgs::msg::MoveItErrorCodes& error_code) const
{
  const std::size_t n = joint_names_.size();
  if (isSeed(seed) &&
      (consistency_limits.empty() ||
       (consistency_limits.size() == n &&
        std::all_of(consistency_limits.begin(), consistency_limits.end(), [](double v) { return v >= 0.0; }))))
    return true;
  RCLCPP_WARN(LOGGER, "group '%s': a seed of %zu finite values and consistency limits (none, or %zu values "
              "of at least 0) are needed", getGroupName().c_str(), n, n);
  error_code.val = moveit_msgs::msg::MoveItErrorCodes::INVALID_ROBOT_STATE;
  return false;
}

bool LOInKKinematicsPlugin::searchInProcess(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed,
                                            double timeout, const std::vector<double>& consistency_limits,
                                            std::vector<double>& solution, const IKCallbackFn& solution_callback,
                                            moveit_msgs::msg::MoveItErrorCodes& error_code, double seed_weight,
                                            unsigned count, InProcessSolver::Outcome* all, bool approximate) const
{
  using moveit_msgs::msg::MoveItErrorCodes;
  const double deadline = InProcessSolver::monotonicNow() + (timeout > 0.0 ? timeout : default_timeout_);
  const auto& p = ik_pose.position;
  const auto& o = ik_pose.orientation;
  const double values[7] = { p.x, p.y, p.z, o.x, o.y, o.z, o.w };
  if (!std::all_of(values, values + 7, [](double v) { return std::isfinite(v); }) ||
      (o.x == 0.0 && o.y == 0.0 && o.z == 0.0 && o.w == 0.0))
  {
    RCLCPP_WARN(LOGGER, "group '%s': the pose has a non-finite value or the zero quaternion",
                getGroupName().c_str());
    error_code.val = MoveItErrorCodes::INVALID_GOAL_CONSTRAINTS;
    return false;
  }
  std::vector<double> lower = inprocess_->lower(), upper = inprocess_->upper();
  for (std::size_t i = 0; i < consistency_limits.size(); ++i)
  {
    lower[i] = std::max(lower[i], seed[i] - consistency_limits[i]);
    upper[i] = std::min(upper[i], seed[i] + consistency_limits[i]);
  }
  const InProcessSolver::Accept accept = [&](const std::vector<double>& q) {
    return checked(q, ik_pose) && callbackAccepts(solution_callback, ik_pose, q);
  };
  InProcessSolver::Outcome outcome =
      inprocess_->solve(toEigen(ik_pose), seed, seed_weight, lower, upper, deadline, count, accept, approximate);
  if (outcome.answers.empty())
  {
    // Certain (beyond reach, no configuration in the bounds): no solution; else out of time.
    const bool certain = outcome.unreachable || InProcessSolver::monotonicNow() < deadline;
    error_code.val = certain ? MoveItErrorCodes::NO_IK_SOLUTION : MoveItErrorCodes::TIMED_OUT;
    return approximate && approximately(ik_pose, outcome.closest, solution_callback, solution, error_code);
  }
  solution = outcome.answers.front();
  error_code.val = MoveItErrorCodes::SUCCESS;
  if (all)
    *all = std::move(outcome);
  return true;
}

bool LOInKKinematicsPlugin::searchInTurn(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed,
                                         double timeout, const std::vector<double>& consistency_limits,
                                         std::vector<double>& solution, const IKCallbackFn& solution_callback,
                                         moveit_msgs::msg::MoveItErrorCodes& error_code, unsigned turn) const
{
  // First the one-answer search: a continuation (a Cartesian step, a rotation in place, whose
  // poses match too) answers and costs as ever; ranking more answers only for a goal sample.
  const double began = InProcessSolver::monotonicNow();
  InProcessSolver::Outcome outcome;
  if (!searchInProcess(ik_pose, seed, timeout, consistency_limits, solution, solution_callback, error_code, 0.0, 1,
                       &outcome))
    return false;
  const double left = (timeout > 0.0 ? timeout : default_timeout_) - (InProcessSolver::monotonicNow() - began);
  if (outcome.continued || left <= 0.0)
    return true;
  // The turn's answer where the ranked search finds it in the time left; else the optimum.
  const unsigned count = std::min(turn + 1, static_cast<unsigned>(std::max(1, solutions_per_call_)));
  std::vector<double> first;
  moveit_msgs::msg::MoveItErrorCodes ranked_code;
  if (searchInProcess(ik_pose, seed, left, consistency_limits, first, solution_callback, ranked_code, 0.0, count,
                      &outcome))
    solution = outcome.answers[turn % outcome.answers.size()];
  return true;
}

bool LOInKKinematicsPlugin::approximately(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& closest,
                                          const IKCallbackFn& solution_callback, std::vector<double>& solution,
                                          moveit_msgs::msg::MoveItErrorCodes& error_code) const
{
  if (closest.empty() || !callbackAccepts(solution_callback, ik_pose, closest))
    return false;
  solution = closest;
  error_code.val = moveit_msgs::msg::MoveItErrorCodes::SUCCESS;
  return true;
}

bool LOInKKinematicsPlugin::callbackAccepts(const IKCallbackFn& solution_callback,
                                            const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& q)
{
  if (!solution_callback)
    return true;
  moveit_msgs::msg::MoveItErrorCodes verdict;
  solution_callback(ik_pose, q, verdict);
  return verdict.val == moveit_msgs::msg::MoveItErrorCodes::SUCCESS;
}

std::vector<std::vector<double>>
LOInKKinematicsPlugin::candidates(const geometry_msgs::msg::Pose& ik_pose, const std::vector<double>& seed,
                                  double timeout, const std::vector<double>& consistency_limits,
                                  const IKCallbackFn& solution_callback, bool& continued,
                                  moveit_msgs::msg::MoveItErrorCodes& error_code) const
{
  std::vector<std::vector<double>> out;
  std::vector<double> first;
  continued = false;
  if (!inprocess_)
  {
    search(ik_pose, seed, timeout, consistency_limits, first, solution_callback, error_code, seed_consistency_, 0,
           &out);
    return out;
  }
  InProcessSolver::Outcome outcome;
  if (!validRequest(seed, consistency_limits, error_code) ||
      !searchInProcess(ik_pose, seed, timeout, consistency_limits, first, solution_callback, error_code,
                       seed_consistency_, static_cast<unsigned>(solutions_per_call_), &outcome))
    return out;
  continued = outcome.continued;
  return std::move(outcome.answers);
}

bool LOInKKinematicsPlugin::searchPositionIK(const std::vector<geometry_msgs::msg::Pose>& ik_poses,
                                             const std::vector<double>& ik_seed_state, double timeout,
                                             const std::vector<double>& consistency_limits,
                                             std::vector<double>& solution, const IKCallbackFn& solution_callback,
                                             const IKCostFn& cost_function,
                                             moveit_msgs::msg::MoveItErrorCodes& error_code,
                                             const kinematics::KinematicsQueryOptions& options,
                                             const moveit::core::RobotState* context_state) const
{
  if (!cost_function || ik_poses.size() != 1)
    return KinematicsBase::searchPositionIK(ik_poses, ik_seed_state, timeout, consistency_limits, solution,
                                            solution_callback, cost_function, error_code, options, context_state);
  bool continued = false;
  const auto found =
      candidates(ik_poses[0], ik_seed_state, timeout, consistency_limits, solution_callback, continued, error_code);
  if (found.empty())
    return false;
  // The caller's cost sees each answer in a state of the context's other joints.
  moveit::core::RobotState state = context_state ? *context_state : moveit::core::RobotState(robot_model_);
  if (!context_state)
    state.setToDefaultValues();
  const double reach = continued ? maxDifference(found.front(), ik_seed_state) : 0.0;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& candidate : found)
  {
    if (continued && maxDifference(candidate, ik_seed_state) > reach)
      continue;  // a jump away from the continuation
    state.setJointGroupPositions(group_, candidate);
    state.update();
    // The caller's cost alone ranks (as pick_ik's and bio_ik's default weights do); the
    // candidates come cheapest first in the model's cost, which so breaks ties.
    const double cost = cost_function(ik_poses[0], state, group_, ik_seed_state);
    if (cost < best)
    {
      best = cost;
      solution = candidate;
    }
  }
  error_code.val = moveit_msgs::msg::MoveItErrorCodes::SUCCESS;
  return true;
}

bool LOInKKinematicsPlugin::getPositionIK(const std::vector<geometry_msgs::msg::Pose>& ik_poses,
                                          const std::vector<double>& ik_seed_state,
                                          std::vector<std::vector<double>>& solutions,
                                          kinematics::KinematicsResult& result,
                                          const kinematics::KinematicsQueryOptions& options) const
{
  if (!inprocess_)
    return KinematicsBase::getPositionIK(ik_poses, ik_seed_state, solutions, result, options);
  result.solution_percentage = 0.0;
  solutions.clear();
  moveit_msgs::msg::MoveItErrorCodes error_code;
  if (options.discretization_method != kinematics::DiscretizationMethods::NO_DISCRETIZATION)
    result.kinematic_error = kinematics::KinematicErrors::UNSUPORTED_DISCRETIZATION_REQUESTED;
  else if (ik_poses.size() != 1)
    result.kinematic_error = ik_poses.empty() ? kinematics::KinematicErrors::EMPTY_TIP_POSES :
                                                kinematics::KinematicErrors::MULTIPLE_TIPS_NOT_SUPPORTED;
  else if (!validRequest(ik_seed_state, {}, error_code))
    result.kinematic_error = kinematics::KinematicErrors::IK_SEED_OUTSIDE_LIMITS;
  else
  {
    // A seed that solves the pose first: it is the nearest answer (getPositionIK's).
    if (checked(ik_seed_state, ik_poses[0]))
      solutions.push_back(ik_seed_state);
    for (const auto& q : nearSeed(ik_poses[0], ik_seed_state))
      if (solutions.empty() || maxDifference(solutions.front(), q) > DISTINCT)
        solutions.push_back(q);
    result.kinematic_error =
        solutions.empty() ? kinematics::KinematicErrors::NO_SOLUTION : kinematics::KinematicErrors::OK;
    result.solution_percentage = solutions.empty() ? 0.0 : 1.0;
  }
  return result.kinematic_error == kinematics::KinematicErrors::OK;
}

bool LOInKKinematicsPlugin::isSeed(const std::vector<double>& q) const
{
  return q.size() == joint_names_.size() && std::all_of(q.begin(), q.end(), [](double v) { return std::isfinite(v); });
}

bool LOInKKinematicsPlugin::checked(const std::vector<double>& q, const geometry_msgs::msg::Pose& ik_pose) const
{
  const auto& joints = group_->getActiveJointModels();
  for (std::size_t i = 0; i < joints.size(); ++i)
    if (!joints[i]->satisfiesPositionBounds(&q[i]))
      return false;
  const Eigen::Isometry3d reached = linkTransform(q, robot_model_->getLinkModel(getTipFrame()));
  const Eigen::Isometry3d wanted = toEigen(ik_pose);
  if (!((reached.translation() - wanted.translation()).norm() <= position_tolerance_))  // NaN in the pose fails too
    return false;
  return position_only_ ||
         Eigen::AngleAxisd(reached.linear().transpose() * wanted.linear()).angle() <= orientation_tolerance_;
}

Eigen::Isometry3d LOInKKinematicsPlugin::linkTransform(const std::vector<double>& q,
                                                       const moveit::core::LinkModel* link) const
{
  // From the link up to the base frame: joint origin, then the joint's own motion.
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  const double zero[1] = { 0.0 };
  for (const moveit::core::LinkModel* l = link; l && l->getName() != base_frame_; l = l->getParentLinkModel())
  {
    const moveit::core::JointModel* joint = l->getParentJointModel();
    auto it = joint_index_.find(joint->getName());
    Eigen::Isometry3d motion;
    joint->computeTransform(it == joint_index_.end() ? zero : &q[it->second], motion);
    t = l->getJointOriginTransform() * motion * t;
  }
  return t;
}

bool LOInKKinematicsPlugin::getPositionFK(const std::vector<std::string>& link_names,
                                          const std::vector<double>& joint_angles,
                                          std::vector<geometry_msgs::msg::Pose>& poses) const
{
  if (joint_angles.size() != joint_names_.size())
    return false;
  poses.clear();
  for (const std::string& name : link_names)
  {
    const moveit::core::LinkModel* link = robot_model_->getLinkModel(name);
    if (!link)
      return false;
    poses.push_back(toMsg(linkTransform(joint_angles, link)));
  }
  return true;
}
}  // namespace loink_kinematics

CLASS_LOADER_REGISTER_CLASS(loink_kinematics::LOInKKinematicsPlugin, kinematics::KinematicsBase)
