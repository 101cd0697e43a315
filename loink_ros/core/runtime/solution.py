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
