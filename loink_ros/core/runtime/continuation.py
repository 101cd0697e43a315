"""Continuing from a configuration: one step on along the arm's branch, then down the cost
along the self-motion as far as continuity allows. The one implementation behind the pose
stream (PoseTracker: the box from the velocity limits) and behind any request whose seed lies
beside its pose (the ranked solve, PoseSolver: the box from the pose's distance), in C
(compiled/continuation.c) with this module as its numpy reference.

A step (continue_pose):
1. Track: Gauss-Newton from q_from onto the target inside the joint limits and the box
   q_from +/- reach, each Newton step at most half the reach (so that the box clips no step's
   direction). No step leaves the box, so the answer never jumps to another IK branch.
2. Drift: where the target is reached exactly, the descent of cost(q) + mu_s ||q - q_from||^2
   along the self-motion, inside the box and within DRIFT_SHARE of it around the tracked
   answer (a stream: the rest of its velocity budget stays with the tracking), or, for a
   request, which has no time, each joint within STEP_DRIFT_SHARE x t x its velocity limit, t
   the least time the tracked step takes at the velocity limits (the drift in proportion to
   the motion, so a seed already on the pose stays; kept only where the arm is no less agile
   there (agility: the tip's slowest speed at the velocity limits), so that a Servo-like
   stream of requests is not drifted into postures its motion cannot keep up with):
   METHOD.md s.4's rule,
   mu_s = 0 drifting to the cost's optimum on the pose as fast as that allows. It is refused where
   it brings the arm nearer a singularity than SINGULAR_MARGIN (smallest singular value of
   the pose Jacobian): there the next targets could need unbounded joint speeds.

The rule for requests (continuation_reach): a request with a seed (and no seed weight) is a
continuation when the seed's own pose lies within GATE of the target (m, rad): MoveIt's
Cartesian interpolator, Servo, Pilz and the RViz marker ask so, with the previous or current
state as the seed. Each joint may then move REACH[0] + REACH[1] d_position + REACH[2]
d_rotation, at most REACH_CAP: a joint motion in proportion to how far the pose moves, as a
continuous motion needs. 29 rad per metre keeps a 1 cm step, and 8 rad per radian a 0.035 rad
step (MoveIt's MaxEEFStep(0.01)), under 0.3 rad a joint, the jump of MoveIt's Cartesian-path
practice; 1 cm steps of the Panda need more than 29 rad per metre only near singularities
(measured from uniform configurations: median 3.7, 90th percentile 15.6 rad per metre). The
answer is the continuation, or where it fails (a limit or a singularity in the way) the
solver's search within that reach alone, or none: never an answer farther (a jump). Random
seeds (goal sampling) lie almost never within GATE of their target, and get the cost-optimal
answer. An approximate request (MoveIt's return_approximate_solution: Servo, RViz's
approximate marker) moves the arm from its seed whatever the distance: it is a continuation
without the gate, each joint within APPROXIMATE_CAP, and where the step does not reach the
pose its answer is the step's own (never farther from the pose than the seed), at once,
without the search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.runtime.pose_refine import (
    PoseObjective,
    PoseTarget,
    converge,
    pose_error,
    refine_poses,
)

# A seed's pose this near the target (m, rad) makes a request a continuation.
GATE = (0.15, np.pi / 2)
# A seed farther than this outside the joint limits (rad) is no state of the arm: no
# continuation (closer, e.g. a measured state a hair past a limit, it is clipped). C:
# continuation.c's SEED_MARGIN.
SEED_MARGIN = 0.01
# Each joint's reach on the way: a floor (rad), then rad per metre and per radian of the
# seed's pose distance.
REACH = (1e-3, 29.0, 8.0)
REACH_GRID = 2.0 ** 20
# No joint turns more than a quarter turn in a continuation: the box, 2 REACH_CAP wide, stays
# short of a full turn, so Newton never wraps a joint by 2 pi to the same posture.
REACH_CAP = np.pi / 2
# An approximate request's reach at most (rad): its caller (Servo, RViz's approximate marker)
# moves the arm from the seed, and a step past it would be a jump, however far the pose
# (below the 0.3 rad jump of MoveIt's Cartesian-path practice).
APPROXIMATE_CAP = 0.25
# The drift's share of a stream's reach, and of a request's step.
DRIFT_SHARE = 0.5
STEP_DRIFT_SHARE = 0.25
# Smallest singular value of the pose Jacobian (m or rad per rad) the drift may go below
# only by moving away from the singularity.
SINGULAR_MARGIN = 0.05


@dataclass
class Continued:
    """A step's answer: q, its pose errors (m, rad) after the refinement, whether it is on
    the pose (within the exact tolerance) and whether it drifted."""

    q: np.ndarray
    position_error: float
    rotation_error: float
    on_pose: bool
    drifted: bool


def continuation_reach(problem: KinematicProblem, target: PoseTarget,
                       seed: np.ndarray, approximate: bool = False) -> np.ndarray | None:
    """Each joint's reach (n,) when a request seeded at `seed` is a continuation (an
    approximate one: wherever the seed's pose lies, at most APPROXIMATE_CAP), else None."""
    error = pose_error(problem, seed, target)
    position, rotation = float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))
    if approximate:
        return np.full(problem.dim, min(step_reach(position, rotation), APPROXIMATE_CAP))
    if not (position <= GATE[0] and rotation <= GATE[1]):
        return None
    return np.full(problem.dim, step_reach(position, rotation))


def step_reach(position: float, rotation: float) -> float:
    """How far (rad) a joint may move for a step of the pose by `position` m and `rotation`
    rad (module docstring)."""
    # On a grid, so that C's reach is this one bit for bit though its pose distance (by the
    # generated kinematics) differs from Pinocchio's by rounding.
    box = np.floor((REACH[0] + REACH[1] * position + REACH[2] * rotation) * REACH_GRID) / REACH_GRID
    return float(min(box, REACH_CAP))


def continue_pose(problem: KinematicProblem, target: PoseTarget, start: np.ndarray,
                  reach: np.ndarray, lower: np.ndarray, upper: np.ndarray, smoothing: float,
                  exact: tuple[float, float], velocity: np.ndarray | None = None) -> Continued:
    """One step on from `start` (module docstring), numpy (C: loink_pose_continue): the drift
    within DRIFT_SHARE of the reach (velocity None: a stream), or within STEP_DRIFT_SHARE of
    the step's least time at the joint speeds `velocity` (a request)."""
    lower = np.maximum(lower, start - reach)
    upper = np.minimum(upper, start + reach)
    # Newton steps of at most half the reach, so that the box clips no step's direction.
    q, error, _ = converge(problem, start.copy(), target, lower, upper,
                           max_step=0.5 * float(np.max(reach)))
    position, rotation = float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))
    if not (position <= exact[0] and rotation <= exact[1]):
        # Off the pose: no farther from it than the start (Newton from a far pose can
        # overshoot, and an approximate answer that did would swing from call to call).
        held = np.clip(start, lower, upper)
        held_error = pose_error(problem, held, target)
        if held_error @ held_error <= error @ error:
            q = held
            position, rotation = float(np.linalg.norm(held_error[:3])), float(np.linalg.norm(held_error[3:]))
        return Continued(q, position, rotation, False, False)
    if velocity is None:
        width = DRIFT_SHARE * reach
    else:
        width = STEP_DRIFT_SHARE * (np.abs(q - start) / velocity).max() * velocity
    drifted = refine_poses(problem, q[None], target, np.maximum(lower, q - width),
                           np.minimum(upper, q + width), PoseObjective(problem, start, smoothing),
                           exact, 1)[0]
    margin = smallest_singular_value(problem, drifted.q)
    keep = margin >= SINGULAR_MARGIN or margin >= smallest_singular_value(problem, q)
    if keep and velocity is not None:
        keep = agility(problem, drifted.q, velocity) >= agility(problem, q, velocity)
    if keep:
        return Continued(drifted.q, drifted.position_error, drifted.rotation_error, True, True)
    return Continued(q, position, rotation, True, False)


def drift_velocity(problem: KinematicProblem) -> np.ndarray:
    """The joint speeds that scale a request's drift: the URDF's velocity limits, or ones
    where it has none."""
    from loink_ros.core.problems.arms.velocity_limits import velocity_limits
    try:
        return velocity_limits(problem)
    except ValueError:
        return np.ones(problem.dim)


def agility(problem: KinematicProblem, q: np.ndarray, velocity: np.ndarray) -> float:
    """The tip's slowest speed at q with every joint at most at its `velocity`: the smallest
    singular value of J diag(velocity), J the pose Jacobian."""
    return float(np.linalg.svd(problem.pose_jacobian(q) * velocity, compute_uv=False)[-1])


def smallest_singular_value(problem: KinematicProblem, q: np.ndarray) -> float:
    """How near q is to a singularity: the pose Jacobian's smallest singular value."""
    return float(np.linalg.svd(problem.pose_jacobian(q), compute_uv=False)[-1])
