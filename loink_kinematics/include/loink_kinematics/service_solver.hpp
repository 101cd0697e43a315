// The plugin's service mode (kinematics.yaml's loink_service): each IK call answered by a running
// loink_node's ~/solve_pose (loink_msgs/srv/SolvePose), on a node and executor thread of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <geometry_msgs/msg/pose.hpp>
#include <loink_msgs/srv/solve_pose.hpp>
#include <moveit_msgs/msg/move_it_error_codes.hpp>
#include <rclcpp/rclcpp.hpp>

namespace loink_kinematics
{
class ServiceSolver
{
public:
  struct Options
  {
    std::string service;                   // e.g. /loink/loink_node/solve_pose
    std::string base_frame, tip_frame;     // the group's
    std::vector<std::string> joint_names;  // the group's, in its order
    bool position_only{ false };
    int solutions_per_call{ 8 };
  };
  // accept(q): the caller's check (its forward kinematics, MoveIt's callback).
  using Accept = std::function<bool(const std::vector<double>&)>;

  // nullptr, with `error` one line, when `service` is no service name. Otherwise waits up to
  // `wait` s for the node and one round trip (a request for `probe_pose` from `probe_seed`),
  // warning when there is none: requests fail with COMMUNICATION_FAILURE until it runs.
  static std::unique_ptr<ServiceSolver> create(const rclcpp::Node::SharedPtr& node, const std::string& group,
                                               const Options& options, double wait,
                                               const geometry_msgs::msg::Pose& probe_pose,
                                               const std::vector<double>& probe_seed, std::string& error);
  ~ServiceSolver();
  ServiceSolver(const ServiceSolver&) = delete;
  ServiceSolver& operator=(const ServiceSolver&) = delete;

  // The accepted answers (group order, the node's cheapest first) of the first attempt that
  // has one (`attempts` 0: until `timeout` s), `count` asked of the node each time; only the
  // first unless `all`. Empty, with error_code saying why, when there is none; `closest`
  // (optional: an approximate request, SolvePose's `approximate`) then receives the node's
  // answer closest to the pose where it gave one (NO_SOLUTION).
  std::vector<std::vector<double>> solve(const geometry_msgs::msg::Pose& pose, const std::vector<double>& seed,
                                         double timeout, const std::vector<double>& consistency_limits,
                                         double seed_weight, unsigned attempts, unsigned count, bool all,
                                         const Accept& accept, moveit_msgs::msg::MoveItErrorCodes& error_code,
                                         std::vector<double>* closest = nullptr) const;
  const std::string& service() const { return options_.service; }

private:
  using SolvePose = loink_msgs::srv::SolvePose;
  using Clock = std::chrono::steady_clock;
  ServiceSolver() = default;
  SolvePose::Request::SharedPtr request(const geometry_msgs::msg::Pose& pose, const std::vector<double>& seed,
                                        const std::vector<double>& consistency_limits, double seed_weight,
                                        unsigned attempt, unsigned count, double remaining,
                                        bool approximate = false) const;
  // One answered request before any caller's (resent every RESEND until `until`); false if
  // none came.
  bool firstRoundTrip(const geometry_msgs::msg::Pose& pose, const std::vector<double>& seed,
                      Clock::time_point until) const;
  // The group's joints of one answer (names mapped), or empty when it does not list them all.
  std::vector<double> groupJoints(const sensor_msgs::msg::JointState& state) const;

  Options options_;
  std::unordered_map<std::string, std::size_t> joint_index_;
  // Our own node and executor thread: move_group's node is never added to a second executor.
  rclcpp::Node::SharedPtr client_node_;
  std::shared_ptr<rclcpp::executors::SingleThreadedExecutor> executor_;
  std::thread spinner_;
  std::atomic<bool> stopping_{ false };
  // Set when the node was not served or a request went unanswered: the next call makes a first
  // round trip again (a restarted node).
  mutable std::atomic<bool> unanswered_{ true };
  rclcpp::Client<SolvePose>::SharedPtr client_;
};
}  // namespace loink_kinematics
