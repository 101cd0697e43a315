"""Solving M(x) = y for one monotone layer: Davis-Yin splitting and semismooth Newton.

Both are exact methods of METHOD.md s.3, batched over rows, each row stopped on its own
tolerance; a row that hits max_iter is reported unconverged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import lapack

if TYPE_CHECKING:
    from loink_ros.core.runtime.network import MonotoneMap

# Newton line search: sufficient decrease factor and the most step halvings per iteration.
ARMIJO = 1e-4
MAX_HALVINGS = 30


@dataclass
class DavisYinResult:
    """Solution x (B, n), splitting state u (B, N), per-row iterations and convergence."""

    x: np.ndarray
    u: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


@dataclass
class NewtonResult:
    """Solution x (B, n), per-row iterations and convergence."""

    x: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


@dataclass(frozen=True)
class SplittingOperators:
    """Per-layer constants of the Davis-Yin iteration, alpha = mu/gamma and lambda = 1."""

    alpha: float
    damp: float  # 1 / (1 + alpha)
    # h_hat -> (2 h_hat - alpha C h_hat) / (1 + alpha), with alpha C = S S^T.
    propagate: np.ndarray
    # (previous block, block, alpha V_l^T / (1 + alpha)): (I + alpha (I - V))^-1 is a
    # forward substitution, since V is strictly block lower-triangular.
    coupling: list[tuple[slice, slice, np.ndarray]]
    # alpha b_z / (1 + alpha) = (y - b_y) scale_y + scale_b.
    scale_y: np.ndarray
    scale_b: np.ndarray

    @classmethod
    def from_layer(cls, layer: MonotoneMap) -> SplittingOperators:
        """Precompute the constants of one layer."""
        alpha = layer.mu / layer.gamma
        damp = 1.0 / (1.0 + alpha)
        propagate = damp * (2.0 * np.eye(layer.width) - layer.S @ layer.S.T)
        coupling = [(prev, block, alpha * damp * v.T)
                    for prev, block, v in zip(layer.slices, layer.slices[1:], layer.V)]
        scale_y = alpha * damp * np.sqrt(2.0 * layer.gamma) / layer.mu * layer.S.T
        return cls(alpha, damp, propagate, coupling, scale_y, alpha * damp * layer.b)


def splitting_state(layer: MonotoneMap, x: np.ndarray) -> np.ndarray:
    """Davis-Yin fixed point u = (1 - alpha) h + alpha z at a solution x (z: pre-activations)."""
    z, h = layer.preactivation(x)
    alpha = layer.splitting.alpha
    return (1.0 - alpha) * h + alpha * z


def davis_yin_solve(layer: MonotoneMap, y: np.ndarray, tol: float, max_iter: int,
                    u0: np.ndarray | None = None) -> DavisYinResult:
    """Solve M(x) = y via h = relu(V h - C h + b_z); a row stops once ||h - h_hat|| < tol."""
    ops = layer.splitting
    batch = len(y)
    u = np.zeros((batch, layer.width)) if u0 is None else np.array(u0, dtype=np.float64)
    offset = (y - layer.b_y) @ ops.scale_y + ops.scale_b
    iterations, converged = np.full(batch, max_iter), np.zeros(batch, dtype=bool)
    rows, u_a, offset_a = np.arange(batch), u, offset
    for it in range(1, max_iter + 1):
        h_hat = np.maximum(u_a, 0.0)
        h = h_hat @ ops.propagate - ops.damp * u_a + offset_a
        for prev, block, coupling in ops.coupling:
            h[:, block] += h[:, prev] @ coupling
        h -= h_hat
        u_a += h
        # NaN compares False: a non-finite row never stops early.
        done = np.einsum('ij,ij->i', h, h) < tol * tol
        if done.any():
            iterations[rows[done]], converged[rows[done]] = it, True
            u[rows] = u_a
            rows, u_a, offset_a = rows[~done], u_a[~done], offset_a[~done]
            if rows.size == 0:
                break
    u[rows] = u_a
    x = layer.input_from_hidden(y, np.maximum(u, 0.0))
    return DavisYinResult(x, u, iterations, converged)


def newton_solve(layer: MonotoneMap, y: np.ndarray, tol: float, max_iter: int,
                 x0: np.ndarray | None = None) -> NewtonResult:
    """Solve M(x) = y by semismooth Newton, backtracking on max |F|; a row stops at max |F| <= tol.

    Without x0 the first iteration is the Newton step from x = 0, with a precomputed Jacobian.
    """
    if x0 is not None:
        x, start = np.array(x0, dtype=np.float64), 0
    elif max_iter > 0:
        x, start = layer.origin_step(y), 1
    else:
        x, start = np.zeros_like(y), 0
    if len(y) == 1:
        x_row, iterations, converged = _newton_row(layer, y[0], tol, start, max_iter, x[0])
        return NewtonResult(x_row[None], np.array([iterations]), np.array([converged]))
    return _newton_batch(layer, y, tol, start, max_iter, x)


def _newton_batch(layer: MonotoneMap, y: np.ndarray, tol: float, start: int, max_iter: int,
                  x: np.ndarray) -> NewtonResult:
    """Newton iterations from x (updated in place), dropping rows as they converge."""
    batch = len(y)
    iterations, converged = np.full(batch, max_iter), np.zeros(batch, dtype=bool)
    rows, x_a, y_a = np.arange(batch), x, y
    h = layer.preactivation(x_a)[1]
    f = layer.output(x_a, h) - y_a
    f_max = np.abs(f).max(axis=1)
    for it in range(start, max_iter + 1):
        done = f_max <= tol
        if done.any():
            iterations[rows[done]], converged[rows[done]] = it, True
            x[rows[done]] = x_a[done]
            keep = ~done
            rows, x_a, y_a, h, f, f_max = (
                rows[keep], x_a[keep], y_a[keep], h[keep], f[keep], f_max[keep])
            if rows.size == 0:
                break
        if it == max_iter:
            break
        step = np.linalg.solve(layer.jacobian_at(h), f[:, :, None])[:, :, 0]
        x_a, h, f, f_max = _line_search(layer, x_a, y_a, step, f_max)
    x[rows] = x_a
    return NewtonResult(x, iterations, converged)


def _line_search(layer: MonotoneMap, x: np.ndarray, y: np.ndarray, step: np.ndarray,
                 f_max: np.ndarray) -> tuple[np.ndarray, ...]:
    """x - t step, t halved per row until max |F| <= (1 - ARMIJO t) f_max; gives x, h, F, max |F|.

    The Newton direction decreases every norm of F to first order, F(x - t step) ~ (1 - t) F(x),
    so some t > 0 passes; after MAX_HALVINGS the last trial is taken.
    """
    x_new = x - step
    h = layer.preactivation(x_new)[1]
    f = layer.output(x_new, h) - y
    f_max_new = np.abs(f).max(axis=1)
    # NaN compares False: a non-finite row is not backtracked (and never converges).
    fail = f_max_new > (1.0 - ARMIJO) * f_max
    t = np.ones(len(x))
    for _ in range(MAX_HALVINGS):
        if not fail.any():
            break
        t[fail] *= 0.5
        x_f = x[fail] - t[fail, None] * step[fail]
        h_f = layer.preactivation(x_f)[1]
        f_f = layer.output(x_f, h_f) - y[fail]
        x_new[fail], h[fail], f[fail], f_max_new[fail] = x_f, h_f, f_f, np.abs(f_f).max(axis=1)
        fail = f_max_new > (1.0 - ARMIJO * t) * f_max
    return x_new, h, f, f_max_new


def _newton_row(layer: MonotoneMap, y: np.ndarray, tol: float, start: int, max_iter: int,
                x: np.ndarray) -> tuple[np.ndarray, int, bool]:
    """_newton_batch and _line_search for one row (n,): same iterates, far fewer numpy calls."""
    h = layer.preactivation(x)[1]
    f = layer.output(x, h) - y
    f_max = np.abs(f).max()
    for it in range(start, max_iter + 1):
        if f_max <= tol:
            return x, it, True
        if it == max_iter:
            break
        # LAPACK directly: np.linalg.solve's overhead is several times a 3x3..20x20 solve.
        _, _, step, info = lapack.dgesv(layer.jacobian_at(h), f)
        if info != 0:
            raise np.linalg.LinAlgError(f'singular Jacobian (dgesv info {info})')
        t = 1.0
        for _ in range(MAX_HALVINGS + 1):
            x_new = x - t * step
            h = layer.preactivation(x_new)[1]
            f_new = layer.output(x_new, h) - y
            f_max_new = np.abs(f_new).max()
            if not f_max_new > (1.0 - ARMIJO * t) * f_max:
                break
            t *= 0.5
        x, f, f_max = x_new, f_new, f_max_new
    return x, max_iter, False
