#include "loink_kinematics/service_solver.hpp"

#include <algorithm>
#include <cctype>

#include <loink_msgs/msg/error_code.hpp>

namespace loink_kinematics
{
namespace
{
const rclcpp::Logger LOGGER = rclcpp::get_logger("loink_kinematics");
// The share of the remaining time given to the node as its deadline, and how long past our
// deadline an answer on its way is still waited for.
constexpr double NODE_SHARE = 0.8;
constexpr auto GRACE = std::chrono::milliseconds(20);
// The longest the executor thread waits before it looks at its stop flag again.
constexpr auto SPIN_WAIT = std::chrono::milliseconds(50);
// How often a first round trip's request is resent, and the node's deadline for it: an answer
// of any kind will do.
constexpr auto RESEND = std::chrono::milliseconds(100);
constexpr double PROBE_DEADLINE = 0.05;

// "<node>_loink_<group>", numbered from the second instance in this process on, so that
// every plugin's node has a name of its own in the graph.
std::string clientNodeName(const std::string& node, const std::string& group)
{
  static std::atomic<unsigned> instances{ 0 };
  std::string name = node + "_loink_" + group;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '_'; }, '_');
  const unsigned n = ++instances;
  return n == 1 ? name : name + "_" + std::to_string(n);
}

double seconds(std::chrono::steady_clock::duration d)
{
  return std::chrono::duration<double>(d).count();
}

// MoveIt's code for a loink_msgs/ErrorCode of a failed SolvePose.
int32_t moveitCode(int32_t loink)
{
  using loink_msgs::msg::ErrorCode;
  using moveit_msgs::msg::MoveItErrorCodes;
  switch (loink)
  {
    case ErrorCode::NO_SOLUTION:
    case ErrorCode::POSE_UNREACHABLE:  // known before any search: answered at once, not retried
      return MoveItErrorCodes::NO_IK_SOLUTION;
    case ErrorCode::INVALID_POSE:
      return MoveItErrorCodes::INVALID_GOAL_CONSTRAINTS;
    case ErrorCode::INVALID_LINK:
      return MoveItErrorCodes::INVALID_LINK_NAME;
    case ErrorCode::INVALID_FRAME:
      return MoveItErrorCodes::FRAME_TRANSFORM_FAILURE;
    case ErrorCode::INVALID_SEED_STATE:
    case ErrorCode::NON_FINITE_INPUT:
      return MoveItErrorCodes::INVALID_ROBOT_STATE;
    case ErrorCode::POSE_NOT_SERVED:
      return MoveItErrorCodes::INVALID_GROUP_NAME;
    default:
      return MoveItErrorCodes::FAILURE;
  }
}
}  // namespace

std::unique_ptr<ServiceSolver> ServiceSolver::create(const rclcpp::Node::SharedPtr& node, const std::string& group,
                                                     const Options& options, double wait,
                                                     const geometry_msgs::msg::Pose& probe_pose,
                                                     const std::vector<double>& probe_seed, std::string& error)
{
  std::unique_ptr<ServiceSolver> self(new ServiceSolver());
  self->options_ = options;
  for (std::size_t i = 0; i < options.joint_names.size(); ++i)
    self->joint_index_[options.joint_names[i]] = i;
  rclcpp::NodeOptions node_options;
  node_options.start_parameter_services(false).start_parameter_event_publisher(false).use_global_arguments(false);
  self->client_node_ =
      std::make_shared<rclcpp::Node>(clientNodeName(node->get_name(), group), node->get_namespace(), node_options);
  try
  {
    self->client_ = self->client_node_->create_client<SolvePose>(options.service);
  }
  catch (const std::exception& e)
  {
    error = "loink_service '" + options.service + "' is no service name: " + e.what();
    return nullptr;
  }
  self->executor_ = std::make_shared<rclcpp::executors::SingleThreadedExecutor>();
  self->executor_->add_node(self->client_node_);
  ServiceSolver* raw = self.get();
  self->spinner_ = std::thread([raw] {
    while (!raw->stopping_ && rclcpp::ok())
      raw->executor_->spin_once(SPIN_WAIT);
  });
  // Discovery takes a moment: wait for the node once here, not inside the first request.
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
  if (!self->client_->wait_for_service(std::chrono::duration<double>(wait)))
    RCLCPP_WARN(LOGGER, "%s is not served yet (waited %.1f s): requests fail with COMMUNICATION_FAILURE "
                "until loink_node runs", options.service.c_str(), wait);
  else if (!self->firstRoundTrip(probe_pose, probe_seed, until))
    RCLCPP_WARN(LOGGER, "%s did not answer a first request within %.1f s", options.service.c_str(), wait);
  return self;
}

ServiceSolver::~ServiceSolver()
{
  // A flag, not cancel() alone: a cancel() that comes before the thread's first wait is lost.
  stopping_ = true;
  if (executor_)
    executor_->cancel();
  if (spinner_.joinable())
    spinner_.join();
}

bool ServiceSolver::firstRoundTrip(const geometry_msgs::msg::Pose& pose, const std::vector<double>& seed,
                                   Clock::time_point until) const
{
  // DDS matches the node's reply path a moment after it sees our request path: a request sent
  // in between goes unanswered. So one round trip before any caller's request, resent until
  // answered.
  while (Clock::now() < until)
  {
    auto future = client_->async_send_request(request(pose, seed, {}, 0.0, 0, 1, PROBE_DEADLINE));
    if (future.wait_until(std::min(until, Clock::now() + RESEND)) == std::future_status::ready)
    {
      unanswered_ = false;
      return true;
    }
    client_->remove_pending_request(future);
  }
  return false;
}

std::vector<std::vector<double>> ServiceSolver::solve(const geometry_msgs::msg::Pose& pose,
                                                      const std::vector<double>& seed, double timeout,
                                                      const std::vector<double>& consistency_limits,
                                                      double seed_weight, unsigned attempts, unsigned count,
                                                      bool all, const Accept& accept,
                                                      moveit_msgs::msg::MoveItErrorCodes& error_code,
                                                      std::vector<double>* closest) const
{
  using moveit_msgs::msg::MoveItErrorCodes;
  std::vector<std::vector<double>> out;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  error_code.val = MoveItErrorCodes::NO_IK_SOLUTION;
  for (unsigned attempt = 0; attempts == 0 || attempt < attempts; ++attempt)
  {
    const auto remaining = deadline - Clock::now();
    if (remaining <= Clock::duration::zero())
      break;
    if (!client_->service_is_ready() && !client_->wait_for_service(remaining))
    {
      RCLCPP_WARN(LOGGER, "%s is not served: is loink_node running?", options_.service.c_str());
      error_code.val = MoveItErrorCodes::COMMUNICATION_FAILURE;
      unanswered_ = true;
      return out;
    }
    // A node that is new (restarted) drops requests until it has matched our reply path.
    if (unanswered_ && !firstRoundTrip(pose, seed, deadline))
    {
      error_code.val = MoveItErrorCodes::TIMED_OUT;
      return out;
    }
    // The node's own deadline comes first, so that its answer arrives before ours.
    auto future = client_->async_send_request(request(pose, seed, consistency_limits, seed_weight, attempt, count,
                                                      NODE_SHARE * seconds(deadline - Clock::now()),
                                                      closest != nullptr));
    if (future.wait_until(deadline + GRACE) != std::future_status::ready)
    {
      client_->remove_pending_request(future);
      unanswered_ = true;
      error_code.val = MoveItErrorCodes::TIMED_OUT;
      return out;
    }
    const SolvePose::Response::SharedPtr response = future.get();
    if (!response->success)
    {
      error_code.val = moveitCode(response->error_code);
      if (error_code.val != MoveItErrorCodes::NO_IK_SOLUTION)
        RCLCPP_WARN(LOGGER, "%s refused the request: %s", options_.service.c_str(), response->message.c_str());
      else if (closest && !response->solutions.empty())
        *closest = groupJoints(response->solutions.front().joint_state);
      return out;
    }
    for (const auto& answer : response->solutions)
    {
      std::vector<double> q = groupJoints(answer.joint_state);
      if (q.empty())
      {
        RCLCPP_ERROR(LOGGER, "%s answers without all of the group's joints: it serves another robot",
                     options_.service.c_str());
        error_code.val = MoveItErrorCodes::INVALID_GROUP_NAME;
        return {};
      }
      if (!accept(q))
        continue;  // rejected: the next ranked answer
      out.push_back(std::move(q));
      if (!all)
        break;
    }
    if (!out.empty())
    {
      error_code.val = MoveItErrorCodes::SUCCESS;
      return out;
    }
    error_code.val = MoveItErrorCodes::NO_IK_SOLUTION;
  }
  return out;
}

ServiceSolver::SolvePose::Request::SharedPtr
ServiceSolver::request(const geometry_msgs::msg::Pose& pose, const std::vector<double>& seed,
                       const std::vector<double>& consistency_limits, double seed_weight, unsigned attempt,
                       unsigned count, double remaining, bool approximate) const
{
  auto req = std::make_shared<SolvePose::Request>();
  req->pose.header.frame_id = options_.base_frame;
  req->pose.pose = pose;
  req->link = options_.tip_frame;
  req->position_only = options_.position_only;
  req->seed.name = options_.joint_names;
  req->seed.position = seed;
  req->seed_weight = seed_weight;
  req->approximate = approximate;
  if (!consistency_limits.empty())
    for (std::size_t i = 0; i < seed.size(); ++i)
    {
      req->joint_lower.push_back(seed[i] - consistency_limits[i]);
      req->joint_upper.push_back(seed[i] + consistency_limits[i]);
    }
  req->avoid_collisions = false;  // MoveIt checks collisions through the solution callback
  req->count = count;
  req->attempt = attempt;
  const double r = std::max(remaining, 1e-6);
  req->timeout.sec = static_cast<int32_t>(r);
  req->timeout.nanosec = static_cast<uint32_t>((r - static_cast<int32_t>(r)) * 1e9);
  return req;
}

std::vector<double> ServiceSolver::groupJoints(const sensor_msgs::msg::JointState& state) const
{
  std::vector<double> q(options_.joint_names.size());
  std::size_t found = 0;
  for (std::size_t i = 0; i < state.name.size() && i < state.position.size(); ++i)
  {
    auto it = joint_index_.find(state.name[i]);
    if (it != joint_index_.end())
    {
      q[it->second] = state.position[i];
      ++found;
    }
  }
  return found == q.size() ? q : std::vector<double>();
}
}  // namespace loink_kinematics
