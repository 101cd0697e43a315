"""G^-1 of the BiLipNet, layer by layer from the output (METHOD.md s.3), with warm starts."""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from loink_ros.core.runtime.bilip_map import BiLipMap
from loink_ros.core.runtime.davis_yin_inverse import DavisYinInverse
from loink_ros.core.runtime.newton_inverse import NewtonInverse

# Per method: (default tolerance, default iteration cap).
INVERSE_DEFAULTS = {'newton': (1e-10, 50), 'davis_yin': (1e-6, 5000)}


@dataclass
class InverseState:
    """Per monotone layer (forward order): Davis-Yin u (B, N) and solution x (B, n); x may
    also be one array (depth, B, n), as the compiled runtime gives it.

    A Newton solve leaves u[k] None: deriving it costs ~10% of the solve, and splitting()
    recovers it exactly from x[k] when Davis-Yin is warm-started from this state.
    """

    u: list[np.ndarray | None]
    x: list[np.ndarray] | np.ndarray

    def splitting(self, solver: DavisYinInverse, k: int) -> np.ndarray:
        """The Davis-Yin u of monotone layer k, derived from x[k] where the solve was Newton."""
        u = self.u[k]
        return solver.fixed_point(self.x[k]) if u is None else u


@dataclass
class InverseResult:
    """G^-1(w), the warm-start state, iterations per layer (max over rows), success per row."""

    x: np.ndarray
    state: InverseState
    iterations: list[int]
    converged: np.ndarray


class NetworkInverse:
    """G^-1 for a BiLipMap: one Newton or Davis-Yin solve per monotone layer, the orthogonal
    layers inverted exactly."""

    def __init__(self, network: BiLipMap):
        self.network = network
        self.newton = [NewtonInverse(layer) for layer in network.monotone]

    @cached_property
    def davis_yin(self) -> list[DavisYinInverse]:
        """Davis-Yin constants per monotone layer, built on first use."""
        return [DavisYinInverse(layer) for layer in self.network.monotone]

    def state_at(self, x: np.ndarray) -> InverseState:
        """The state at configurations x (B, n): a warm start for w near G(x)."""
        inputs = self.network.monotone_inputs(x)
        return InverseState([None] * len(inputs), inputs)

    def __call__(self, w: np.ndarray, method: str = 'newton', tol: float | None = None,
                 max_iter: int | None = None, warm_start: InverseState | None = None
                 ) -> InverseResult:
        """G^-1(w) for a batch (B, n).

        method 'newton' (default tol 1e-10 on max |M(x) - y|) or 'davis_yin' (default tol 1e-6
        on ||h - h_hat||), per monotone layer; warm_start is a previous result's state.
        """
        if method not in INVERSE_DEFAULTS:
            raise ValueError(f'unknown method {method!r}; use one of {sorted(INVERSE_DEFAULTS)}')
        network = self.network
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 2 or w.shape[1] != network.dim:
            raise ValueError(f'expected a batch of shape (B, {network.dim}), got {w.shape}')
        default_tol, default_iter = INVERSE_DEFAULTS[method]
        tol = default_tol if tol is None else tol
        max_iter = default_iter if max_iter is None else max_iter
        depth = len(network.monotone)
        state = InverseState([None] * depth, [None] * depth)
        iterations, converged = [0] * depth, np.ones(len(w), dtype=bool)
        x = network.orthogonal[-1].inverse(w)
        for k in reversed(range(depth)):
            if method == 'newton':
                x0 = None if warm_start is None else warm_start.x[k]
                solved = self.newton[k].solve(x, tol, max_iter, x0)
            else:
                solver = self.davis_yin[k]
                u0 = None if warm_start is None else warm_start.splitting(solver, k)
                solved = solver.solve(x, tol, max_iter, u0)
                state.u[k] = solved.u
            state.x[k], converged = solved.x, converged & solved.converged
            iterations[k] = int(solved.iterations.max(initial=0))
            x = network.orthogonal[k].inverse(solved.x)
        return InverseResult(x, state, iterations, converged)
