"""Refinement on the true kinematics: damped least squares inside the joint limits."""

import numpy as np

from loink_ros.core.problems.problem import Problem


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
