"""Solving M(x) = y for one monotone layer by Davis-Yin splitting (METHOD.md s.3).

Batched over rows, each row stopped on its own tolerance; a row that hits max_iter is
reported unconverged.
"""

from dataclasses import dataclass

import numpy as np

from loink_ros.core.runtime.monotone_map import MonotoneMap


@dataclass
class DavisYinResult:
    """Solution x (B, n), splitting state u (B, N), per-row iterations and convergence."""

    x: np.ndarray
    u: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


class DavisYinInverse:
    """M^-1 via h = relu(V h - C h + b_z), alpha = mu/gamma and lambda = 1; a row stops once
    ||h - h_hat|| < tol."""

    def __init__(self, layer: MonotoneMap):
        self.layer = layer
        self.alpha = layer.mu / layer.gamma
        self.damp = 1.0 / (1.0 + self.alpha)
        alpha, damp = self.alpha, self.damp
        # h_hat -> (2 h_hat - alpha C h_hat) / (1 + alpha), with alpha C = S S^T.
        self.propagate = damp * (2.0 * np.eye(layer.width) - layer.S @ layer.S.T)
        # (previous block, block, alpha V_l^T / (1 + alpha)): (I + alpha (I - V))^-1 is a
        # forward substitution, since V is strictly block lower-triangular.
        self.coupling = [(prev, block, alpha * damp * v.T)
                         for prev, block, v in zip(layer.slices, layer.slices[1:], layer.V)]
        # alpha b_z / (1 + alpha) = (y - b_y) scale_y + scale_b.
        self.scale_y = alpha * damp * np.sqrt(2.0 * layer.gamma) / layer.mu * layer.S.T
        self.scale_b = alpha * damp * layer.b

    def fixed_point(self, x: np.ndarray) -> np.ndarray:
        """The splitting state u = (1 - alpha) h + alpha z at a solution x (z: pre-activations)."""
        z, h = self.layer.preactivation(x)
        return (1.0 - self.alpha) * h + self.alpha * z

    def solve(self, y: np.ndarray, tol: float, max_iter: int,
              u0: np.ndarray | None = None) -> DavisYinResult:
        """x with M(x) = y for a batch (B, n), from the splitting state u0 (default 0)."""
        batch = len(y)
        u = np.zeros((batch, self.layer.width)) if u0 is None else np.array(u0, dtype=np.float64)
        offset = (y - self.layer.b_y) @ self.scale_y + self.scale_b
        iterations, converged = np.full(batch, max_iter), np.zeros(batch, dtype=bool)
        rows, u_a, offset_a = np.arange(batch), u, offset
        for it in range(1, max_iter + 1):
            h_hat = np.maximum(u_a, 0.0)
            h = h_hat @ self.propagate - self.damp * u_a + offset_a
            for prev, block, coupling in self.coupling:
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
        x = self.layer.input_from_hidden(y, np.maximum(u, 0.0))
        return DavisYinResult(x, u, iterations, converged)
