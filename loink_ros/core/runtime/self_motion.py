"""The self-motion of a redundant arm on a pose: the directions its joints can move in
without moving the pose (the null space of the pose Jacobian)."""

import numpy as np

from loink_ros.core.runtime.pose_refine import DAMPING_FLOOR


def null_direction(problem, q: np.ndarray, rows: int) -> np.ndarray:
    """A unit direction of the self-motion at q: the column of largest norm of the projector
    I - J+ J on the pose Jacobian's null space (its only direction for a 7-joint arm's pose)."""
    jacobian = problem.pose_jacobian(q)[:rows]
    gram = jacobian @ jacobian.T + DAMPING_FLOOR * np.eye(rows)
    projector = np.eye(problem.dim) - jacobian.T @ np.linalg.solve(gram, jacobian)
    column = projector[:, int(np.argmax((projector ** 2).sum(axis=0)))]
    return column / np.linalg.norm(column)
