"""A serial arm whose cost is its posture: J = sum_i w_i ((q_i - q_mid,i) / q_half,i)^2, the
squared distance from the centres of the joint ranges, each joint scaled by its half range."""

import numpy as np

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem


class PostureArmProblem(KinematicProblem):
    """KinematicProblem with the posture cost (weights 1 unless `weights` says otherwise);
    samples are uniform in the limits without self-collision."""

    def __init__(self, *args, weights: np.ndarray | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.mid, self.half = 0.5 * (self.lower + self.upper), 0.5 * (self.upper - self.lower)
        self.weights = np.ones(self.dim) if weights is None else np.asarray(weights, float)

    def cost(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        return ((q - self.mid) / self.half) ** 2 @ self.weights

    def symbolic_cost(self, q, chain):
        return sum(self.weights[i] * ((q[i] - self.mid[i]) / self.half[i]) ** 2
                   for i in range(self.dim))

    def cost_gradient(self, q: np.ndarray) -> np.ndarray:
        """d cost / d q at one configuration, (n,) -> (n,)."""
        return 2.0 * self.weights * (q - self.mid) / self.half ** 2

    def cost_minimiser(self) -> np.ndarray:
        return self.mid.copy()

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return self.sample_collision_free(count, rng)
