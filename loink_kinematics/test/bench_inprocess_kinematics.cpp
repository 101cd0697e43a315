// searchPositionIK through the in-process plugin (kinematics.yaml's loink_model), pose by pose,
// as MoveIt calls it: seed = the joints' middle, the given timeout.
//   bench_inprocess_kinematics URDF SRDF GROUP BASE TIP MODEL POSES TIMEOUT_S THREADS [CHECKER]
// POSES: lines "x y z qx qy qz qw" (TIP in BASE). Prints one JSON object with the solver's
// joint names, one with the RobotModel's collision meshes (links with one, triangles), then one
// per pose: plugin_ms, code and q (empty unless SUCCESS), no callback. With CHECKER (a command
// to start: it writes "ready", then answers each line of joint values with "1" when they
// collide, else "0"), its round trip timed on 200 queries, then a second serial pass with a
// solution callback that asks it and rejects (NO_IK_SOLUTION, as MoveIt's callbacks do) a
// colliding answer: per pose cb_i, plugin_ms, code, q, callback_calls and callback_ms. Then,
// with THREADS > 1, THREADS threads share the instance over all poses again (no callback): one
// object per pose (thread_i, code, q), then one with their wall time.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <geometric_shapes/shapes.h>
#include <moveit/kinematics_base/kinematics_base.hpp>
#include <pluginlib/class_loader.hpp>
#include <rclcpp/rclcpp.hpp>

#include "robot_model_files.hpp"

namespace
{
using Clock = std::chrono::steady_clock;
constexpr int CHECKER_CALIBRATION_CALLS = 200;

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

// "a, b, c" at full precision, or "" unless the call succeeded.
std::string values(const std::vector<double>& q, bool succeeded)
{
  std::ostringstream out;
  out.precision(17);
  for (std::size_t j = 0; succeeded && j < q.size(); ++j)
    out << (j ? ", " : "") << q[j];
  return out.str();
}

// The collision checker: a child process (sh -c COMMAND) on two pipes, one query at a time.
class Checker
{
public:
  explicit Checker(const std::string& command)
  {
    signal(SIGPIPE, SIG_IGN);  // a checker that died shows as a failed read, not a killed bench
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0)
      throw std::runtime_error("checker: pipe failed");
    pid_ = fork();
    if (pid_ < 0)
      throw std::runtime_error("checker: fork failed");
    if (pid_ == 0)
    {
      dup2(to_child[0], STDIN_FILENO);
      dup2(from_child[1], STDOUT_FILENO);
      for (int fd : { to_child[0], to_child[1], from_child[0], from_child[1] })
        close(fd);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = fdopen(to_child[1], "w");
    from_ = fdopen(from_child[0], "r");
    if (readLine() != "ready")
      throw std::runtime_error("checker: no ready line from " + command);
  }

  ~Checker()
  {
    fclose(to_);  // end of input: the checker exits
    fclose(from_);
    waitpid(pid_, nullptr, 0);
  }

  bool collides(const std::vector<double>& q)
  {
    for (std::size_t j = 0; j < q.size(); ++j)
      std::fprintf(to_, j ? " %.17g" : "%.17g", q[j]);
    std::fputc('\n', to_);
    std::fflush(to_);
    const std::string verdict = readLine();
    if (verdict != "0" && verdict != "1")
      throw std::runtime_error("checker: unexpected answer '" + verdict + "'");
    return verdict == "1";
  }

private:
  std::string readLine()
  {
    char line[64];
    if (!std::fgets(line, sizeof line, from_))
      throw std::runtime_error("checker: it exited");
    std::string out(line);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
      out.pop_back();
    return out;
  }

  pid_t pid_;
  FILE* to_;
  FILE* from_;
};

void printRobotModel(const moveit::core::RobotModel& model, const kinematics::KinematicsBase& solver)
{
  std::cout << "{\"joint_names\": [";
  const auto& names = solver.getJointNames();
  for (std::size_t j = 0; j < names.size(); ++j)
    std::cout << (j ? ", " : "") << '"' << names[j] << '"';
  std::cout << "]}" << std::endl;
  int links = 0;
  std::size_t triangles = 0;
  for (const auto* link : model.getLinkModels())
  {
    bool meshed = false;
    for (const auto& shape : link->getShapes())
      if (shape->type == shapes::MESH)
      {
        meshed = true;
        triangles += static_cast<const shapes::Mesh&>(*shape).triangle_count;
      }
    links += meshed;
  }
  std::cout << "{\"links_with_collision_meshes\": " << links << ", \"mesh_triangles\": " << triangles << "}"
            << std::endl;
}

// The serial pass with a solution callback that rejects colliding answers.
void callbackPass(const kinematics::KinematicsBase& solver, const std::vector<geometry_msgs::msg::Pose>& poses,
                  const std::vector<double>& seed, double timeout, const std::string& command)
{
  Checker checker(command);
  std::ostringstream round_trips;
  for (int k = 0; k < CHECKER_CALIBRATION_CALLS; ++k)
  {
    const auto began = Clock::now();
    checker.collides(seed);
    round_trips << (k ? ", " : "") << ms(began);
  }
  std::cout << "{\"checker_round_trip_ms\": [" << round_trips.str() << "]}" << std::endl;
  for (std::size_t i = 0; i < poses.size(); ++i)
  {
    int calls = 0;
    double callback_ms = 0.0;
    const kinematics::KinematicsBase::IKCallbackFn callback =
        [&](const geometry_msgs::msg::Pose&, const std::vector<double>& q, moveit_msgs::msg::MoveItErrorCodes& code) {
          const auto began = Clock::now();
          ++calls;
          code.val = checker.collides(q) ? code.NO_IK_SOLUTION : code.SUCCESS;
          callback_ms += ms(began);
        };
    std::vector<double> solution;
    moveit_msgs::msg::MoveItErrorCodes code;
    const auto began = Clock::now();
    solver.searchPositionIK(poses[i], seed, timeout, solution, callback, code);
    const double plugin_ms = ms(began);
    std::cout << "{\"cb_i\": " << i << ", \"plugin_ms\": " << plugin_ms << ", \"code\": " << code.val << ", \"q\": ["
              << values(solution, code.val == code.SUCCESS) << "], \"callback_calls\": " << calls
              << ", \"callback_ms\": " << callback_ms << "}" << std::endl;
  }
}

void threadedPass(const kinematics::KinematicsBase& solver, const std::vector<geometry_msgs::msg::Pose>& poses,
                  const std::vector<double>& seed, double timeout, int threads)
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
        solver.searchPositionIK(poses[i], seed, timeout, answers[i], code);
        codes[i] = code.val;
      }
    });
  for (auto& thread : pool)
    thread.join();
  const double wall = ms(began);
  for (std::size_t i = 0; i < poses.size(); ++i)
    std::cout << "{\"thread_i\": " << i << ", \"code\": " << codes[i] << ", \"q\": [" << values(answers[i], codes[i] == 1)
              << "]}" << std::endl;
  std::cout << "{\"threads\": " << threads << ", \"wall_ms\": " << wall << ", \"calls\": " << poses.size() << "}"
            << std::endl;
}
}  // namespace

int main(int argc, char** argv)
{
  if (argc < 10 || argc > 11)
  {
    std::cerr << "usage: bench_inprocess_kinematics URDF SRDF GROUP BASE TIP MODEL POSES TIMEOUT_S THREADS [CHECKER]"
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
  printRobotModel(*model, *solver);
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
    std::cout << "{\"i\": " << i << ", \"plugin_ms\": " << plugin_ms << ", \"code\": " << code.val << ", \"q\": ["
              << values(solution, code.val == code.SUCCESS) << "]}" << std::endl;
  }
  try
  {
    if (argc == 11)
      callbackPass(*solver, poses, seed, timeout, argv[10]);
  }
  catch (const std::runtime_error& error)
  {
    std::cerr << error.what() << std::endl;
    return 1;
  }
  if (threads > 1)
    threadedPass(*solver, poses, seed, timeout, threads);
  solver.reset();
  rclcpp::shutdown();
  return 0;
}
