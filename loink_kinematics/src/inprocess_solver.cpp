#include "loink_kinematics/inprocess_solver.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <moveit/robot_model/joint_model.hpp>
#include <moveit/robot_model/link_model.hpp>
#include <moveit/robot_model/revolute_joint_model.hpp>

namespace loink_kinematics
{
namespace
{
// Two placements closer than this (m and rad) are the same: a frame is rigid with another.
constexpr double RIGID = 1e-9;
// A model range this close to 2 pi is a full turn (`loink robot init` writes +/-3.1415).
constexpr double FULL_TURN_SLACK = 1e-3;

// A revolute joint whose model range is a full turn already holds every posture of it: the
// same poses repeat a turn on, so the group's wider bounds are the arm's, not the model's.
bool fullTurn(const moveit::core::JointModel& joint, double lower, double upper)
{
  const auto* revolute = dynamic_cast<const moveit::core::RevoluteJointModel*>(&joint);
  return revolute && !revolute->isContinuous() && upper - lower >= 2.0 * M_PI - FULL_TURN_SLACK;
}

bool same(const Eigen::Isometry3d& a, const Eigen::Isometry3d& b)
{
  return (a.translation() - b.translation()).norm() <= RIGID &&
         Eigen::AngleAxisd(a.linear().transpose() * b.linear()).angle() <= RIGID;
}

std::string joined(const std::vector<std::string>& names)
{
  std::string out;
  for (const auto& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return "[" + out + "]";
}

// What the C callback needs to hand an answer to the caller's check in group order.
struct AcceptContext
{
  const std::vector<int>* to_model;
  const InProcessSolver::Accept* accept;
  std::vector<double> q;
};

int acceptInGroupOrder(void* context, const double* q_model)
{
  auto* c = static_cast<AcceptContext*>(context);
  for (std::size_t i = 0; i < c->to_model->size(); ++i)
    c->q[(*c->to_model)[i]] = q_model[i];
  return (*c->accept)(c->q) ? 0 : 1;
}
}  // namespace

double InProcessSolver::monotonicNow()
{
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::unique_ptr<InProcessSolver> InProcessSolver::create(const moveit::core::JointModelGroup& group,
                                                         const std::string& base_frame, const std::string& tip_frame,
                                                         const LinkTransform& transform, const Options& options,
                                                         std::string& error)
{
  std::unique_ptr<InProcessSolver> self(new InProcessSolver());
  self->library_ = ModelLibrary::open(options.model, options.library, error);
  if (!self->library_)
    return nullptr;
  const loink_model_data& data = self->library_->data();
  const std::vector<std::string> group_joints = group.getActiveJointModelNames();
  const std::vector<std::string> model_joints = self->library_->jointNames();
  std::unordered_map<std::string, int> index;
  for (std::size_t i = 0; i < group_joints.size(); ++i)
    index[group_joints[i]] = static_cast<int>(i);
  for (const auto& name : model_joints)
    if (index.count(name))
      self->to_model_.push_back(index[name]);
  if (group_joints.size() != model_joints.size() || self->to_model_.size() != model_joints.size())
  {
    error = "model " + options.model + " has joints " + joined(model_joints) + ", group '" + group.getName() +
            "' has " + joined(group_joints);
    return nullptr;
  }
  const moveit::core::RobotModel& robot = group.getParentModel();
  for (const char* frame : { data.base_frame, data.tip_frame })
    if (!robot.hasLinkModel(frame))
    {
      error = std::string("model ") + options.model + "'s frame " + frame + " is not in the robot model";
      return nullptr;
    }
  // The group's bounds and the model's limits, both (answers must satisfy MoveIt's bounds),
  // but on a full-turn joint the group's alone: paths continue across the model's +/- pi.
  const auto& joints = group.getActiveJointModels();
  const std::size_t n = joints.size();
  self->lower_.resize(n);
  self->upper_.resize(n);
  for (std::size_t k = 0; k < n; ++k)
  {
    const int g = self->to_model_[k];
    const auto& bounds = joints[g]->getVariableBounds()[0];
    const bool turn = fullTurn(*joints[g], data.lower[k], data.upper[k]);
    self->lower_[g] = turn ? bounds.min_position_ : std::max(bounds.min_position_, data.lower[k]);
    self->upper_[g] = turn ? bounds.max_position_ : std::min(bounds.max_position_, data.upper[k]);
  }
  // Tip and base offsets, the same at two configurations or the frames are not rigid.
  std::vector<double> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    a[i] = 0.5 * (self->lower_[i] + self->upper_[i]);
    b[i] = self->lower_[i] + 0.3 * (self->upper_[i] - self->lower_[i]);
  }
  const auto tip = [&](const std::vector<double>& q) {
    return transform(q, tip_frame).inverse() * transform(q, data.tip_frame);
  };
  const auto base = [&](const std::vector<double>& q) { return transform(q, data.base_frame); };
  self->tip_offset_ = tip(a);
  self->base_offset_ = base(a);
  if (!same(self->tip_offset_, tip(b)) || !same(self->base_offset_, base(b)))
  {
    error = "group '" + group.getName() + "' (" + base_frame + " -> " + tip_frame + ") is not rigid with model " +
            options.model + "'s " + data.base_frame + " -> " + data.tip_frame;
    return nullptr;
  }
  if (options.position_only && self->tip_offset_.translation().norm() > RIGID)
  {
    error = "position_only_ik: the tip " + tip_frame + " is not at model " + options.model + "'s tip " +
            data.tip_frame + " (the model solves that point's position)";
    return nullptr;
  }
  self->position_only_ = options.position_only;
  self->position_tolerance_ = options.position_tolerance;
  self->orientation_tolerance_ = options.orientation_tolerance;
  return self;
}

InProcessSolver::Outcome InProcessSolver::solve(const Eigen::Isometry3d& pose, const std::vector<double>& seed,
                                                double seed_weight, const std::vector<double>& lower,
                                                const std::vector<double>& upper, double deadline, unsigned count,
                                                const Accept& accept, bool approximate) const
{
  Outcome outcome;
  const Eigen::Isometry3d target = base_offset_.inverse() * pose * tip_offset_;
  if (target.translation().norm() > library_->data().reach + position_tolerance_)
  {
    outcome.unreachable = true;
    return outcome;
  }
  const std::size_t n = to_model_.size();
  double flat[12];
  for (int i = 0; i < 3; ++i)
  {
    flat[i] = target.translation()[i];
    for (int j = 0; j < 3; ++j)
      flat[3 + 3 * i + j] = target.linear()(i, j);
  }
  std::vector<double> lo(n), hi(n), seed_model(n);
  for (std::size_t k = 0; k < n; ++k)
  {
    const int g = to_model_[k];
    lo[k] = std::max(lower[g], lower_[g]);
    hi[k] = std::min(upper[g], upper_[g]);
    seed_model[k] = seed[g];
    if (!(lo[k] <= hi[k]))
      return outcome;   // the bounds hold no configuration
  }
  count = std::max(1u, count);
  loink_pose_request request{ flat, position_only_, static_cast<int>(count), 0, lo.data(), hi.data(),
                              seed_model.data(), seed_weight,
                              position_tolerance_, orientation_tolerance_, deadline, approximate ? 1 : 0 };
  AcceptContext context{ &to_model_, &accept, std::vector<double>(n) };
  std::vector<double> q(count * n), info(count * LOINK_RANKED_FIELDS);
  int tried = 0;
  for (;; ++request.attempt)
  {
    const int found = library_->solve(request, acceptInGroupOrder, &context, q.data(), info.data(), &tried);
    for (int r = 0; r < found; ++r)
    {
      std::vector<double> answer(n);
      for (std::size_t k = 0; k < n; ++k)
        answer[to_model_[k]] = q[r * n + k];
      outcome.answers.push_back(std::move(answer));
    }
    if (found == 0)
    {
      outcome.closest.assign(n, 0.0);
      for (std::size_t k = 0; k < n; ++k)
        outcome.closest[to_model_[k]] = q[k];
    }
    // A continuation's answer, or none: the same at every attempt, so no further one.
    outcome.continued = info[LOINK_RANKED_SOURCE] == LOINK_SOURCE_CONTINUATION;
    if (found != 0 || outcome.continued || monotonicNow() >= deadline)
      return outcome;
  }
}
}  // namespace loink_kinematics
