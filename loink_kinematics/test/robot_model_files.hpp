// A MoveIt RobotModel from URDF and SRDF files, for the test and the bench.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <moveit/robot_model/robot_model.hpp>
#include <srdfdom/model.h>
#include <urdf_parser/urdf_parser.h>

namespace loink_kinematics
{
inline std::string readFile(const std::string& path)
{
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// nullptr when either file does not parse.
inline moveit::core::RobotModelPtr robotModelFromFiles(const std::string& urdf_path, const std::string& srdf_path)
{
  auto urdf = urdf::parseURDF(readFile(urdf_path));
  auto srdf = std::make_shared<srdf::Model>();
  if (!urdf || !srdf->initString(*urdf, readFile(srdf_path)))
    return nullptr;
  return std::make_shared<moveit::core::RobotModel>(urdf, srdf);
}
}  // namespace loink_kinematics
