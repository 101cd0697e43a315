"""Tracking a stream of full-pose targets: each step from the previous answer, inside the
joint limits and the velocity limits, free of self-collision, with the smoothing mu_s.

A step is continuation.py's (the one implementation shared with the pose solver's requests
that continue from their seed), with the box q_prev +/- v dt (v: the URDF's velocity limits
times a scale):
1. Track onto the target inside the box. Since no step leaves the box, the answer never
   jumps to another IK branch; when the target moves faster than the box allows, the answer
   lags on its branch (the step says what holds it) and catches up.
2. Drift down cost(q) + mu_s ||q - q_prev||^2 along the self-motion where the target is
   reached (METHOD.md s.4's share rule for a unit quadratic cost: mu_s = 0 drifts to the
   cost's optimum on the pose as fast as the box allows, larger mu_s glides there), not
   nearer a singularity.
3. Catch up: where the tracked answer stays far from the target (a jump, or a target that
   came back into reach), a local refinement can stall; the step then heads in joint space
   for the target's solution nearest the previous answer (the pose solver's seed-consistent
   answer, recomputed when the target moves on), as fast as the velocity limits allow.
A step that would self-collide stops short where the motion is still free: near a collision
the stream slows, it never passes through.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseRequest, PoseSolver

# Bisection steps towards the last free configuration when a step self-collides.
COLLISION_BISECTIONS = 6
# Pose error (m, rad) beyond which a step heads for the nearest solution (catch up), and
# the target motion after which that solution is sought again.
CATCH_UP = (0.01, 0.05)
# The nearest solution: the pose solver's seed-consistent mode with this weight, and a
# deadline of its own (s).
NEAREST_WEIGHT = 100.0
NEAREST_DEADLINE = 0.002


@dataclass
class TrackStep:
    """One answer of the stream: q, its pose error by Pinocchio's forward kinematics, and
    why it is short of the target when it is (None: within the tolerance)."""

    q: np.ndarray
    position_error: float
    rotation_error: float
    lag: str | None

    @property
    def on_target(self) -> bool:
        return self.lag is None


class PoseTracker:
    """Follows a stream of poses (module docstring); reset() starts a new stream."""

    def __init__(self, pose_solver: PoseSolver, velocity_limits: np.ndarray,
                 velocity_scale: float = 1.0, smoothing: float = 0.0,
                 avoid_collisions: bool = True, tolerance: tuple[float, float] = TOLERANCE):
        self.pose_solver, self.problem = pose_solver, pose_solver.problem
        self.velocity_limits = np.asarray(velocity_limits, float)
        if self.velocity_limits.shape != (self.problem.dim,) or not np.all(self.velocity_limits > 0):
            raise ValueError(f'velocity limits must be {self.problem.dim} positive values')
        self.velocity_scale, self.smoothing = velocity_scale, smoothing
        self.avoid_collisions = avoid_collisions and self.problem.has_collision_model
        self.tolerance = tolerance
        self.q: np.ndarray | None = None
        # The target a catch-up last sought a solution for, and that solution (or None).
        self._goal: tuple[PoseTarget, np.ndarray | None] | None = None

    def reset(self, q: np.ndarray | None = None) -> None:
        """Start a new stream from q (the robot's configuration, clipped to the limits), or
        with None from the first target's full solve."""
        self.q = None if q is None else np.clip(np.asarray(q, float), self.problem.lower,
                                                self.problem.upper)
        self._goal = None

    def step(self, target: PoseTarget, dt: float) -> TrackStep:
        """The answer to the next target, dt seconds after the previous one."""
        if not dt > 0.0:
            raise ValueError(f'dt must be positive, got {dt!r}')
        if self.q is None:
            return self._first(target)
        reach = self.velocity_scale * self.velocity_limits * dt
        step = self.pose_solver.continue_from(self.q, target, reach, self.problem.lower,
                                              self.problem.upper, self.smoothing)
        q = step.q
        if not step.on_pose and (step.position_error > CATCH_UP[0]
                                 or step.rotation_error > CATCH_UP[1]):
            goal = self._nearest_solution(target)
            if goal is not None:
                q = self.q + np.clip(goal - self.q, -reach, reach)
        if self.avoid_collisions and self.problem.self_collisions(q):
            return self._finish(self._short_of_collision(q), target, 'self-collision ahead')
        lower = np.maximum(self.problem.lower, self.q - reach)
        upper = np.minimum(self.problem.upper, self.q + reach)
        return self._finish(q, target, self._held_by(q, lower, upper))

    def _nearest_solution(self, target: PoseTarget) -> np.ndarray | None:
        """The target's solution nearest the previous answer, sought again only once the
        target has moved CATCH_UP from the one last sought (found or not); None when the
        solver found none in time."""
        if self._goal is not None and _near(self._goal[0], target):
            return self._goal[1]
        answer = self.pose_solver.solve(PoseRequest(
            target, seed=self.q, seed_weight=NEAREST_WEIGHT, avoid_collisions=self.avoid_collisions,
            deadline=time.monotonic() + NEAREST_DEADLINE, tolerance=self.tolerance))
        self._goal = (target, answer.q if answer.success else None)
        return self._goal[1]

    def _held_by(self, q: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> str:
        """What holds an answer short of its target: the limits it stands on, if any."""
        at_box = (q <= lower + 1e-12) | (q >= upper - 1e-12)
        at_joint_limit = (q <= self.problem.lower + 1e-12) | (q >= self.problem.upper - 1e-12)
        names = self.problem.joint_names
        if np.any(at_box & ~at_joint_limit):
            joints = ', '.join(names[i] for i in np.flatnonzero(at_box & ~at_joint_limit))
            return f'velocity limit of {joints}'
        if np.any(at_joint_limit):
            return f'joint limit of {", ".join(names[i] for i in np.flatnonzero(at_joint_limit))}'
        return 'target out of reach or at a singularity'

    def _first(self, target: PoseTarget) -> TrackStep:
        """The stream's first answer without a previous one: the full solve's, else none."""
        answer = self.pose_solver.solve(PoseRequest(target, avoid_collisions=self.avoid_collisions,
                                                    tolerance=self.tolerance))
        if not answer.success:
            raise ValueError(f'no answer to start the stream from: {answer.reason}')
        return self._finish(answer.q, target, 'no answer')

    def _short_of_collision(self, q: np.ndarray) -> np.ndarray:
        """The last free point of the straight step from self.q (free) towards q."""
        free, hit = 0.0, 1.0
        for _ in range(COLLISION_BISECTIONS):
            middle = 0.5 * (free + hit)
            if self.problem.self_collisions(self.q + middle * (q - self.q)):
                hit = middle
            else:
                free = middle
        return self.q + free * (q - self.q)

    def _finish(self, q: np.ndarray, target: PoseTarget, short: str) -> TrackStep:
        """The step's answer, its error checked by forward kinematics; q becomes the state."""
        error = pose_error(self.problem, q, target)
        position, rotation = float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))
        within = position <= self.tolerance[0] and rotation <= self.tolerance[1]
        self.q = q.copy()
        return TrackStep(q.copy(), position, rotation, None if within else short)


def _near(a: PoseTarget, b: PoseTarget) -> bool:
    """Whether two targets lie within CATCH_UP of each other."""
    cosine = np.clip(0.5 * (np.trace(a.rotation.T @ b.rotation) - 1.0), -1.0, 1.0)
    return (np.linalg.norm(a.position - b.position) <= CATCH_UP[0]
            and np.arccos(cosine) <= CATCH_UP[1])
