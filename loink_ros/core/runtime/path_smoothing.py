"""Smoothing a planned untimed path with every pose kept exact.

The beam (cartesian_path.py) changes an arm's posture along its self-motion only by the
steps it explores (its neighbours at shares of the box), so where the plan's value favours
another posture it hops to it in one large step rather than gliding there: a rougher,
longer joint path than a greedy interpolator's. This pass lowers the plan's own objective,

    E = smoothing sum_k ||q_k+1 - q_k||^2 / s_k  +  sum_k s_k cost(q_k)

(s_k the step weights of cartesian_path, step 3), by moving each configuration along its
self-motion only, so that every pose stays exact: with q_k + v_k a_k (v_k the unit null
direction of pose k's Jacobian) the linearised E is a tridiagonal quadratic in a, solved
whole (each hop spread over the path at once, not one neighbour per sweep, as a Jacobi or
Gauss-Seidel pass would), each configuration then brought back onto its pose by Newton. A
sweep is kept only where E falls and the path stays valid: on every pose, inside the
limits, within the step bound, collision-free where asked. A fixed start stays.
Arms without self-motion on their poses (six joints on a full pose) have nothing to smooth.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import solve_banded

from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import EXACT, PoseSolver
from loink_ros.core.runtime.self_motion import null_direction

SWEEPS = 6
# A sweep lowering E by less than this share is the last (most paths need one or two).
SETTLED = 0.01
# Each sweep moves a configuration at most this far along its self-motion (rad).
TRUST = 0.2
# Damping of the linearised problem, as a share of the smoothing term's diagonal.
DAMPING_SHARE = 0.05
# Newton back onto a pose stays within a configuration's move plus this (rad).
RETURN_MARGIN = 0.05


def smooth_path(pose_solver: PoseSolver, poses: list[PoseTarget], q: np.ndarray, shares: np.ndarray,
                smoothing: float, fixed_start: bool, boxes: np.ndarray,
                collides: Callable[[np.ndarray], bool] | None = None) -> np.ndarray:
    """`q` (N, n), one configuration per pose, with E (module docstring) lowered; `shares`
    (N,) the step weights (shares[0] unused); `boxes` (N - 1, n) each step's largest joint
    move (the plan's own boxes: the continuation's, within the step bound)."""
    problem = pose_solver.problem
    if len(q) < 3 or smoothing <= 0.0 or problem.dim <= poses[0].rows:
        return q
    energy, largest = _energy(problem, q, shares, smoothing), _largest_step(q)
    for _ in range(SWEEPS):
        null = np.array([null_direction(problem, row, poses[0].rows) for row in q])
        step = _step(problem, q, null, shares, smoothing, fixed_start)
        moved = _onto_poses(pose_solver, poses, q + step[:, None] * null, q, np.abs(step))
        # Kept where E falls, the path stays valid and no step grows past the largest one.
        if moved is None or _largest_step(moved) > largest or not _valid(problem, moved, boxes, collides):
            break
        lower = _energy(problem, moved, shares, smoothing)
        if lower >= energy:
            break
        q, settled, energy = moved, lower > (1.0 - SETTLED) * energy, lower
        if settled:
            break
    return q


def _largest_step(q: np.ndarray) -> float:
    return float(np.abs(np.diff(q, axis=0)).max())


def _energy(problem, q: np.ndarray, shares: np.ndarray, smoothing: float) -> float:
    moves = np.sum(np.diff(q, axis=0) ** 2, axis=1)
    return float(smoothing * np.sum(moves / shares[1:]) + np.sum(shares[1:] * problem.cost(q[1:])))


def _step(problem, q: np.ndarray, null: np.ndarray, shares: np.ndarray, smoothing: float,
          fixed_start: bool) -> np.ndarray:
    """The linearised E's minimiser a (N,), within TRUST."""
    count = len(q)
    w = 2.0 * smoothing / shares[1:]                       # edge k: between k and k + 1
    d = np.diff(q, axis=0)
    diagonal = np.zeros(count)
    diagonal[:-1] += w
    diagonal[1:] += w
    coupling = -w * np.sum(null[:-1] * null[1:], axis=1)   # A[k, k + 1] = A[k + 1, k]
    b = np.zeros(count)
    b[1:] -= w * np.sum(null[1:] * d, axis=1)
    b[:-1] += w * np.sum(null[:-1] * d, axis=1)
    gradients = np.array([problem.cost_gradient(row) for row in q[1:]]).reshape(count - 1, -1)
    b[1:] -= shares[1:] * np.sum(gradients * null[1:], axis=1)
    diagonal += DAMPING_SHARE * diagonal.mean()
    first = 1 if fixed_start else 0
    bands = np.zeros((3, count - first))
    bands[0, 1:] = coupling[first:]
    bands[1] = diagonal[first:]
    bands[2, :-1] = coupling[first:]
    step = np.zeros(count)
    step[first:] = solve_banded((1, 1), bands, b[first:])
    return np.clip(step, -TRUST, TRUST)


def _onto_poses(pose_solver: PoseSolver, poses: list[PoseTarget], moved: np.ndarray,
                before: np.ndarray, reach: np.ndarray) -> np.ndarray | None:
    """Each moved configuration back on its pose by Newton, within the limits and within its
    move (+ a margin) of where it was; None where one does not reach its pose."""
    problem, out = pose_solver.problem, moved.copy()
    for k, (target, row) in enumerate(zip(poses, moved)):
        box = reach[k] + RETURN_MARGIN
        lower = np.maximum(problem.lower, before[k] - box)
        upper = np.minimum(problem.upper, before[k] + box)
        refined = pose_solver.refine(np.clip(row, lower, upper)[None], target, lower, upper, None, 0.0, 0)[0]
        if refined[problem.dim] > EXACT[0] or refined[problem.dim + 1] > EXACT[1]:
            return None
        out[k] = refined[:problem.dim]
    return out


def _valid(problem, q: np.ndarray, boxes: np.ndarray,
           collides: Callable[[np.ndarray], bool] | None) -> bool:
    if np.any(q < problem.lower) or np.any(q > problem.upper) or np.any(np.abs(np.diff(q, axis=0)) > boxes):
        return False
    return collides is None or not any(collides(row) for row in q)
