// The in-process LOInK solve for one MoveIt group: MoveIt's poses, joint order and bounds
// turned into a loink_pose_ranked request on the model's library, answers turned back.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Geometry>
#include <moveit/robot_model/joint_model_group.hpp>
#include <moveit/robot_model/robot_model.hpp>

#include "loink_kinematics/model_library.hpp"

namespace loink_kinematics
{
// The transform of `link` relative to `base` at the group's joint values q (other joints at
// 0): joint origin, then the joint's own motion, from the link up to `base`.
using LinkTransform = std::function<Eigen::Isometry3d(const std::vector<double>& q, const std::string& link)>;

class InProcessSolver
{
public:
  struct Options
  {
    std::string model, library;     // kinematics.yaml's loink_model and loink_library
    bool position_only{ false };
    double position_tolerance{ 1e-5 }, orientation_tolerance{ 1e-4 };
  };
  // nullptr, with `error` one line, when the model or its library cannot serve the group:
  // missing, stale or corrupt files, joints that differ (both lists named), a tip or base
  // frame not rigid with the model's.
  static std::unique_ptr<InProcessSolver> create(const moveit::core::JointModelGroup& group,
                                                 const std::string& base_frame, const std::string& tip_frame,
                                                 const LinkTransform& transform, const Options& options,
                                                 std::string& error);

  // accept(q in group order): the caller's check of an answer within the tolerances.
  using Accept = std::function<bool(const std::vector<double>&)>;
  struct Outcome
  {
    std::vector<std::vector<double>> answers;   // group order, lowest objective first
    bool continued{ false };                    // a continuation: answers[0] continues from the
                                                // seed, or there is no answer (no retry)
    bool unreachable{ false };                  // beyond the model's reach: answered at once
    // No answer accepted: the last attempt's answer closest to the pose (a continuation's own
    // attempt: nearest the seed on its branch), group order, inside the bounds; else empty.
    std::vector<double> closest;
  };
  // Up to `count` accepted answers for the tip pose (base frame), by `deadline` (a
  // CLOCK_MONOTONIC time in seconds): the ranked answers of one call, then fresh attempts
  // while none is accepted and time is left. `lower`/`upper` bound the joints (group order).
  // With seed_weight 0, a seed beside the pose is continued first, or not answered (loink_pose.h);
  // `approximate` (return_approximate_solution): any seed in the limits is continued, and where
  // that fails, `closest` is the continuation's attempt at once.
  Outcome solve(const Eigen::Isometry3d& pose, const std::vector<double>& seed, double seed_weight,
                const std::vector<double>& lower, const std::vector<double>& upper, double deadline,
                unsigned count, const Accept& accept, bool approximate = false) const;

  const ModelLibrary& library() const { return *library_; }
  // The group's bounds intersected with the model's limits (the group's alone on a joint whose
  // model range is a full turn), group order.
  const std::vector<double>& lower() const { return lower_; }
  const std::vector<double>& upper() const { return upper_; }
  static double monotonicNow();

private:
  InProcessSolver() = default;
  std::unique_ptr<ModelLibrary> library_;
  std::vector<int> to_model_;               // group index of each model joint
  std::vector<double> lower_, upper_;
  Eigen::Isometry3d tip_offset_;            // group tip -> model tip
  Eigen::Isometry3d base_offset_;           // model base -> group base frame
  double position_tolerance_{ 0.0 }, orientation_tolerance_{ 0.0 };
  bool position_only_{ false };
};
}  // namespace loink_kinematics
