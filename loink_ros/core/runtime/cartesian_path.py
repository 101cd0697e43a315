"""Planning a whole Cartesian path at once: every waypoint's configuration chosen knowing the
path ahead, branch-free, within the velocity limits, low in cost, on target wherever the path
allows.

A tracker that sees one pose at a time picks its posture on the self-motion without knowing
what the path will ask next, and lags when the path then needs a posture it no longer has
(docs/STREAM.md). Here the poses are known in advance, so a beam of configurations is carried
along the path and the best sequence through it is chosen at the end (dynamic programming,
Viterbi on the beam):

1. Layer 0: the start configuration, or (a free start) the ranked answers of the first pose.
2. Each next pose: every configuration of the beam is continued onto it by Gauss-Newton inside
   its box (the velocity limits times the step's time for a timed path; for an untimed one
   continuation.step_reach of the pose's step, capped by the jump thresholds), and so are its
   neighbours along its self-motion (the pose Jacobian's null direction, both ways, up to
   EXPLORE_SHARE of the box): the beam spreads along the self-motion as fast as the velocity
   limits allow. Each answer inside its box is a candidate, linked to the configuration it
   came from; on the pose (pose_solver.EXACT) it is on target, else it lags; with
   avoid_collisions, a self-colliding one is none.
3. A candidate's value is its parent's plus cost(q) + smoothing ||q - q_parent||^2, plus LAG
   (x 1 + its pose error in mm or 10 mrad) when it lags, so that fewer lagging poses always
   come first. An untimed path's values are integrals along it: the cost weighs s and the
   smoothing 1 / s, s the pose's step from the last over PLAN_STEP (rotations at MoveIt's 3.5
   rad per m), so that the same path given in denser poses gets the same plan (summed per
   pose, a denser path would weigh the cost more and its squared steps less, and glide). The
   next layer keeps BEAM candidates (the on-target ones where there are any),
   each more than SEPARATION (largest joint) from the others: the VALUE_SHARE lowest in value,
   the others spread as far apart as they lie (farthest-point sampling: the postures the path
   may need later are not the cheapest now).
4. At the last pose, the lowest value is traced back. The plan reaches the poses up to its
   first lagging one (MoveIt's fraction); a timed plan goes on through the lag, as a stream
   would, and catches up.
5. A timed plan that lags where the arm could still reach is planned again with WIDE_BEAM
   (the beam lost the posture the path needed; a wider one keeps more of the self-motion), and
   the one with more poses on target kept: the usual path pays for BEAM only. An untimed plan
   is not: there the wider beam completed none of the continuity bench's 700 lines and
   rotations that BEAM did not (docs/CARTESIAN.md), and every path that cannot be completed
   would pay it.
6. An untimed plan (the service's) is smoothed with every pose kept exact (path_smoothing.py):
   where the beam hopped along the self-motion, the posture glides instead.

Every edge lies inside its box, so the path never flips branch and never exceeds the
velocity limits at a timed path's timing; every configuration lies inside the limits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.compiled.compiled_kernel import ACCEPT, PLAN_ON_TARGET, PlanQuery, PlanSettings
from loink_ros.core.problems.arms.rotation_chart import rotation_vector
from loink_ros.core.problems.backends import MATH
from loink_ros.core.runtime.continuation import step_reach
from loink_ros.core.runtime.path_smoothing import smooth_path
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import EXACT, PoseRequest, PoseSolver
from loink_ros.core.runtime.self_motion import null_direction

# Configurations kept per pose: VALUE_SHARE of them the lowest in value, the others farthest
# apart; the least largest-joint difference between two of them.
BEAM = 32
WIDE_BEAM = 256
VALUE_SHARE = 2
SEPARATION = 1e-3
# A start lies on the first pose within this (m, rad): MoveIt's start state, read from a
# message, does to rounding.
START_TOLERANCE = 1e-6
# Neighbours along the self-motion, at these shares of the box (both ways).
EXPLORE_SHARES = (0.45, 0.9)
# A lagging pose's added value: it outweighs any cost along a path.
LAG = 1e6
# A pose the plan stops at is searched on its own this long (s), to say why it stopped.
ALONE_TIMEOUT_S = 0.05
# MoveIt's MaxEEFStep(step): rotations are stepped at 3.5 x the translation step (rad per m).
ROTATION_STEP_PER_METRE = 3.5
# The pose step (m) an untimed path's cost and smoothing are weighed at as they are (step 3).
PLAN_STEP = 0.01
SHARE_FLOOR = 1e-6
# A joint this near a limit (rad or m) is at it, in a stop's reason.
AT_LIMIT = 1e-6


# The smoothing an untimed path (GetCartesianPath's) is planned with by default: each step's
# squared joint distance weighs this much beside the model's cost. With 0 the plan glides to the
# model's cheapest posture as fast as each step's box allows (a largest step of 14-16 deg a
# centimetre on random lines and rotations of the Panda, joint paths 2.3-2.5x MoveIt's greedy
# interpolator's); from 100 on, as short as the greedy interpolator's (docs/CARTESIAN.md).
UNTIMED_SMOOTHING = 1000.0
# Each joint's largest step of an untimed path by default (rad; GetCartesianPath's
# revolute_jump_threshold replaces it): under CppFlow's 7 deg, the step the public IK-path
# benchmarks (CppFlow, IKFlow, TORM) call a path invalid at.
UNTIMED_MAX_JOINT_STEP = 0.12


@dataclass
class PathRequest:
    """The poses of a path (dense: each a short step from the last), from `start` (None: free),
    at `times` (s, one per pose; None: untimed). `jump` (n, rad or m; None: none) caps each
    joint's step of an untimed path; `velocity_scale` scales the velocity limits of a timed
    one."""

    poses: list[PoseTarget]
    start: np.ndarray | None = None
    times: np.ndarray | None = None
    jump: np.ndarray | None = None
    velocity_scale: float = 1.0
    smoothing: float = 0.0
    avoid_collisions: bool = False


@dataclass
class PathPlan:
    """q (N, n) and on_target (N,): the chosen configuration of each pose planned (all of a
    timed path; an untimed one up to its first lagging pose); `reached` poses in a row on
    target from the first; `reason` None when they are all of them, else why not; `beam` the
    configurations kept per pose (BEAM, or WIDE_BEAM where BEAM lost the path)."""

    q: np.ndarray
    on_target: np.ndarray
    reached: int
    reason: str | None
    cost: np.ndarray
    beam: int = BEAM

    @property
    def complete(self) -> bool:
        return self.reason is None


@dataclass
class _Layer:
    q: np.ndarray          # (B, n)
    value: np.ndarray      # (B,)
    parent: np.ndarray     # (B,) index in the previous layer, -1 in layer 0
    on_target: np.ndarray  # (B,) bool


def interpolate(start: PoseTarget, waypoints: list[PoseTarget],
                max_step: float) -> tuple[list[PoseTarget], list[int]]:
    """MoveIt's interpolation (CartesianInterpolator): from `start` through each waypoint, the
    position linear and the orientation by slerp, in floor(max(d / max_step, angle /
    (3.5 max_step))) + 1 equal steps a segment. Returns the poses (start first) and, for each
    waypoint, the index of its pose."""
    # scipy.spatial takes ~0.4 s to import: the first path pays it, not every node start.
    from scipy.spatial.transform import Rotation, Slerp
    poses, ends = [start], []
    previous = start
    for waypoint in waypoints:
        distance = float(np.linalg.norm(waypoint.position - previous.position))
        rotations = Rotation.from_matrix(np.stack([previous.rotation, waypoint.rotation]))
        angle = float((rotations[0].inv() * rotations[1]).magnitude())
        steps = int(max(np.floor(distance / max_step),
                        np.floor(angle / (ROTATION_STEP_PER_METRE * max_step)))) + 1
        shares = np.arange(1, steps + 1) / steps
        turned = Slerp([0.0, 1.0], rotations)(shares).as_matrix()
        for share, rotation in zip(shares, turned):
            poses.append(PoseTarget((1 - share) * previous.position + share * waypoint.position,
                                    rotation, waypoint.position_only))
        ends.append(len(poses) - 1)
        previous = waypoint
    return poses, ends


class CartesianPlanner:
    """Plans PathRequests on one PoseSolver's problem (module docstring): in C
    (compiled/path_plan.c) where the solver has the compiled kernel, this module's numpy
    reference otherwise."""

    def __init__(self, pose_solver: PoseSolver, velocity_limits: np.ndarray):
        self.pose_solver, self.problem = pose_solver, pose_solver.problem
        self.velocity_limits = np.asarray(velocity_limits, float)

    def plan(self, request: PathRequest) -> PathPlan:
        plan = self._plan(request, BEAM)
        if request.times is None:
            return self._smoothed(request, plan)
        lost = plan.reached < len(request.poses) and len(plan.q) > 0
        if not lost or self._beyond_reach(request.poses[plan.reached]):
            return plan
        wide = self._plan(request, WIDE_BEAM)
        better = (int(wide.on_target.sum()), wide.reached) > (int(plan.on_target.sum()), plan.reached)
        return wide if better else plan

    def _smoothed(self, request: PathRequest, plan: PathPlan) -> PathPlan:
        """An untimed plan after path_smoothing's pass (step 6)."""
        reached, n = plan.reached, self.problem.dim
        steps = list(zip(request.poses[:reached - 1], request.poses[1:reached]))
        shares = np.array([1.0] + [_step_share(a, b) for a, b in steps])
        boxes = np.array([self._box(a, b) for a, b in steps]).reshape(-1, n)
        if request.jump is not None:
            boxes = np.minimum(boxes, request.jump)
        collides = self.problem.self_collisions if request.avoid_collisions else None
        q = smooth_path(self.pose_solver, request.poses[:reached], plan.q[:reached], shares,
                        request.smoothing, request.start is not None, boxes, collides)
        plan.q = np.vstack([q, plan.q[reached:]])
        plan.cost = self.problem.cost(plan.q) if len(plan.q) else plan.cost
        return plan

    def _plan(self, request: PathRequest, beam: int) -> PathPlan:
        first = self._first_layer(request, beam)
        if not len(first.q):
            return self._empty('the start does not lie on the first pose'
                               if request.start is not None else
                               'no configuration reaches the first pose')
        if self.pose_solver.kernel is not None:
            q, on_target = self._plan_compiled(request, first, beam)
        else:
            q, on_target = self._plan_numpy(request, first, beam)
        lagging = np.flatnonzero(~on_target)
        reached = int(lagging[0]) if len(lagging) else len(q)
        reason = (None if reached == len(request.poses) else
                  self._why(request, reached, q[reached - 1] if reached else None))
        return PathPlan(q, on_target, reached, reason, self.problem.cost(q), beam)

    def _plan_compiled(self, request: PathRequest, first: _Layer,
                       beam: int) -> tuple[np.ndarray, np.ndarray]:
        n, solver = self.problem.dim, self.pose_solver
        poses = np.ascontiguousarray([np.concatenate([t.position, t.rotation.ravel()])
                                      for t in request.poses])
        arrays = [np.ascontiguousarray(a, float) for a in (
            EXPLORE_SHARES, request.times if request.times is not None else np.zeros(0),
            request.velocity_scale * self.velocity_limits,
            request.jump if request.jump is not None else np.zeros(0),
            self.problem.lower, self.problem.upper, first.q, first.value)]
        shares, times, velocity, jump, lower, upper, q0, value0 = arrays
        how = PlanSettings(beam, VALUE_SHARE, SEPARATION, len(EXPLORE_SHARES), shares.ctypes.data,
                           LAG, request.smoothing, EXACT[0], EXACT[1])
        query = PlanQuery(len(poses), poses.ctypes.data, int(request.poses[0].position_only),
                          times.ctypes.data if request.times is not None else None,
                          velocity.ctypes.data,
                          jump.ctypes.data if request.jump is not None else None,
                          lower.ctypes.data, upper.ctypes.data, len(q0), q0.ctypes.data,
                          value0.ctypes.data)
        errors = []

        def accept(_context, q_pointer) -> int:
            try:
                q = np.ctypeslib.as_array(q_pointer, shape=(n,))
                return 1 if self.problem.self_collisions(q) else 0
            except Exception as err:  # noqa: BLE001 - raised below, not lost in C
                errors.append(err)
                return 1

        q, info = solver.kernel.plan_path(solver._settings, how, query,
                                          ACCEPT(accept) if request.avoid_collisions else ACCEPT())
        if errors:
            raise errors[0]
        return q, info[:, PLAN_ON_TARGET] != 0.0

    def _plan_numpy(self, request: PathRequest, first: _Layer,
                    beam: int) -> tuple[np.ndarray, np.ndarray]:
        """The reference of loink_plan_path: the same candidates, values and choice."""
        layers = [first]
        for k in range(1, len(request.poses)):
            layer = self._next_layer(request, k, layers[-1], beam)
            if not len(layer.q) or (request.times is None and not layer.on_target.any()):
                break
            layers.append(layer)
        index = int(np.argmin(layers[-1].value))
        path, on_target = [], []
        for layer in reversed(layers):
            path.append(layer.q[index])
            on_target.append(layer.on_target[index])
            index = layer.parent[index]
        return np.array(path[::-1]), np.array(on_target[::-1])

    def _first_layer(self, request: PathRequest, beam: int) -> _Layer:
        """Pose 0: the start (where it lies on the pose), or the ranked answers of a free start."""
        target, n = request.poses[0], self.problem.dim
        if request.start is not None:
            q = np.clip(np.asarray(request.start, float), self.problem.lower, self.problem.upper)
            error = pose_error(self.problem, q, target)
            on_pose = np.linalg.norm(error[:3]) <= START_TOLERANCE and np.linalg.norm(error[3:]) <= START_TOLERANCE
            q = q[None] if on_pose else np.empty((0, n))
        else:
            answers = self.pose_solver.solve_ranked(
                PoseRequest(target, avoid_collisions=request.avoid_collisions), beam)
            q = np.array([a.q for a in answers if a.success]).reshape(-1, n)
        cost = self.problem.cost(q) if len(q) else np.empty(0)
        return _Layer(q, cost, np.full(len(q), -1), np.ones(len(q), bool))

    def _box(self, before: PoseTarget, after: PoseTarget) -> np.ndarray:
        """The continuation's box of an untimed step between two poses (as _reach's from a
        configuration on `before`)."""
        return np.full(self.problem.dim, step_reach(*_pose_step(before, after)))

    def _reach(self, request: PathRequest, k: int, q: np.ndarray) -> np.ndarray:
        """Each joint's box half-width from configuration q (on pose k - 1) to pose k."""
        if request.times is not None:
            dt = float(request.times[k] - request.times[k - 1])
            return request.velocity_scale * self.velocity_limits * dt
        error = pose_error(self.problem, q, request.poses[k])
        reach = np.full(self.problem.dim, step_reach(float(np.linalg.norm(error[:3])),
                                                     float(np.linalg.norm(error[3:]))))
        return reach if request.jump is None else np.minimum(reach, request.jump)

    def _next_layer(self, request: PathRequest, k: int, previous: _Layer, beam: int) -> _Layer:
        target, n = request.poses[k], self.problem.dim
        along = 1.0 if request.times is not None else _step_share(request.poses[k - 1], target)
        candidates, values, parents, errors = [], [], [], []
        for p, q in enumerate(previous.q):
            reach = self._reach(request, k, q)
            lower = np.maximum(self.problem.lower, q - reach)
            upper = np.minimum(self.problem.upper, q + reach)
            rows = self.pose_solver.refine(self._starts(q, reach, target), target, lower, upper,
                                           None, 0.0, 0)
            for row in rows:
                q_new = row[:n]
                if request.avoid_collisions and self.problem.self_collisions(q_new):
                    continue
                candidates.append(q_new)
                values.append(previous.value[p] + request.smoothing * float((q_new - q) @ (q_new - q)) / along)
                parents.append(p)
                errors.append(row[n:n + 2])
        if not candidates:
            return _Layer(np.empty((0, n)), np.empty(0), np.empty(0, int), np.empty(0, bool))
        candidates, errors = np.array(candidates), np.array(errors)
        on_target = (errors[:, 0] <= EXACT[0]) & (errors[:, 1] <= EXACT[1])
        lag = LAG * (1.0 + 1e3 * errors[:, 0] + 1e2 * errors[:, 1])
        values = np.array(values) + along * self.problem.cost(candidates) + np.where(on_target, 0.0, lag)
        pool = np.flatnonzero(on_target) if on_target.any() else np.arange(len(candidates))
        keep = pool[_diverse(candidates[pool], values[pool], beam)]
        return _Layer(candidates[keep], values[keep], np.array(parents)[keep], on_target[keep])

    def _starts(self, q: np.ndarray, reach: np.ndarray, target: PoseTarget) -> np.ndarray:
        """q and its neighbours along the self-motion, EXPLORE_SHARES of the box away."""
        null = null_direction(self.problem, q, target.rows)
        step = float(np.min(reach / np.maximum(np.abs(null), 1e-12)))
        shares = [0.0] + [sign * share for share in EXPLORE_SHARES for sign in (1.0, -1.0)]
        return q + np.outer(np.array(shares) * step, null)

    def _beyond_reach(self, target: PoseTarget) -> bool:
        return float(np.linalg.norm(target.position)) > self.problem.tip_reach

    def _why(self, request: PathRequest, k: int, last: np.ndarray | None = None) -> str:
        """Why pose k is not reached: beyond the certified reach; no configuration reaches it
        at all (a goal search of ALONE_TIMEOUT_S); or reachable alone, but not from pose
        k - 1 in time or without a jump (a reconfiguration, or a posture the search lost)."""
        pose = request.poses[k]
        if self._beyond_reach(pose):
            return f'pose {k} lies beyond the arm\'s reach'
        alone = self.pose_solver.solve(PoseRequest(pose, avoid_collisions=request.avoid_collisions,
                                                   deadline=time.monotonic() + ALONE_TIMEOUT_S))
        if not alone.success:
            return (f'pose {k} is unreachable: no configuration reaches it, even on its own '
                    f'({ALONE_TIMEOUT_S:g} s search; the best: {alone.reason})')
        step = ('within the velocity limits' if request.times is not None else 'without a jump'
                if request.jump is None else
                f'with no joint stepping more than {float(np.min(request.jump)):.3g} rad')
        return (f'pose {k} is reachable on its own, but no configuration reaches it {step} '
                f'from pose {k - 1}{self._at_limits(last)}: the path needs a reconfiguration '
                'there, or a posture the search did not keep')

    def _at_limits(self, q: np.ndarray | None) -> str:
        """' (joint at its upper limit, ...)' for the joints of q at a limit, or ''."""
        if q is None:
            return ''
        names = [f'{name} at its {"lower" if v - lo <= AT_LIMIT else "upper"} limit'
                 for name, v, lo, hi in zip(self.problem.joint_names, q, self.problem.lower, self.problem.upper)
                 if v - lo <= AT_LIMIT or hi - v <= AT_LIMIT]
        return f' ({", ".join(names)})' if names else ''

    def _empty(self, reason: str) -> PathPlan:
        n = self.problem.dim
        return PathPlan(np.empty((0, n)), np.empty(0, bool), 0, reason, np.empty(0))


def _step_share(before: PoseTarget, after: PoseTarget) -> float:
    """An untimed step's weight (step 3): its pose step over PLAN_STEP (path_plan.c's
    step_share)."""
    position, rotation = _pose_step(before, after)
    return max(max(position, rotation / ROTATION_STEP_PER_METRE) / PLAN_STEP, SHARE_FLOOR)


def _pose_step(before: PoseTarget, after: PoseTarget) -> tuple[float, float]:
    """How far the pose moves from `before` to `after`: (m, rad)."""
    position = float(np.linalg.norm(after.position - before.position))
    rotation = 0.0 if after.position_only else float(np.linalg.norm(
        rotation_vector(MATH, (after.rotation @ before.rotation.T).tolist())))
    return position, rotation


def _diverse(q: np.ndarray, values: np.ndarray, beam: int) -> np.ndarray:
    """Indices of up to `beam` candidates: VALUE_SHARE the lowest in value, each more than
    SEPARATION (largest joint) from those kept before it; then, one at a time, the candidate
    farthest from all kept (farthest-point sampling)."""
    kept: list[int] = []
    for i in np.argsort(values, kind='stable'):
        if len(kept) == VALUE_SHARE:
            break
        if all(np.abs(q[i] - q[j]).max() > SEPARATION for j in kept):
            kept.append(i)
    distance = np.abs(q[:, None, :] - q[kept][None]).max(axis=2).min(axis=1)
    while len(kept) < beam:
        i = int(np.argmax(distance))
        if distance[i] <= SEPARATION:
            break
        kept.append(i)
        distance = np.minimum(distance, np.abs(q - q[i]).max(axis=1))
    return np.array(kept, int)
