"""What a solve returns."""

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Solution:
    """A configuration inside the joint limits, checked with the true forward kinematics.

    `violations` are the problem's feasibility conditions beyond the joint box that q breaks
    (Problem.violations), one line each; empty when it meets them all. The one rule for cost
    (IKSolution.msg): +inf exactly when `violations` is not empty, else the problem's cost.
    q never breaks the joint box itself: every path clips to it.
    """

    q: np.ndarray
    latent: np.ndarray
    predicted_cost: float
    cost: float
    task_error: float
    clipped: bool            # the raw answer left the limits (bounded latent: its rounds ended outside)
    refined: bool
    converged: bool
    violations: tuple[str, ...] = ()

    def __post_init__(self):
        if self.violations:
            self.cost = math.inf

    def failure(self, task_tolerance: float | None = None) -> str | None:
        """Why this answer is no solution (task error above the tolerance, when one is given,
        then feasibility), or None when it is one."""
        if task_tolerance is not None and self.task_error > task_tolerance:
            return f'task error {self.task_error:.3g} is above task_tolerance {task_tolerance:g}'
        if self.violations:
            return f'infeasible: {", ".join(self.violations)}'
        return None
