// MoveIt's own motions through a kinematics plugin loaded by pluginlib, as move_group runs them:
// CartesianInterpolator::computeCartesianPath (moveit_core's robot_state: what the
// compute_cartesian_path service and MoveGroupInterface::computeCartesianPath run), and a
// Servo-like loop of searchPositionIK seeded with the previous answer.
//   bench_cartesian_kinematics URDF SRDF GROUP TIP PLUGIN CASES [NAME=VALUE ...]
// NAME=VALUE: the group's kinematics.yaml entries (robot_description_kinematics.GROUP.NAME;
// a whole number is an integer, another number a double, true/false a bool, else a string); kinematics_solver_timeout
// is the group's default IK timeout. CASES: one case a line, a start state first (the group's
// joints), then
//   line     q... dx dy dz              the tip moved by (dx, dy, dz) in the model frame
//   rotate   q... ax ay az angle        the tip turned about a unit axis (model frame), in place
//   waypoints q... K x y z qx qy qz qw (K times)   the tip through K poses (model frame)
//   servo    q... K x y z qx qy qz qw (K times)    searchPositionIK at each pose, seeded with the
//                                                 previous answer (the start state first)
// Paths: max step 1 cm (MaxEEFStep(0.01): 0.035 rad), MoveIt's default CartesianPrecision (1 mm,
// 0.01 rad), no validity callback. Prints one JSON object a case: kind, fraction (paths), the
// wall time, and the states (paths: the trajectory's group joints and each IK call's ms and
// code, as the interpolator made them; servo: each answer, and each call's ms and code).
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <moveit/kinematics_base/kinematics_base.hpp>
#include <moveit/robot_state/cartesian_interpolator.hpp>
#include <moveit/robot_state/robot_state.hpp>
#include <pluginlib/class_loader.hpp>
#include <rclcpp/rclcpp.hpp>

#include "loink_kinematics/pose_conversion.hpp"
#include "robot_model_files.hpp"
#include "timed_kinematics.hpp"

namespace
{
using Clock = std::chrono::steady_clock;
using moveit::core::CartesianInterpolator;

double ms(Clock::time_point start)
{
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

rclcpp::Parameter parameter(const std::string& prefix, const std::string& assignment)
{
  const auto equals = assignment.find('=');
  const std::string name = prefix + assignment.substr(0, equals), value = assignment.substr(equals + 1);
  if (value == "true" || value == "false")
    return { name, value == "true" };
  try
  {
    std::size_t used = 0;
    const long long whole = std::stoll(value, &used);
    if (used == value.size())
      return { name, static_cast<int64_t>(whole) };
    const double number = std::stod(value, &used);
    if (used == value.size())
      return { name, number };
  }
  catch (const std::exception&)
  {
  }
  return { name, value };
}

std::string json(const std::vector<double>& values)
{
  std::ostringstream out;
  out.precision(17);
  out << "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    out << (i ? ", " : "") << values[i];
  return out.str() + "]";
}

Eigen::Isometry3d readPose(std::istream& in)
{
  double x, y, z, qx, qy, qz, qw;
  in >> x >> y >> z >> qx >> qy >> qz >> qw;
  Eigen::Isometry3d pose(Eigen::Quaterniond(qw, qx, qy, qz).normalized());
  pose.translation() = Eigen::Vector3d(x, y, z);
  return pose;
}
}  // namespace

int main(int argc, char** argv)
{
  if (argc < 7)
  {
    std::cerr << "usage: bench_cartesian_kinematics URDF SRDF GROUP TIP PLUGIN CASES [NAME=VALUE ...]\n";
    return 2;
  }
  rclcpp::init(1, argv);
  const std::string group_name = argv[3], tip = argv[4], plugin = argv[5];
  const auto model = loink_kinematics::robotModelFromFiles(argv[1], argv[2]);
  if (!model || !model->hasJointModelGroup(group_name))
  {
    std::cerr << "no robot model with group " << group_name << "\n";
    return 2;
  }
  const moveit::core::JointModelGroup* group = model->getJointModelGroup(group_name);
  std::vector<rclcpp::Parameter> parameters;
  double timeout = 0.005;
  const std::string timeout_name = "kinematics_solver_timeout=";
  for (int i = 7; i < argc; ++i)
  {
    parameters.push_back(parameter("robot_description_kinematics." + group_name + ".", argv[i]));
    if (std::string(argv[i]).rfind(timeout_name, 0) == 0)
      timeout = std::stod(std::string(argv[i]).substr(timeout_name.size()));
  }
  rclcpp::NodeOptions options;
  options.parameter_overrides(parameters);
  auto node = std::make_shared<rclcpp::Node>("bench_cartesian_kinematics", options);
  pluginlib::ClassLoader<kinematics::KinematicsBase> loader("moveit_core", "kinematics::KinematicsBase");
  kinematics::KinematicsBasePtr solver = loader.createSharedInstance(plugin);
  const std::string base = group->getJointModels().front()->getParentLinkModel()->getName();
  if (!solver->initialize(node, *model, group_name, base, { tip }, 0.1))
  {
    std::cerr << plugin << " did not initialize\n";
    return 2;
  }
  // What the kinematics plugin loader does for move_group: the group's solver and timeout
  // (the solver timed from outside).
  const auto timed = std::make_shared<loink_kinematics::TimedKinematics>(solver);
  auto* writable = const_cast<moveit::core::JointModelGroup*>(group);
  writable->setSolverAllocators([timed](const moveit::core::JointModelGroup*) { return timed; });
  writable->setDefaultIKTimeout(timeout);
  const moveit::core::LinkModel* link = model->getLinkModel(tip);
  const std::size_t n = group->getVariableCount();

  std::ifstream cases(argv[6]);
  std::string line;
  while (std::getline(cases, line))
  {
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    std::vector<double> q(n);
    for (double& v : q)
      in >> v;
    moveit::core::RobotState start(model);
    start.setToDefaultValues();
    start.setJointGroupPositions(group, q);
    start.update();
    std::vector<moveit::core::RobotStatePtr> path;
    std::ostringstream out;
    const auto began = Clock::now();
    if (kind == "servo")
    {
      std::size_t count;
      in >> count;
      std::vector<double> seed = q, call_ms;
      std::vector<int> codes;
      // moveit_servo's call (jointDeltaFromIK): the current state as the seed, half the
      // publish period as the timeout, and an approximate answer wanted.
      kinematics::KinematicsQueryOptions servo_options;
      servo_options.return_approximate_solution = true;
      out << "{\"kind\": \"servo\", \"states\": [";
      for (std::size_t k = 0; k < count; ++k)
      {
        const geometry_msgs::msg::Pose pose = loink_kinematics::toMsg(readPose(in));
        std::vector<double> answer;
        moveit_msgs::msg::MoveItErrorCodes code;
        const auto call = Clock::now();
        solver->searchPositionIK(pose, seed, timeout, answer, code, servo_options);
        call_ms.push_back(ms(call));
        codes.push_back(code.val);
        if (code.val == moveit_msgs::msg::MoveItErrorCodes::SUCCESS)
          seed = answer;
        out << (k ? ", " : "") << json(seed);
      }
      out << "], \"call_ms\": " << json(call_ms) << ", \"codes\": " << json(std::vector<double>(codes.begin(), codes.end()));
    }
    else
    {
      const moveit::core::MaxEEFStep max_step(0.01);
      const moveit::core::CartesianPrecision precision;
      double fraction = 0.0;
      if (kind == "line")
      {
        Eigen::Vector3d translation;
        in >> translation.x() >> translation.y() >> translation.z();
        const double distance = CartesianInterpolator::computeCartesianPath(&start, group, path, link, translation,
                                                                            true, max_step, precision);
        fraction = distance / translation.norm();
      }
      else if (kind == "rotate")
      {
        Eigen::Vector3d axis;
        double angle;
        in >> axis.x() >> axis.y() >> axis.z() >> angle;
        Eigen::Isometry3d target = start.getGlobalLinkTransform(link);
        target.linear() = Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix() * target.linear();
        fraction = CartesianInterpolator::computeCartesianPath(&start, group, path, link, target, true, max_step,
                                                               precision, moveit::core::GroupStateValidityCallbackFn(),
                                                               kinematics::KinematicsQueryOptions());
      }
      else if (kind == "waypoints")
      {
        std::size_t count;
        in >> count;
        EigenSTL::vector_Isometry3d waypoints;
        for (std::size_t k = 0; k < count; ++k)
          waypoints.push_back(readPose(in));
        fraction = CartesianInterpolator::computeCartesianPath(&start, group, path, link, waypoints, true, max_step,
                                                               precision);
      }
      else
      {
        std::cerr << "unknown case kind " << kind << "\n";
        return 2;
      }
      out << "{\"kind\": \"" << kind << "\", \"fraction\": " << fraction << ", \"states\": [";
      for (std::size_t k = 0; k < path.size(); ++k)
      {
        std::vector<double> values;
        path[k]->copyJointGroupPositions(group, values);
        out << (k ? ", " : "") << json(values);
      }
      std::vector<double> call_ms, codes;
      for (const auto& call : timed->take())
      {
        call_ms.push_back(call.ms);
        codes.push_back(call.code);
      }
      out << "], \"call_ms\": " << json(call_ms) << ", \"codes\": " << json(codes);
    }
    std::cout << out.str() << ", \"ms\": " << ms(began) << "}" << std::endl;
  }
  solver.reset();
  rclcpp::shutdown();
  return 0;
}
