// What the plugin's GoogleTest suites share.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

namespace loink_kinematics
{
using Clock = std::chrono::steady_clock;

// An environment variable of the pytest driver, or "".
inline std::string env(const char* name)
{
  const char* value = std::getenv(name);
  return value ? value : "";
}

inline double since(Clock::time_point start)
{
  return std::chrono::duration<double>(Clock::now() - start).count();
}
}  // namespace loink_kinematics
