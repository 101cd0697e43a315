#include "loink_kinematics/goal_samples.hpp"

#include <algorithm>

namespace loink_kinematics
{
namespace
{
bool sameGoal(const Eigen::Isometry3d& a, const Eigen::Isometry3d& b)
{
  const double angle = Eigen::AngleAxisd(a.linear().transpose() * b.linear()).angle();
  return (a.translation() - b.translation()).norm() <= GoalSamples::POSITION_M &&
         angle <= GoalSamples::ROTATION_RAD;
}
}  // namespace

unsigned GoalSamples::turn(const Eigen::Isometry3d& pose, const std::vector<double>& seed, double now)
{
  const std::lock_guard<std::mutex> lock(mutex_);
  goals_.erase(std::remove_if(goals_.begin(), goals_.end(),
                              [now](const Goal& g) { return now - g.asked > WINDOW_S; }),
               goals_.end());
  const auto goal =
      std::find_if(goals_.begin(), goals_.end(), [&pose](const Goal& g) { return sameGoal(g.pose, pose); });
  if (goal == goals_.end())
  {
    if (goals_.size() == REMEMBERED)
      goals_.erase(std::min_element(goals_.begin(), goals_.end(),
                                    [](const Goal& a, const Goal& b) { return a.asked < b.asked; }));
    goals_.push_back({ pose, seed, 0, now });
    return 0;
  }
  if (goal->seed != seed)
    ++goal->turn;
  goal->seed = seed;
  goal->asked = now;
  return goal->turn;
}
}  // namespace loink_kinematics
