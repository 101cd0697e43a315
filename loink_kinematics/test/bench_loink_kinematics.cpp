// searchPositionIK through the plugin, pose by pose, against a running loink_node; after each
// call the same request straight to ~/solve_pose, so that the node's share can be told apart.
//   bench_loink_kinematics URDF SRDF SERVICE POSES TIMEOUT_S
// POSES: lines "x y z qx qy qz qw" (panda_link8 in panda_link0). Prints one JSON object per
// pose: plugin_ms, code, q (the answer; empty unless SUCCESS), service_ms (the direct round
// trip) and node_ms (the node's own time).
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <moveit/kinematics_base/kinematics_base.hpp>
#include <pluginlib/class_loader.hpp>
#include <rclcpp/rclcpp.hpp>

#include <loink_msgs/srv/solve_pose.hpp>

#include "robot_model_files.hpp"

namespace
{
using Clock = std::chrono::steady_clock;
using SolvePose = loink_msgs::srv::SolvePose;

double ms(Clock::time_point start)
{
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv)
{
  if (argc < 6)
  {
    std::cerr << "usage: bench_loink_kinematics URDF SRDF SERVICE POSES TIMEOUT_S" << std::endl;
    return 2;
  }
  rclcpp::init(argc, argv);
  const std::string service = argv[3];
  const double timeout = std::stod(argv[5]);
  auto model = loink_kinematics::robotModelFromFiles(argv[1], argv[2]);
  if (!model)
    return 1;
  rclcpp::NodeOptions options;
  options.parameter_overrides({ { "robot_description_kinematics.panda_arm.loink_service", service },
                                { "robot_description_kinematics.panda_arm.service_wait", 60.0 } });
  auto node = std::make_shared<rclcpp::Node>("loink_kinematics_bench", options);
  pluginlib::ClassLoader<kinematics::KinematicsBase> loader("moveit_core", "kinematics::KinematicsBase");
  auto solver = loader.createSharedInstance("loink_kinematics/LOInKKinematicsPlugin");
  if (!solver->initialize(node, *model, "panda_arm", "panda_link0", { "panda_link8" }, 0.1))
    return 1;

  // The direct client, on its own executor thread like the plugin's.
  auto direct_node = std::make_shared<rclcpp::Node>("loink_kinematics_bench_direct");
  auto client = direct_node->create_client<SolvePose>(service);
  rclcpp::executors::SingleThreadedExecutor executor;
  executor.add_node(direct_node);
  std::thread spinner([&executor] { executor.spin(); });
  client->wait_for_service(std::chrono::seconds(60));

  std::vector<double> seed;
  for (const auto* joint : model->getJointModelGroup("panda_arm")->getActiveJointModels())
  {
    const auto& bounds = joint->getVariableBounds()[0];
    seed.push_back(0.5 * (bounds.min_position_ + bounds.max_position_));
  }
  std::ifstream poses(argv[4]);
  std::string line;
  for (int i = 0; std::getline(poses, line); ++i)
  {
    std::istringstream values(line);
    geometry_msgs::msg::Pose pose;
    values >> pose.position.x >> pose.position.y >> pose.position.z >> pose.orientation.x >> pose.orientation.y >>
        pose.orientation.z >> pose.orientation.w;
    std::vector<double> solution;
    moveit_msgs::msg::MoveItErrorCodes code;
    auto began = Clock::now();
    solver->searchPositionIK(pose, seed, timeout, solution, code);
    const double plugin_ms = ms(began);

    auto request = std::make_shared<SolvePose::Request>();
    request->pose.header.frame_id = "panda_link0";
    request->pose.pose = pose;
    request->link = "panda_link8";
    request->seed.name = solver->getJointNames();
    request->seed.position = seed;
    request->count = 1;  // as the plugin asks when there is no solution callback
    const double node_deadline = 0.8 * timeout;  // the plugin's NODE_SHARE
    request->timeout.sec = static_cast<int32_t>(node_deadline);
    request->timeout.nanosec = static_cast<uint32_t>((node_deadline - request->timeout.sec) * 1e9);
    began = Clock::now();
    auto future = client->async_send_request(request);
    const bool answered = future.wait_for(std::chrono::duration<double>(timeout + 1.0)) == std::future_status::ready;
    const double service_ms = ms(began);
    const double node_ms = answered ? future.get()->solve_time_ms : -1.0;
    std::ostringstream q;
    q.precision(17);
    for (std::size_t j = 0; code.val == code.SUCCESS && j < solution.size(); ++j)
      q << (j ? ", " : "") << solution[j];
    std::cout << "{\"i\": " << i << ", \"plugin_ms\": " << plugin_ms << ", \"code\": " << code.val
              << ", \"q\": [" << q.str() << "], \"service_ms\": " << service_ms << ", \"node_ms\": " << node_ms
              << "}" << std::endl;
  }
  executor.cancel();
  spinner.join();
  solver.reset();
  rclcpp::shutdown();
  return 0;
}
