// searchPositionIK through the in-process plugin (kinematics.yaml's loink_model), pose by pose,
// as MoveIt calls it: seed = the joints' middle, the given timeout, no callback.
//   bench_inprocess_kinematics URDF SRDF GROUP BASE TIP MODEL POSES TIMEOUT_S THREADS
// POSES: lines "x y z qx qy qz qw" (TIP in BASE). Prints one JSON object per pose: plugin_ms,
// code and q (empty unless SUCCESS); then, with THREADS > 1, THREADS threads share the
// instance over all poses again: one object per pose (thread_i, code, q), then one with their
// wall time.
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <moveit/kinematics_base/kinematics_base.hpp>
#include <pluginlib/class_loader.hpp>
#include <rclcpp/rclcpp.hpp>

#include "robot_model_files.hpp"

namespace
{
using Clock = std::chrono::steady_clock;

double ms(Clock::time_point start)
{
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<geometry_msgs::msg::Pose> readPoses(const std::string& path)
{
  std::vector<geometry_msgs::msg::Pose> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
  {
    std::istringstream values(line);
    geometry_msgs::msg::Pose pose;
    values >> pose.position.x >> pose.position.y >> pose.position.z >> pose.orientation.x >> pose.orientation.y >>
        pose.orientation.z >> pose.orientation.w;
    out.push_back(pose);
  }
  return out;
}
}  // namespace

int main(int argc, char** argv)
{
  if (argc < 10)
  {
    std::cerr << "usage: bench_inprocess_kinematics URDF SRDF GROUP BASE TIP MODEL POSES TIMEOUT_S THREADS"
              << std::endl;
    return 2;
  }
  rclcpp::init(argc, argv);
  const std::string group = argv[3];
  const double timeout = std::stod(argv[8]);
  const int threads = std::stoi(argv[9]);
  auto model = loink_kinematics::robotModelFromFiles(argv[1], argv[2]);
  if (!model)
    return 1;
  rclcpp::NodeOptions options;
  options.parameter_overrides({ { "robot_description_kinematics." + group + ".loink_model", std::string(argv[6]) } });
  auto node = std::make_shared<rclcpp::Node>("loink_kinematics_bench", options);
  pluginlib::ClassLoader<kinematics::KinematicsBase> loader("moveit_core", "kinematics::KinematicsBase");
  auto solver = loader.createSharedInstance("loink_kinematics/LOInKKinematicsPlugin");
  if (!solver->initialize(node, *model, group, argv[4], { argv[5] }, 0.1))
    return 1;
  std::vector<double> seed;
  for (const auto* joint : model->getJointModelGroup(group)->getActiveJointModels())
  {
    const auto& bounds = joint->getVariableBounds()[0];
    seed.push_back(0.5 * (bounds.min_position_ + bounds.max_position_));
  }
  const auto poses = readPoses(argv[7]);
  for (std::size_t i = 0; i < poses.size(); ++i)
  {
    std::vector<double> solution;
    moveit_msgs::msg::MoveItErrorCodes code;
    const auto began = Clock::now();
    solver->searchPositionIK(poses[i], seed, timeout, solution, code);
    const double plugin_ms = ms(began);
    std::ostringstream q;
    q.precision(17);
    for (std::size_t j = 0; code.val == code.SUCCESS && j < solution.size(); ++j)
      q << (j ? ", " : "") << solution[j];
    std::cout << "{\"i\": " << i << ", \"plugin_ms\": " << plugin_ms << ", \"code\": " << code.val << ", \"q\": ["
              << q.str() << "]}" << std::endl;
  }
  if (threads > 1)
  {
    std::atomic<std::size_t> next{ 0 };
    std::vector<std::vector<double>> answers(poses.size());
    std::vector<int> codes(poses.size());
    std::vector<std::thread> pool;
    const auto began = Clock::now();
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (std::size_t i = next++; i < poses.size(); i = next++)
        {
          moveit_msgs::msg::MoveItErrorCodes code;
          solver->searchPositionIK(poses[i], seed, timeout, answers[i], code);
          codes[i] = code.val;
        }
      });
    for (auto& thread : pool)
      thread.join();
    const double wall = ms(began);
    for (std::size_t i = 0; i < poses.size(); ++i)
    {
      std::ostringstream q;
      q.precision(17);
      for (std::size_t j = 0; codes[i] == 1 && j < answers[i].size(); ++j)
        q << (j ? ", " : "") << answers[i][j];
      std::cout << "{\"thread_i\": " << i << ", \"code\": " << codes[i] << ", \"q\": [" << q.str() << "]}" << std::endl;
    }
    std::cout << "{\"threads\": " << threads << ", \"wall_ms\": " << wall << ", \"calls\": " << poses.size() << "}"
              << std::endl;
  }
  solver.reset();
  rclcpp::shutdown();
  return 0;
}
