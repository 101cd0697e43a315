"""What a solve returns."""

from dataclasses import dataclass

import numpy as np


@dataclass
class Solution:
    """A configuration inside the joint limits, checked with the true forward kinematics."""

    q: np.ndarray
    latent: np.ndarray
    predicted_cost: float
    cost: float
    task_error: float
    clipped: bool
    refined: bool
    converged: bool
