"""Refinement on the true kinematics: damped least squares inside the joint limits."""

import numpy as np

from loink_ros.core.problems.problem import Problem

# Refinement starts from the raw answer rounded to this grid (2^-24, about 6e-8 in joint
# units). The damped least squares below can amplify a 1e-15 change of its start to 1e-4
# where joints sit at their limits, and a warm-started and a cold network inverse agree only
# to ~1e-14: on the grid both start from the same point, so Solve's seed leaves a refined
# answer bit-for-bit unchanged (unless a joint lies within ~1e-14 of a grid midpoint).
START_GRID = 2.0 ** -24


def refinement_start(q: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """q (n,) rounded to START_GRID (exact binary scaling, ties to even) and clipped."""
    return np.clip(np.round(q / START_GRID) * START_GRID, lower, upper)


def refine(problem: Problem, q: np.ndarray, task: np.ndarray, tol: float = 1e-10,
           max_iter: int = 20, damping: float = 1e-6) -> tuple[np.ndarray, int]:
    """Minimum-norm steps that remove the task error, keeping q inside the limits.

    Joints at a limit whose step would push outward are frozen, so the answer stays close
    to the network's (the learned optimum) and never leaves the limits. Returns (q, steps).
    """
    q = np.clip(q, problem.lower, problem.upper)
    for step in range(max_iter):
        error = task - problem.task(q)[0]
        if np.linalg.norm(error) < tol:
            return q, step
        jac = problem.task_jacobian(q)
        push = jac.T @ error
        blocked = ((q <= problem.lower) & (push < 0)) | ((q >= problem.upper) & (push > 0))
        jac_free = jac[:, ~blocked]
        gram = jac_free @ jac_free.T + damping ** 2 * np.eye(len(task))
        q[~blocked] += jac_free.T @ np.linalg.solve(gram, error)
        q = np.clip(q, problem.lower, problem.upper)
    return q, max_iter
