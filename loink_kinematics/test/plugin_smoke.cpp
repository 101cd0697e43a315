// Loads the plugin through pluginlib as MoveIt does and asks a running loink_node:
// plugin_smoke <panda.urdf> <panda_arm.srdf> <solve_pose service>; exit 0 when every check holds.
#include <atomic>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <moveit/kinematics_base/kinematics_base.hpp>
#include <moveit/robot_model/robot_model.hpp>
#include <pluginlib/class_loader.hpp>
#include <rclcpp/rclcpp.hpp>
#include <srdfdom/model.h>
#include <urdf_parser/urdf_parser.h>

namespace
{
std::string read(const std::string& path)
{
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int failures = 0;
void check(bool ok, const std::string& what)
{
  std::cout << (ok ? "ok   " : "FAIL ") << what << std::endl;
  failures += ok ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv)
{
  if (argc < 4)
    return 2;
  rclcpp::init(argc, argv);
  auto urdf = urdf::parseURDF(read(argv[1]));
  auto srdf = std::make_shared<srdf::Model>();
  srdf->initString(*urdf, read(argv[2]));
  auto model = std::make_shared<moveit::core::RobotModel>(urdf, srdf);
  rclcpp::NodeOptions options;
  options.parameter_overrides({ { "robot_description_kinematics.panda_arm.loink_service", std::string(argv[3]) },
                                { "robot_description_kinematics.panda_arm.service_wait", 10.0 } });
  auto node = std::make_shared<rclcpp::Node>("plugin_smoke", options);

  pluginlib::ClassLoader<kinematics::KinematicsBase> loader("moveit_core", "kinematics::KinematicsBase");
  auto solver = loader.createSharedInstance("loink_kinematics/LOInKKinematicsPlugin");
  check(solver != nullptr, "loaded by its declared name");
  check(solver->initialize(node, *model, "panda_arm", "panda_link0", { "panda_link8" }, 0.1), "initialize panda_arm");
  check(solver->getJointNames().size() == 7, "7 joints");

  const std::vector<double> reached = { 0.3, -0.2, 0.4, -2.0, 0.1, 1.9, 0.5 };
  std::vector<geometry_msgs::msg::Pose> poses;
  check(solver->getPositionFK({ "panda_link8" }, reached, poses), "getPositionFK");
  std::vector<double> seed(7, 0.0), solution;
  moveit_msgs::msg::MoveItErrorCodes code;
  bool ok = solver->searchPositionIK(poses[0], seed, 0.05, solution, code);
  check(ok && code.val == code.SUCCESS, "searchPositionIK: SUCCESS (code " + std::to_string(code.val) + ")");
  std::vector<geometry_msgs::msg::Pose> back;
  solver->getPositionFK({ "panda_link8" }, solution, back);
  check(ok && std::abs(back[0].position.x - poses[0].position.x) < 1e-5 &&
            std::abs(back[0].position.z - poses[0].position.z) < 1e-5,
        "the answer reaches the pose by the RobotModel");

  int calls = 0;
  auto reject_two = [&calls](const geometry_msgs::msg::Pose&, const std::vector<double>&,
                             moveit_msgs::msg::MoveItErrorCodes& result) {
    result.val = ++calls <= 2 ? result.GOAL_IN_COLLISION : result.SUCCESS;
  };
  ok = solver->searchPositionIK(poses[0], seed, 0.1, solution, reject_two, code);
  check(ok && calls == 3, "a callback rejecting two answers gets the third (" + std::to_string(calls) + " calls)");

  geometry_msgs::msg::Pose far = poses[0];
  far.position.x = 2.0;
  const auto began = std::chrono::steady_clock::now();
  ok = solver->searchPositionIK(far, seed, 0.05, solution, code);
  const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  check(!ok && code.val == code.NO_IK_SOLUTION && spent < 0.5,
        "unreachable: NO_IK_SOLUTION in " + std::to_string(spent) + " s");
  // Several threads at once, as move_group's planners call: every call answers, no deadlock.
  std::atomic<int> solved{ 0 };
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i)
      {
        std::vector<double> q = reached, answer;
        q[0] += 0.05 * t;
        q[3] += 0.03 * i;
        std::vector<geometry_msgs::msg::Pose> target;
        moveit_msgs::msg::MoveItErrorCodes result;
        solver->getPositionFK({ "panda_link8" }, q, target);
        if (solver->searchPositionIK(target[0], seed, 0.2, answer, result))
          ++solved;
      }
    });
  for (auto& thread : threads)
    thread.join();
  const double threads_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check(solved == 40, "4 threads x 10 calls: " + std::to_string(solved.load()) + " solved in " +
                          std::to_string(threads_s) + " s");

  // A node that is not there: an error code within the timeout, no hang.
  rclcpp::NodeOptions absent_options;
  absent_options.parameter_overrides(
      { { "robot_description_kinematics.panda_arm.loink_service", std::string("/nobody/loink_node/solve_pose") },
        { "robot_description_kinematics.panda_arm.service_wait", 0.1 } });
  auto absent_node = std::make_shared<rclcpp::Node>("plugin_smoke_absent", absent_options);
  auto absent = loader.createSharedInstance("loink_kinematics/LOInKKinematicsPlugin");
  absent->initialize(absent_node, *model, "panda_arm", "panda_link0", { "panda_link8" }, 0.1);
  const auto asked = std::chrono::steady_clock::now();
  ok = absent->searchPositionIK(poses[0], seed, 0.05, solution, code);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  check(!ok && code.val == code.COMMUNICATION_FAILURE && waited < 0.5,
        "no node: COMMUNICATION_FAILURE in " + std::to_string(waited) + " s");
  absent.reset();
  solver.reset();
  rclcpp::shutdown();
  return failures == 0 ? 0 : 1;
}
