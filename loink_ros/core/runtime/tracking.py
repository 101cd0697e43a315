"""Tracking a stream of targets with smoothing mu_s (METHOD.md s.4)."""

import numpy as np

from loink_ros.core.runtime.network_inverse import InverseState
from loink_ros.core.runtime.smoothing import smoothing_share
from loink_ros.core.runtime.solution import Solution
from loink_ros.core.runtime.solver import LOInKSolver


class Tracker:
    """z_k = mu_s / (1 + mu_s) z(x_(k-1)); x_k = G^-1([y_k; z_k]) warm-started from x_(k-1).

    Started from the robot's current configuration, the latent decays geometrically to the
    optimum: mu_s = 0 jumps there at once, larger mu_s glides there with smaller steps.
    """

    def __init__(self, solver: LOInKSolver, smoothing: float = 0.0, refine_answer: bool = False):
        self.solver, self.refine_answer = solver, refine_answer
        self.smoothing = smoothing
        self.reset()

    @property
    def smoothing(self) -> float:
        """mu_s >= 0; 0 gives the pointwise optimum."""
        return self._smoothing

    @smoothing.setter
    def smoothing(self, value: float) -> None:
        if not np.isfinite(value) or value < 0:
            raise ValueError(f'smoothing must be a finite number >= 0, got {value}')
        self._smoothing = float(value)

    def reset(self, current_q: np.ndarray | None = None) -> None:
        """Start a new stream, from the robot's configuration `current_q` if known."""
        self.previous_latent: np.ndarray | None = None
        self.state: InverseState | None = None
        if current_q is not None:
            self.state = self.solver.seed_state(current_q)
            self.previous_latent = self.solver.latent(np.clip(
                current_q, self.solver.problem.lower, self.solver.problem.upper))

    def step(self, task) -> Solution:
        """Solve the next target of the stream."""
        y = self.solver.check_task(task)
        if self.previous_latent is None:
            z = np.zeros(self.solver.model.latent_dim)
        else:
            z = smoothing_share(self.smoothing) * self.previous_latent
        solutions, self.state = self.solver.solve_rows(y[None], z[None], self.refine_answer,
                                                       self.state)
        solution = solutions[0]
        self.previous_latent = self.solver.latent(solution.q)
        return solution
