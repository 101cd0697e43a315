"""The optimisation reference for the HSA robot: the minimum-effort twists that hold the end
effector at a target pose, by IPOPT (through CasADi, exact derivatives) from several starts.

The program (twists and strains, the statics and the pose as scaled equality constraints)
is core/problems/hsa/least_effort.py's, the one the runtime's refinement solves locally. An
answer counts when its twists, re-solved by the simulator, reach the target within
`POSE_TOLERANCE`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.hsa.least_effort import HsaLeastEffort
from loink_ros.core.problems.hsa.problem import HsaProblem

POSE_TOLERANCE = (1e-6, 1e-6)   # m, rad
STARTS = 8


@dataclass
class ReferenceAnswer:
    """The best valid answer of the starts (or the least-error one when none is valid)."""

    phi: np.ndarray
    cost: float
    position_error: float
    angle_error: float
    valid: bool
    optima: np.ndarray        # each valid start's twists, cheapest first (k, inputs)
    time_ms: float


class HsaReference:
    """Multi-start IPOPT on the simulator's statics."""

    def __init__(self, problem: HsaProblem, starts: int = STARTS, tolerance: float = 1e-12):
        self.problem, self.starts = problem, starts
        self.program = HsaLeastEffort(problem.statics, problem.lower, problem.upper)
        self._nlp = self.program.solver('ipopt', {
            'ipopt.print_level': 0, 'print_time': False, 'ipopt.sb': 'yes',
            'ipopt.tol': tolerance, 'ipopt.max_iter': 200})

    def solve(self, target: np.ndarray, rng: np.random.Generator) -> ReferenceAnswer:
        """The cheapest valid answer of `starts` starts: uniform twists and their steady state."""
        began = time.perf_counter()
        phi0 = rng.uniform(self.problem.lower, self.problem.upper, (self.starts, self.problem.dim))
        found = np.array([self.program.solve(self._nlp, start, target) for start in phi0])
        errors = self.problem.task(found) - target
        position, angle = np.linalg.norm(errors[:, :2], axis=1), np.abs(errors[:, 2])
        valid = (position <= POSE_TOLERANCE[0]) & (angle <= POSE_TOLERANCE[1])
        costs = self.problem.cost(found)
        order = np.argsort(np.where(valid, costs, np.inf))
        best = order[0] if valid.any() else int(np.argmin(position))
        return ReferenceAnswer(found[best], float(costs[best]), float(position[best]),
                               float(angle[best]), bool(valid[best]),
                               found[order[:valid.sum()]], 1e3 * (time.perf_counter() - began))
