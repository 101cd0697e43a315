"""What a solve returns."""

from dataclasses import dataclass

import numpy as np


@dataclass
class Solution:
    """A configuration inside the joint limits, checked with the true forward kinematics.

    `violations` are the problem's feasibility conditions beyond the joint box that q breaks
    (Problem.violations), one line each; empty when it meets them all.
    """

    q: np.ndarray
    latent: np.ndarray
    predicted_cost: float
    cost: float
    task_error: float
    clipped: bool
    refined: bool
    converged: bool
    violations: tuple[str, ...] = ()

    def failure(self, task_tolerance: float | None = None) -> str | None:
        """Why this answer is no solution (task error above the tolerance, when one is given,
        then feasibility), or None when it is one."""
        if task_tolerance is not None and self.task_error > task_tolerance:
            return f'task error {self.task_error:.3g} is above task_tolerance {task_tolerance:g}'
        if self.violations:
            return f'infeasible: {", ".join(self.violations)}'
        return None
