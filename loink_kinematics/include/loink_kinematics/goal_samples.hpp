// Which turn a goal-sampling call is: OMPL's IK constraint sampler asks the same pose goal
// again and again with random seeds, and wants different goals, where a single caller wants
// the optimum.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include <Eigen/Geometry>

namespace loink_kinematics
{
class GoalSamples
{
public:
  // Poses within these of a remembered one are the same goal (a sampler's draws inside a
  // goal's tolerance region); a goal not asked for this long is forgotten.
  static constexpr double POSITION_M = 0.005, ROTATION_RAD = 0.05, WINDOW_S = 1.0;
  static constexpr std::size_t REMEMBERED = 16;

  // The turn of this call for `pose`: 0 for a goal not asked within the window; asked again,
  // one more than the last call's turn where the seed differs, the same turn where it does
  // not (the same query: the same answer). Thread-safe.
  unsigned turn(const Eigen::Isometry3d& pose, const std::vector<double>& seed, double now);

private:
  struct Goal
  {
    Eigen::Isometry3d pose;
    std::vector<double> seed;
    unsigned turn;
    double asked;
  };
  std::mutex mutex_;
  std::vector<Goal> goals_;
};
}  // namespace loink_kinematics
