"""Solving M(x) = y for one monotone layer by semismooth Newton (METHOD.md s.3).

Batched over rows, each row stopped on its own tolerance; a row that hits max_iter is
reported unconverged.
"""

from dataclasses import dataclass

import numpy as np

from loink_ros.core.runtime.monotone_map import MonotoneMap

# Line search: sufficient decrease factor and the most step halvings per iteration.
ARMIJO = 1e-4
MAX_HALVINGS = 30


@dataclass
class NewtonResult:
    """Solution x (B, n), per-row iterations and convergence."""

    x: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


class NewtonInverse:
    """M^-1 by semismooth Newton, backtracking on max |F|; a row stops at max |F| <= tol."""

    def __init__(self, layer: MonotoneMap):
        # scipy.linalg takes ~0.2 s to import: it loads with the first model, not the runtime.
        from scipy.linalg import lapack
        self.layer = layer
        self._dgesv = lapack.dgesv
        # Linearisation at x = 0: the cold start is one product, not a Jacobian and a solve.
        origin = np.zeros(layer.dim)
        h_origin = layer.preactivation(origin)[1]
        self.origin_output = layer.output(origin, h_origin)
        self.origin_inverse_t = np.linalg.inv(layer.jacobian_at(h_origin)).T

    def solve(self, y: np.ndarray, tol: float, max_iter: int,
              x0: np.ndarray | None = None) -> NewtonResult:
        """x with M(x) = y for a batch (B, n); without x0 the first iteration is the step
        from x = 0."""
        if x0 is not None:
            x, start = np.array(x0, dtype=np.float64), 0
        elif max_iter > 0:
            x, start = (y - self.origin_output) @ self.origin_inverse_t, 1
        else:
            x, start = np.zeros_like(y), 0
        if len(y) == 1:
            x_row, iterations, converged = self._solve_row(y[0], tol, start, max_iter, x[0])
            return NewtonResult(x_row[None], np.array([iterations]), np.array([converged]))
        return self._solve_batch(y, tol, start, max_iter, x)

    def _solve_batch(self, y: np.ndarray, tol: float, start: int, max_iter: int,
                     x: np.ndarray) -> NewtonResult:
        """Newton iterations from x (updated in place), dropping rows as they converge."""
        layer, batch = self.layer, len(y)
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
            x_a, h, f, f_max = self._line_search(x_a, y_a, step, f_max)
        x[rows] = x_a
        return NewtonResult(x, iterations, converged)

    def _line_search(self, x: np.ndarray, y: np.ndarray, step: np.ndarray,
                     f_max: np.ndarray) -> tuple[np.ndarray, ...]:
        """x - t step, t halved per row until max |F| <= (1 - ARMIJO t) f_max; gives x, h, F,
        max |F|.

        The Newton direction decreases every norm of F to first order,
        F(x - t step) ~ (1 - t) F(x), so some t > 0 passes; after MAX_HALVINGS the last
        trial is taken.
        """
        layer = self.layer
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

    def _solve_row(self, y: np.ndarray, tol: float, start: int, max_iter: int,
                   x: np.ndarray) -> tuple[np.ndarray, int, bool]:
        """_solve_batch and _line_search for one row (n,): same iterates, far fewer numpy
        calls."""
        layer = self.layer
        h = layer.preactivation(x)[1]
        f = layer.output(x, h) - y
        f_max = np.abs(f).max()
        for it in range(start, max_iter + 1):
            if f_max <= tol:
                return x, it, True
            if it == max_iter:
                break
            # LAPACK directly: np.linalg.solve's overhead is several times a 3x3..20x20 solve.
            _, _, step, info = self._dgesv(layer.jacobian_at(h), f)
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
