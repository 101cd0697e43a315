// The plugin as move_group uses it, against a real loink_node process (a panda_full model).
// test/test_kinematics_plugin.py runs it and sets:
//   LOINK_NODE_COMMAND  an executable script that execs the node (run, stopped and restarted here)
//   LOINK_SOLVE_POSE    the node's ~/solve_pose
//   LOINK_PANDA_URDF, LOINK_PANDA_SRDF
//   LOINK_FK_REFERENCE  lines "q1..q7 x y z qx qy qz qw": panda_link8 by Pinocchio
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include <Eigen/Geometry>
#include <moveit/kinematics_base/kinematics_base.hpp>
#include <pluginlib/class_loader.hpp>
#include <rclcpp/rclcpp.hpp>

#include <loink_msgs/srv/solve_pose.hpp>

#include "loink_kinematics/pose_conversion.hpp"
#include "robot_model_files.hpp"
#include "test_support.hpp"

namespace
{
using moveit_msgs::msg::MoveItErrorCodes;
using loink_kinematics::Clock;
using Pose = geometry_msgs::msg::Pose;
using loink_kinematics::toEigen;
const char* const PLUGIN = "loink_kinematics/LOInKKinematicsPlugin";
const char* const TIP = "panda_link8";
constexpr double POSITION_TOLERANCE = 1e-5, ROTATION_TOLERANCE = 1e-4;

using loink_kinematics::env;
using loink_kinematics::since;

// loink_node as a child process group, so that a test can stop and restart it.
class NodeProcess
{
public:
  void start()
  {
    pid_ = fork();
    if (pid_ == 0)
    {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // the node ends with this test, even a killed one
      // The script itself (it execs the node), so that the death signal stays with the node.
      const std::string script = env("LOINK_NODE_COMMAND");
      execl(script.c_str(), script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  // Signal the group; SIGKILL after 15 s if it has not exited.
  void stop(int signal)
  {
    if (pid_ <= 0)
      return;
    kill(-pid_, signal);
    const auto began = Clock::now();
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0)
    {
      if (since(began) > 15.0)
        kill(-pid_, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }
  ~NodeProcess() { stop(SIGKILL); }

private:
  pid_t pid_{ -1 };
};

struct Reference
{
  std::vector<double> q;
  Pose pose;
};

// What every test shares: the node, MoveIt's RobotModel, a "move_group" node spun by its own
// executor (as in move_group), the loader and one initialized plugin.
struct World
{
  NodeProcess node_process;
  moveit::core::RobotModelPtr model;
  rclcpp::Node::SharedPtr move_group;
  rclcpp::executors::SingleThreadedExecutor executor;
  std::thread spinner;
  std::unique_ptr<pluginlib::ClassLoader<kinematics::KinematicsBase>> loader;
  kinematics::KinematicsBasePtr solver;
  std::vector<Reference> references;
};
World* world = nullptr;

bool waitForNode(double seconds)
{
  auto probe = std::make_shared<rclcpp::Node>("loink_kinematics_test_probe");
  auto client = probe->create_client<loink_msgs::srv::SolvePose>(env("LOINK_SOLVE_POSE"));
  return client->wait_for_service(std::chrono::duration<double>(seconds));
}

kinematics::KinematicsBasePtr initialized(const rclcpp::Node::SharedPtr& node, const std::string& group = "panda_arm")
{
  auto solver = world->loader->createSharedInstance(PLUGIN);
  if (!solver->initialize(node, *world->model, group, "panda_link0", { TIP }, 0.1))
    return nullptr;
  return solver;
}

rclcpp::Node::SharedPtr nodeWith(const std::string& name, const std::vector<rclcpp::Parameter>& extra = {})
{
  std::vector<rclcpp::Parameter> parameters = {
    { "robot_description_kinematics.panda_arm.loink_service", env("LOINK_SOLVE_POSE") },
    { "robot_description_kinematics.panda_arm.service_wait", 30.0 },
  };
  parameters.insert(parameters.end(), extra.begin(), extra.end());
  rclcpp::NodeOptions options;
  options.parameter_overrides(parameters);
  return std::make_shared<rclcpp::Node>(name, options);
}

class Environment : public ::testing::Environment
{
public:
  void SetUp() override
  {
    world = new World;
    world->node_process.start();
    ASSERT_TRUE(waitForNode(120.0)) << env("LOINK_SOLVE_POSE") << " never came up";
    world->model = loink_kinematics::robotModelFromFiles(env("LOINK_PANDA_URDF"), env("LOINK_PANDA_SRDF"));
    ASSERT_TRUE(world->model) << env("LOINK_PANDA_URDF") << ", " << env("LOINK_PANDA_SRDF");
    world->move_group = nodeWith("move_group");
    world->executor.add_node(world->move_group);
    world->spinner = std::thread([] { world->executor.spin(); });
    world->loader = std::make_unique<pluginlib::ClassLoader<kinematics::KinematicsBase>>(
        "moveit_core", "kinematics::KinematicsBase");
    world->solver = initialized(world->move_group);
    ASSERT_TRUE(world->solver);
    std::ifstream in(env("LOINK_FK_REFERENCE"));
    std::string line;
    while (std::getline(in, line))
    {
      std::istringstream values(line);
      Reference r;
      r.q.resize(7);
      for (double& v : r.q)
        values >> v;
      values >> r.pose.position.x >> r.pose.position.y >> r.pose.position.z >> r.pose.orientation.x >>
          r.pose.orientation.y >> r.pose.orientation.z >> r.pose.orientation.w;
      world->references.push_back(r);
    }
    ASSERT_GE(world->references.size(), 20u);
  }
  void TearDown() override
  {
    world->solver.reset();
    world->executor.cancel();
    if (world->spinner.joinable())
      world->spinner.join();
    world->node_process.stop(SIGINT);
    delete world;
  }
};

// Position (m) and rotation (rad) between two poses.
std::pair<double, double> poseError(const Pose& a, const Pose& b)
{
  const Eigen::Isometry3d ta = toEigen(a), tb = toEigen(b);
  return { (ta.translation() - tb.translation()).norm(),
           Eigen::AngleAxisd(ta.linear().transpose() * tb.linear()).angle() };
}

Pose fk(const std::vector<double>& q)
{
  std::vector<Pose> poses;
  EXPECT_TRUE(world->solver->getPositionFK({ TIP }, q, poses));
  return poses.at(0);
}

bool inLimits(const std::vector<double>& q)
{
  const auto& joints = world->model->getJointModelGroup("panda_arm")->getActiveJointModels();
  for (std::size_t i = 0; i < joints.size(); ++i)
    if (!joints[i]->satisfiesPositionBounds(&q[i]))
      return false;
  return true;
}

// The middle of each joint's range: a seed that favours no branch.
std::vector<double> middle()
{
  std::vector<double> q;
  for (const auto* joint : world->model->getJointModelGroup("panda_arm")->getActiveJointModels())
  {
    const auto& bounds = joint->getVariableBounds()[0];
    q.push_back(0.5 * (bounds.min_position_ + bounds.max_position_));
  }
  return q;
}

void expectSolves(const Pose& target, const std::vector<double>& solution)
{
  ASSERT_EQ(solution.size(), world->model->getJointModelGroup("panda_arm")->getVariableCount());
  EXPECT_TRUE(inLimits(solution));
  const auto [dp, dr] = poseError(fk(solution), target);
  EXPECT_LE(dp, POSITION_TOLERANCE);
  EXPECT_LE(dr, ROTATION_TOLERANCE);
}
}  // namespace

TEST(Loading, ByItsDeclaredName)
{
  EXPECT_TRUE(world->loader->isClassAvailable(PLUGIN));
  EXPECT_EQ(world->loader->getClassType(PLUGIN), "loink_kinematics::LOInKKinematicsPlugin");
  EXPECT_NE(world->loader->createSharedInstance(PLUGIN), nullptr);
}

TEST(Plugin, InitializesPandaArm)
{
  const std::vector<std::string> joints = { "panda_joint1", "panda_joint2", "panda_joint3", "panda_joint4",
                                            "panda_joint5", "panda_joint6", "panda_joint7" };
  EXPECT_EQ(world->solver->getJointNames(), joints);
  EXPECT_EQ(world->solver->getLinkNames(), std::vector<std::string>{ TIP });
  EXPECT_EQ(world->solver->getGroupName(), "panda_arm");
  EXPECT_EQ(world->solver->getBaseFrame(), "panda_link0");
  EXPECT_TRUE(world->solver->supportsGroup(world->model->getJointModelGroup("panda_arm"), nullptr));
}

TEST(Plugin, RedundancyIsTheCostsNotDiscretised)
{
  EXPECT_TRUE(world->solver->setRedundantJoints(std::vector<unsigned int>{}));
  EXPECT_FALSE(world->solver->setRedundantJoints(std::vector<unsigned int>{ 2 }));
  EXPECT_FALSE(world->solver->setRedundantJoints(std::vector<std::string>{ "panda_joint3" }));
}

TEST(Plugin, RefusesAGroupThatIsNoChain)
{
  std::string why;
  EXPECT_FALSE(world->solver->supportsGroup(world->model->getJointModelGroup("hand"), &why));
  EXPECT_FALSE(why.empty());
  auto hand = world->loader->createSharedInstance(PLUGIN);
  EXPECT_FALSE(hand->initialize(nodeWith("hand_node"), *world->model, "hand", "panda_hand",
                                { "panda_leftfinger" }, 0.1));
}

TEST(Plugin, BadParametersAreRefusedAndAnIntegerToleranceIsTaken)
{
  const std::string prefix = "robot_description_kinematics.panda_arm.";
  auto with = [&](const std::string& name, const rclcpp::ParameterValue& value) {
    auto solver = world->loader->createSharedInstance(PLUGIN);
    return solver->initialize(nodeWith("parameters_" + std::to_string(std::rand()), { { prefix + name, value } }),
                              *world->model, "panda_arm", "panda_link0", { TIP }, 0.1);
  };
  EXPECT_TRUE(with("position_tolerance", rclcpp::ParameterValue(1)));
  EXPECT_FALSE(with("position_tolerance", rclcpp::ParameterValue(-1e-5)));
  EXPECT_FALSE(with("orientation_tolerance", rclcpp::ParameterValue(std::string("small"))));
  EXPECT_FALSE(with("seed_consistency", rclcpp::ParameterValue(-1.0)));
  EXPECT_FALSE(with("solutions_per_call", rclcpp::ParameterValue(0)));
  EXPECT_FALSE(with("loink_service", rclcpp::ParameterValue(5)));
  EXPECT_FALSE(with("loink_service", rclcpp::ParameterValue(std::string("not a service name!"))));
  EXPECT_FALSE(with("position_only_ik", rclcpp::ParameterValue(std::string("yes"))));
}

TEST(Plugin, ForwardKinematicsAgreesWithPinocchio)
{
  for (const Reference& r : world->references)
  {
    const auto [dp, dr] = poseError(fk(r.q), r.pose);
    EXPECT_LT(dp, 1e-9);
    EXPECT_LT(dr, 1e-7);
  }
  std::vector<Pose> poses;
  EXPECT_TRUE(world->solver->getPositionFK({ "panda_link4", TIP }, world->references[0].q, poses));
  EXPECT_EQ(poses.size(), 2u);
  EXPECT_FALSE(world->solver->getPositionFK({ "no_such_link" }, world->references[0].q, poses));
  EXPECT_FALSE(world->solver->getPositionFK({ TIP }, { 0.0, 0.0 }, poses));
}

TEST(Plugin, ReachablePosesSucceedInsideTheLimits)
{
  for (const Reference& r : world->references)
  {
    std::vector<double> solution;
    MoveItErrorCodes code;
    EXPECT_TRUE(world->solver->searchPositionIK(r.pose, middle(), 0.5, solution, code));
    ASSERT_EQ(code.val, MoveItErrorCodes::SUCCESS);
    expectSolves(r.pose, solution);
  }
}

TEST(Plugin, GetPositionIKAnswersNearTheSeed)
{
  for (const Reference& r : world->references)
  {
    std::vector<double> seed = r.q, solution;
    for (double& v : seed)
      v += 0.01;
    MoveItErrorCodes code;
    ASSERT_TRUE(world->solver->getPositionIK(r.pose, seed, solution, code)) << code.val;
    expectSolves(r.pose, solution);
    for (std::size_t i = 0; i < seed.size(); ++i)
      EXPECT_NEAR(solution[i], r.q[i], 0.1);
  }
}

// The nearest answer to a seed that solves the pose is the seed, bit for bit.
TEST(Plugin, GetPositionIKGivesBackASeedThatSolvesThePose)
{
  for (const Reference& r : world->references)
  {
    std::vector<double> solution;
    MoveItErrorCodes code;
    ASSERT_TRUE(world->solver->getPositionIK(r.pose, r.q, solution, code)) << code.val;
    EXPECT_EQ(solution, r.q);
  }
}

TEST(Plugin, ConsistencyLimitsBoundTheAnswer)
{
  const std::vector<double> limits(7, 0.3);
  for (const Reference& r : world->references)
  {
    std::vector<double> solution;
    MoveItErrorCodes code;
    ASSERT_TRUE(world->solver->searchPositionIK(r.pose, r.q, 0.5, limits, solution, code)) << code.val;
    expectSolves(r.pose, solution);
    for (std::size_t i = 0; i < r.q.size(); ++i)
      EXPECT_LE(std::abs(solution[i] - r.q[i]), 0.3 + 1e-9);
  }
}

// A continuation that fails (consistency limits that hold two joints where the pose needs
// them to move) is NO_IK_SOLUTION long before the timeout; with return_approximate_solution
// (Servo's option), the node's closest answer, its continuation's attempt, is the solution.
TEST(Plugin, AFailedContinuationAnswersAtOnceOrApproximately)
{
  kinematics::KinematicsQueryOptions approximate;
  approximate.return_approximate_solution = true;
  for (std::size_t k = 0; k < 5; ++k)
  {
    const Reference& r = world->references[k];
    Pose moved = fk(r.q);
    moved.position.x += 0.01;
    std::vector<double> limits(7, 0.3), solution;
    limits[1] = limits[3] = 0.0;
    MoveItErrorCodes code;
    const auto began = Clock::now();
    EXPECT_FALSE(world->solver->searchPositionIK(moved, r.q, 1.0, limits, solution, code));
    EXPECT_EQ(code.val, MoveItErrorCodes::NO_IK_SOLUTION);
    EXPECT_LT(since(began), 0.3);   // of a 1 s timeout
    ASSERT_TRUE(world->solver->searchPositionIK(moved, r.q, 0.05, limits, solution, code, approximate)) << code.val;
    ASSERT_EQ(solution.size(), r.q.size());
    EXPECT_TRUE(inLimits(solution));
    EXPECT_EQ(solution[1], r.q[1]);
    EXPECT_EQ(solution[3], r.q[3]);
    for (std::size_t i = 0; i < r.q.size(); ++i)
      EXPECT_LE(std::abs(solution[i] - r.q[i]), 0.3 + 1e-9);
    EXPECT_LT(poseError(fk(solution), moved).first, 0.01);
  }
}

// Servo's call shape through the node (SolvePose's `approximate`): a pose 20 cm from the seed
// gets an answer that moves from the seed, no joint by more than 0.25 rad, nearer the pose.
TEST(Plugin, AnApproximateCallMovesFromItsSeed)
{
  kinematics::KinematicsQueryOptions servo;
  servo.return_approximate_solution = true;
  for (std::size_t k = 0; k < 3; ++k)
  {
    const Reference& r = world->references[k];
    Pose far = fk(r.q);
    far.position.z += 0.2;
    std::vector<double> solution;
    MoveItErrorCodes code;
    ASSERT_TRUE(world->solver->searchPositionIK(far, r.q, 0.05, solution, code, servo)) << code.val;
    ASSERT_EQ(solution.size(), r.q.size());
    EXPECT_TRUE(inLimits(solution));
    for (std::size_t i = 0; i < r.q.size(); ++i)
      EXPECT_LE(std::abs(solution[i] - r.q[i]), 0.25 + 1e-9);
    EXPECT_LT(poseError(fk(solution), far).first, poseError(fk(r.q), far).first);
  }
}

TEST(Plugin, PositionOnlyIKLeavesTheOrientationFree)
{
  auto solver = initialized(nodeWith("position_only_node", { { "robot_description_kinematics.panda_arm."
                                                               "position_only_ik",
                                                               true } }));
  ASSERT_TRUE(solver);
  Pose target = world->references[1].pose;
  target.orientation.x = 1.0;  // any orientation
  target.orientation.y = target.orientation.z = target.orientation.w = 0.0;
  std::vector<double> solution;
  MoveItErrorCodes code;
  ASSERT_TRUE(solver->searchPositionIK(target, middle(), 0.5, solution, code)) << code.val;
  EXPECT_TRUE(inLimits(solution));
  EXPECT_LE(poseError(fk(solution), target).first, POSITION_TOLERANCE);
}

TEST(Plugin, UnreachablePoseGivesNoSolutionWithinTheTimeout)
{
  Pose far = world->references[0].pose;
  far.position.x = 2.0;
  std::vector<double> solution;
  MoveItErrorCodes code;
  const auto began = Clock::now();
  EXPECT_FALSE(world->solver->searchPositionIK(far, middle(), 0.05, solution, code));
  EXPECT_EQ(code.val, MoveItErrorCodes::NO_IK_SOLUTION);
  EXPECT_LT(since(began), 0.05 + 0.06);
}

TEST(Plugin, TheTimeoutIsHonouredForReachablePosesToo)
{
  for (double timeout : { 0.002, 0.005, 0.02 })
  {
    std::vector<double> solution;
    MoveItErrorCodes code;
    const auto began = Clock::now();
    world->solver->searchPositionIK(world->references[2].pose, middle(), timeout, solution, code);
    EXPECT_LT(since(began), timeout + 0.06) << "timeout " << timeout;
    EXPECT_TRUE(code.val == MoveItErrorCodes::SUCCESS || code.val == MoveItErrorCodes::TIMED_OUT ||
                code.val == MoveItErrorCodes::NO_IK_SOLUTION)
        << code.val;
  }
}

TEST(Plugin, BadRequestsGetTheirCodesAndTheNodeKeepsServing)
{
  std::vector<double> solution;
  MoveItErrorCodes code;
  const Pose good = world->references[3].pose;
  EXPECT_FALSE(world->solver->searchPositionIK(good, { 0.0, 0.0 }, 0.1, solution, code));
  EXPECT_EQ(code.val, MoveItErrorCodes::INVALID_ROBOT_STATE);
  EXPECT_FALSE(world->solver->searchPositionIK(good, middle(), 0.1, { 0.1 }, solution, code));
  EXPECT_EQ(code.val, MoveItErrorCodes::INVALID_ROBOT_STATE);
  Pose nan = good;
  nan.position.y = std::nan("");
  EXPECT_FALSE(world->solver->searchPositionIK(nan, middle(), 0.1, solution, code));
  EXPECT_EQ(code.val, MoveItErrorCodes::INVALID_GOAL_CONSTRAINTS);
  Pose zero = good;
  zero.orientation.x = zero.orientation.y = zero.orientation.z = zero.orientation.w = 0.0;
  EXPECT_FALSE(world->solver->searchPositionIK(zero, middle(), 0.1, solution, code));
  EXPECT_EQ(code.val, MoveItErrorCodes::INVALID_GOAL_CONSTRAINTS);
  std::vector<double> nan_seed = middle();
  nan_seed[2] = std::nan("");
  EXPECT_FALSE(world->solver->searchPositionIK(good, nan_seed, 0.1, solution, code));
  EXPECT_EQ(code.val, MoveItErrorCodes::INVALID_ROBOT_STATE);
  EXPECT_TRUE(world->solver->searchPositionIK(good, middle(), 0.5, solution, code));
  expectSolves(good, solution);
}

TEST(Plugin, ARejectedAnswerGivesTheNextRankedOne)
{
  const Pose target = world->references[4].pose;
  std::vector<std::vector<double>> offered;
  auto reject_two = [&offered](const Pose&, const std::vector<double>& q, MoveItErrorCodes& result) {
    offered.push_back(q);
    result.val = offered.size() <= 2 ? MoveItErrorCodes::GOAL_IN_COLLISION : MoveItErrorCodes::SUCCESS;
  };
  std::vector<double> solution;
  MoveItErrorCodes code;
  ASSERT_TRUE(world->solver->searchPositionIK(target, middle(), 0.5, solution, reject_two, code));
  ASSERT_EQ(offered.size(), 3u);
  EXPECT_EQ(solution, offered[2]);
  EXPECT_NE(solution, offered[0]);
  EXPECT_NE(solution, offered[1]);
  for (const auto& q : offered)
    expectSolves(target, q);
}

TEST(Plugin, RejectingEveryAnswerEndsWithinTheTimeout)
{
  std::size_t offered = 0;
  auto reject = [&offered](const Pose&, const std::vector<double>&, MoveItErrorCodes& result) {
    ++offered;
    result.val = MoveItErrorCodes::GOAL_IN_COLLISION;
  };
  std::vector<double> solution;
  MoveItErrorCodes code;
  const auto began = Clock::now();
  EXPECT_FALSE(world->solver->searchPositionIK(world->references[5].pose, middle(), 0.2, solution, reject, code));
  EXPECT_LT(since(began), 0.2 + 0.06);
  EXPECT_NE(code.val, MoveItErrorCodes::SUCCESS);
  EXPECT_GT(offered, 8u);  // more than one request's answers: fresh attempts followed
}

TEST(Plugin, ManyThreadsAtOnceNeverDeadlock)
{
  std::atomic<int> solved{ 0 }, valid{ 0 };
  std::vector<std::thread> threads;
  const auto began = Clock::now();
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = t; i < world->references.size() * 2; i += 4)
      {
        const Reference& r = world->references[i % world->references.size()];
        std::vector<double> solution;
        MoveItErrorCodes code;
        if (!world->solver->searchPositionIK(r.pose, middle(), 2.0, solution, code))
          continue;
        ++solved;
        const auto [dp, dr] = poseError(fk(solution), r.pose);
        valid += inLimits(solution) && dp <= POSITION_TOLERANCE && dr <= ROTATION_TOLERANCE;
      }
    });
  for (auto& thread : threads)
    thread.join();
  const int calls = static_cast<int>(world->references.size() * 2);
  EXPECT_EQ(solved, calls);
  EXPECT_EQ(valid, calls);
  EXPECT_LT(since(began), 30.0);
}

// Last: stops the node.
TEST(StoppedNode, GivesAnErrorCodeWithinTheTimeoutAndRecovers)
{
  const Pose target = world->references[6].pose;
  std::vector<double> solution;
  MoveItErrorCodes code;
  world->node_process.stop(SIGINT);
  auto began = Clock::now();
  EXPECT_FALSE(world->solver->searchPositionIK(target, middle(), 0.2, solution, code));
  EXPECT_LT(since(began), 0.2 + 0.06);
  EXPECT_TRUE(code.val == MoveItErrorCodes::COMMUNICATION_FAILURE || code.val == MoveItErrorCodes::TIMED_OUT)
      << code.val;

  world->node_process.start();
  ASSERT_TRUE(waitForNode(120.0));
  EXPECT_TRUE(world->solver->searchPositionIK(target, middle(), 0.5, solution, code)) << code.val;
  expectSolves(target, solution);

  // Killed: no goodbye, so the service may look served until discovery notices.
  world->node_process.stop(SIGKILL);
  for (int call = 0; call < 3; ++call)
  {
    began = Clock::now();
    EXPECT_FALSE(world->solver->searchPositionIK(target, middle(), 0.2, solution, code));
    EXPECT_LT(since(began), 0.2 + 0.06);
    EXPECT_TRUE(code.val == MoveItErrorCodes::COMMUNICATION_FAILURE || code.val == MoveItErrorCodes::TIMED_OUT)
        << code.val;
  }
}

int main(int argc, char** argv)
{
  rclcpp::init(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (env("LOINK_NODE_COMMAND").empty())
  {
    std::cerr << "LOINK_NODE_COMMAND is not set: run this through test/test_kinematics_plugin.py" << std::endl;
    return 2;
  }
  ::testing::AddGlobalTestEnvironment(new Environment);
  const int result = RUN_ALL_TESTS();
  rclcpp::shutdown();
  return result;
}
