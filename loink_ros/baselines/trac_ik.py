"""TRAC-IK (PyPI `pytracik`, a binding of the C++ TRAC-IK) on a KinematicProblem's chain:
the production baseline for full-pose IK. Poses are positions (m) and unit quaternions
(x, y, z, w) of the tip frame in the base frame."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem

MODES = ('Speed', 'Distance', 'Manip1', 'Manip2')
# TRAC-IK's README benchmark settings: 5 ms per solve, 1e-5 tolerance.
TIMEOUT_S = 0.005
EPSILON = 1e-5


@dataclass
class TracIkResult:
    """One solve: the configuration (None when TRAC-IK found none) and the wall time."""

    q: np.ndarray | None
    time_ms: float

    @property
    def success(self) -> bool:
        return self.q is not None


class TracIk:
    """TRAC-IK from the problem's base frame to its tip frame, inside the problem's joint
    limits. The limits are set explicitly: pytracik 0.0.3 reads some URDFs' limits wrong
    (the Panda's come back as [0, 0])."""

    def __init__(self, problem: KinematicProblem, mode: str = 'Speed',
                 timeout_s: float = TIMEOUT_S, epsilon: float = EPSILON):
        import pytracik
        if mode not in MODES:
            raise ValueError(f'unknown TRAC-IK mode {mode!r}; use one of {MODES}')
        if problem.continuous.any():
            raise ValueError('continuous joints: TRAC-IK wraps them, the problem does not')
        self._ik, self._fk = pytracik.ik, pytracik.fk
        with _stdout_to_stderr():   # KDL's URDF parser prints warnings on standard output
            self._solver = pytracik.TRAC_IK(problem.base_frame, problem.tip_frame,
                                            problem.urdf.read_text(), timeout_s, epsilon,
                                            getattr(pytracik.SolveType, mode))
        joints = pytracik.get_num_joints(self._solver)
        if joints != problem.dim:
            raise ValueError(f'TRAC-IK chain {problem.base_frame} -> {problem.tip_frame} has '
                             f'{joints} joints, the problem {problem.dim}')
        pytracik.set_joint_limits(self._solver, problem.lower.tolist(), problem.upper.tolist())
        self.mode = mode

    def solve(self, position: np.ndarray, quaternion: np.ndarray,
              seed: np.ndarray) -> TracIkResult:
        """The configuration reaching the pose, from `seed`; q None on failure or timeout."""
        began = time.perf_counter()
        out = self._ik(self._solver, np.asarray(seed, float), *map(float, position),
                       *map(float, quaternion))
        elapsed = 1e3 * (time.perf_counter() - began)
        return TracIkResult(np.asarray(out[1:], float) if out[0] > 0 else None, elapsed)

    def tip_pose(self, q: np.ndarray) -> np.ndarray:
        """TRAC-IK's (KDL's) forward kinematics: the tip's 4x4 transform in the base frame."""
        return np.asarray(self._fk(self._solver, np.asarray(q, float)))


@contextlib.contextmanager
def _stdout_to_stderr():
    """File descriptor 1 points at standard error meanwhile (C++ output included), so that
    JSON on standard output stays clean."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
