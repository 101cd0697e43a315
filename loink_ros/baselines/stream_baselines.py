"""Baselines of the pose-streaming bench (`loink bench stream`): solvers fed one tip-pose target
per step (position (3,), rotation (3, 3), in the problem's base frame), each warm-started from
its previous answer.

- TrackingTracIk: TRAC-IK (Distance or Speed) seeded with the previous answer, which it keeps
  when a step finds nothing within its timeout;
- TrackingPink: pink's differential IK (PyPI `pin-pink`), one QP per step on the tip's pose
  task and a light posture task, under the joint limits and the URDF's velocity limits,
  solved by DAQP (the QP solver of pink's Panda example), the velocity integrated over dt.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pinocchio as pin

from loink_ros.baselines.trac_ik import TracIk
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
from loink_ros.core.problems.arms.velocity_limits import velocity_limits

# TRAC-IK's time per step: one step of a 1 kHz stream.
STEP_TIMEOUT_S = 1e-3
# pink's task costs: the tip's pose (per m and per rad), and the posture towards the start,
# small, only to settle the self-motion (as pink's examples do).
POSE_COST = 1.0
POSTURE_COST = 1e-3
QP_SOLVER = 'daqp'


class StreamSolver(Protocol):
    """One answer per streamed target, from the previous one."""

    name: str

    def reset(self, q0: np.ndarray) -> None:
        """Start a stream at configuration q0 (n,)."""

    def step(self, position: np.ndarray, rotation: np.ndarray, dt: float) -> np.ndarray:
        """The configuration (n,) for the next target, dt (s) after the previous one."""


class TrackingTracIk:
    """TRAC-IK seeded with its previous answer; a step without a solution keeps it."""

    def __init__(self, problem: KinematicProblem, mode: str = 'Distance',
                 timeout_s: float = STEP_TIMEOUT_S):
        self._solver = TracIk(problem, mode, timeout_s)
        self.name = f'trac_ik_{mode.lower()}'
        self.q = np.zeros(problem.dim)

    def reset(self, q0: np.ndarray) -> None:
        self.q = np.array(q0, float)

    def step(self, position: np.ndarray, rotation: np.ndarray, dt: float) -> np.ndarray:
        """dt unused: TRAC-IK has no notion of the time between targets."""
        result = self._solver.solve(position, matrix_quaternion(np.asarray(rotation, float)), self.q)
        if result.success:
            self.q = result.q
        return self.q.copy()


class TrackingPink:
    """pink's differential IK, one velocity per step inside the joint and velocity limits.

    pink reads the limits from a Pinocchio model: it gets a copy of the problem's reduced model
    (same joints, same order: its q is the problem's), with the problem's joint limits and
    velocity_limits(problem); pink also attaches its own attributes to the model it is given."""

    def __init__(self, problem: KinematicProblem, posture_cost: float = POSTURE_COST,
                 solver: str = QP_SOLVER):
        import pink
        from pink.limits import ConfigurationLimit, VelocityLimit
        from pink.tasks import FrameTask, PostureTask
        if problem.model.nq != problem.dim:
            raise ValueError('continuous joints: pink would work on their (cos, sin) '
                             'coordinates, the stream on angles')
        self._pink, self.problem, self.solver, self.name = pink, problem, solver, 'pink'
        self.model = pin.Model(problem.model)
        self.model.lowerPositionLimit = problem.lower.copy()
        self.model.upperPositionLimit = problem.upper.copy()
        self.model.velocityLimit = velocity_limits(problem)
        self.limits = [ConfigurationLimit(self.model), VelocityLimit(self.model)]
        self.frame_task = FrameTask(problem.tip_frame, position_cost=POSE_COST,
                                    orientation_cost=POSE_COST)
        self.posture_task = PostureTask(cost=posture_cost)
        self.configuration = pink.Configuration(self.model, self.model.createData(),
                                                pin.neutral(self.model))

    def reset(self, q0: np.ndarray) -> None:
        """Start at q0; the posture task pulls towards it."""
        self.configuration.update(np.array(q0, float))
        self.posture_task.set_target(np.array(q0, float))

    def step(self, position: np.ndarray, rotation: np.ndarray, dt: float) -> np.ndarray:
        """One QP and its velocity integrated over dt; a QP without a solution keeps q."""
        target = pin.SE3(np.asarray(rotation, float), np.asarray(position, float))
        base = self.problem.base_placement   # pink's world is the URDF root
        self.frame_task.set_target(target if base is None else base * target)
        try:
            velocity = self._pink.solve_ik(self.configuration, [self.frame_task, self.posture_task],
                                           dt, solver=self.solver, limits=self.limits)
        except self._pink.exceptions.NoSolutionFound:
            return self.configuration.q.copy()
        # The QP keeps q inside the limits up to its tolerance; the clip removes that.
        q = np.clip(self.configuration.integrate(velocity, dt), self.problem.lower,
                    self.problem.upper)
        self.configuration.update(q)
        return q.copy()


def stream_baselines(problem: KinematicProblem,
                     timeout_s: float = STEP_TIMEOUT_S) -> list[StreamSolver]:
    """The bench's baselines: TRAC-IK Distance and Speed (timeout_s per step) and pink."""
    return [TrackingTracIk(problem, 'Distance', timeout_s),
            TrackingTracIk(problem, 'Speed', timeout_s), TrackingPink(problem)]
