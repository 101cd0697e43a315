"""Numpy BiLipNet G = R_d M_d ... R_1 M_1 R_0: forward, Jacobian, inverse (METHOD.md s.2-3)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from loink_ros.core.runtime import monotone_inverse


def as_float_array(value: Any) -> np.ndarray:
    """float64 array from an array or nested lists (as read from JSON)."""
    return np.asarray(value, dtype=np.float64)


class OrthogonalMap:
    """x -> R x + b with R orthogonal; inverse R^T (y - b)."""

    def __init__(self, R: Any, b: Any):
        self.R, self.b = as_float_array(R), as_float_array(b)
        if self.R.ndim != 2 or self.R.shape != (len(self.b), len(self.b)):
            raise ValueError(f'R {self.R.shape} and b {self.b.shape} do not match')

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Apply the map to a batch (B, n)."""
        return x @ self.R.T + self.b

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """Exact inverse on a batch (B, n)."""
        return (y - self.b) @ self.R


class MonotoneMap:
    """M(x) = mu x + sqrt(gamma/2) sum_l S_l^T h_l + b_y, h_l a ReLU recursion over blocks."""

    def __init__(self, mu: float, gamma: float, b_y: Any, blocks: Sequence[dict]):
        self.mu, self.gamma = float(mu), float(gamma)
        self.b_y = as_float_array(b_y)
        self.S = np.vstack([as_float_array(block['S']) for block in blocks])
        self.b = np.concatenate([as_float_array(block['b']) for block in blocks])
        edges = np.cumsum([0] + [len(block['b']) for block in blocks])
        self.slices = [slice(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]
        self.V = _couplings(blocks, self.slices)
        self.width, self.dim = self.S.shape
        # Forward constants; dM/dx = mu I + gamma S^T G with G = dh/dx / sqrt(2 gamma).
        self._w_in = np.sqrt(2.0 * self.gamma) * self.S.T
        self._w_out = np.sqrt(0.5 * self.gamma) * self.S
        # (previous block, block, coupling) indexing both rows (n,) and batches (B, n).
        pairs = [((..., prev), (..., sl)) for prev, sl in zip(self.slices, self.slices[1:])]
        self._forward_chain = [(p, s, v.T.copy()) for (p, s), v in zip(pairs, self.V)]
        self._jacobian_chain = [((*p, slice(None)), (*s, slice(None)), v)
                                for (p, s), v in zip(pairs, self.V)]
        self._jac_out = self.gamma * self.S.T
        self._mu_eye = self.mu * np.eye(self.dim)
        # Linearisation at x = 0: the cold Newton start is one product, not a Jacobian and a solve.
        origin = np.zeros(self.dim)
        h_origin = self.preactivation(origin)[1]
        self._origin_output = self.output(origin, h_origin)
        self._origin_inverse_t = np.linalg.inv(self.jacobian_at(h_origin)).T

    @cached_property
    def splitting(self) -> monotone_inverse.SplittingOperators:
        """Davis-Yin constants, built on first use."""
        return monotone_inverse.SplittingOperators.from_layer(self)

    def preactivation(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pre-activations z and hidden units h = relu(z), shape (..., N) for x (..., n)."""
        z = x @ self._w_in + self.b
        h = np.maximum(z, 0.0)  # exact for the first block; the others are redone in order
        for prev, block, v_t in self._forward_chain:
            z_block = z[block]
            z_block += h[prev] @ v_t
            np.maximum(z_block, 0.0, out=h[block])
        return z, h

    def output(self, x: np.ndarray, h: np.ndarray) -> np.ndarray:
        """M(x) given the hidden units h at x."""
        return self.mu * x + h @ self._w_out + self.b_y

    def input_from_hidden(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        """The x with M(x) = y when h are the hidden units at x (METHOD.md s.3)."""
        return (y - self.b_y - h @ self._w_out) / self.mu

    def jacobian_at(self, h: np.ndarray) -> np.ndarray:
        """dM/dx (..., n, n) from the hidden units h (..., N) at x; relu'(0) = 0."""
        active = (h > 0.0)[..., None]
        g = active * self.S
        # Block by block: G_l = D_l (S_l + V_l G_(l-1)).
        for prev, block, v in self._jacobian_chain:
            g_block = g[block]
            g_block += active[block] * (v @ g[prev])
        jac = self._jac_out @ g
        jac += self._mu_eye
        return jac

    def origin_step(self, y: np.ndarray) -> np.ndarray:
        """The Newton step for M(x) = y from x = 0."""
        return (y - self._origin_output) @ self._origin_inverse_t

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Apply M to a batch (B, n)."""
        return self.output(x, self.preactivation(x)[1])

    def forward_with_jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """M(x) (B, n) and dM/dx (B, n, n)."""
        h = self.preactivation(x)[1]
        return self.output(x, h), self.jacobian_at(h)


def _couplings(blocks: Sequence[dict], slices: list[slice]) -> list[np.ndarray]:
    """V_(l,l-1) for l >= 2, shape-checked; the first block must have none."""
    if blocks[0].get('V') is not None:
        raise ValueError('the first monotone block must have V = null')
    couplings = []
    for prev, sl, block in zip(slices, slices[1:], blocks[1:]):
        v = as_float_array(block['V'])
        if v.shape != (sl.stop - sl.start, prev.stop - prev.start):
            raise ValueError(f'V of shape {v.shape} does not fit blocks {prev}, {sl}')
        couplings.append(v)
    return couplings


@dataclass
class InverseState:
    """Per monotone layer (forward order): Davis-Yin u (B, N) and solution x (B, n).

    A Newton solve leaves u[k] None: deriving it costs ~10% of the solve, and splitting()
    recovers it exactly from x[k] when Davis-Yin is warm-started from this state.
    """

    u: list[np.ndarray | None]
    x: list[np.ndarray]

    def splitting(self, layer: MonotoneMap, k: int) -> np.ndarray:
        """The Davis-Yin u of monotone layer k, derived from x[k] where the solve was Newton."""
        u = self.u[k]
        return monotone_inverse.splitting_state(layer, self.x[k]) if u is None else u


@dataclass
class InverseResult:
    """G^-1(w), the warm-start state, iterations per layer (max over rows), success per row."""

    x: np.ndarray
    state: InverseState
    iterations: list[int]
    converged: np.ndarray


# Per method: (default tolerance, default iteration cap).
INVERSE_DEFAULTS = {'newton': (1e-10, 50), 'davis_yin': (1e-6, 5000)}


class BiLipMap:
    """The bi-Lipschitz map G of a trained model, from its explicit weights."""

    def __init__(self, orthogonal: list[OrthogonalMap], monotone: list[MonotoneMap]):
        if len(orthogonal) != len(monotone) + 1:
            raise ValueError('need layers R_0, M_1, R_1, ..., M_d, R_d')
        self.orthogonal, self.monotone = orthogonal, monotone
        self.dim = len(orthogonal[0].b)
        dims = {len(orth.b) for orth in orthogonal} | {mono.dim for mono in monotone}
        if dims != {self.dim}:
            raise ValueError(f'layers disagree on the dimension: {sorted(dims)}')

    @classmethod
    def from_weights(cls, layers: Sequence[dict]) -> BiLipMap:
        """Build from the per-layer dicts of docs/MODEL_FORMAT.md, in forward order."""
        kinds = [layer['kind'] for layer in layers]
        if kinds != ['orthogonal', *['monotone', 'orthogonal'] * (len(kinds) // 2)]:
            raise ValueError(f'need kinds orthogonal, monotone, ..., orthogonal; got {kinds}')
        orthogonal = [OrthogonalMap(layer['R'], layer['b']) for layer in layers[0::2]]
        monotone = [MonotoneMap(layer['mu'], layer['gamma'], layer['b_y'], layer['blocks'])
                    for layer in layers[1::2]]
        return cls(orthogonal, monotone)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """G(x) for a batch (B, n)."""
        x = self.orthogonal[0].forward(x)
        for mono, orth in zip(self.monotone, self.orthogonal[1:]):
            x = orth.forward(mono.forward(x))
        return x

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """dG/dx, shape (B, n, n)."""
        x = self.orthogonal[0].forward(x)
        jac = np.broadcast_to(self.orthogonal[0].R, (len(x), self.dim, self.dim))
        for mono, orth in zip(self.monotone, self.orthogonal[1:]):
            x, jac_m = mono.forward_with_jacobian(x)
            x, jac = orth.forward(x), orth.R @ jac_m @ jac
        return jac

    def state_at(self, x: np.ndarray) -> InverseState:
        """The inverse's state at configurations x (B, n): a warm start for w near G(x)."""
        inputs = []
        x = self.orthogonal[0].forward(x)
        for mono, orth in zip(self.monotone, self.orthogonal[1:]):
            inputs.append(x)
            x = orth.forward(mono.forward(x))
        return InverseState([None] * len(inputs), inputs)

    def inverse(self, w: np.ndarray, method: str = 'newton', tol: float | None = None,
                max_iter: int | None = None, warm_start: InverseState | None = None
                ) -> InverseResult:
        """G^-1(w) for a batch (B, n), layer by layer from the output (METHOD.md s.3).

        method 'newton' (default tol 1e-10 on max |M(x) - y|) or 'davis_yin' (default tol 1e-6
        on ||h - h_hat||), per monotone layer; warm_start is a previous result's state.
        """
        if method not in INVERSE_DEFAULTS:
            raise ValueError(f'unknown method {method!r}; use one of {sorted(INVERSE_DEFAULTS)}')
        w = as_float_array(w)
        if w.ndim != 2 or w.shape[1] != self.dim:
            raise ValueError(f'expected a batch of shape (B, {self.dim}), got {w.shape}')
        default_tol, default_iter = INVERSE_DEFAULTS[method]
        tol = default_tol if tol is None else tol
        max_iter = default_iter if max_iter is None else max_iter
        depth = len(self.monotone)
        state = InverseState([None] * depth, [None] * depth)
        iterations, converged = [0] * depth, np.ones(len(w), dtype=bool)
        x = self.orthogonal[-1].inverse(w)
        for k in reversed(range(depth)):
            layer = self.monotone[k]
            if method == 'newton':
                x0 = None if warm_start is None else warm_start.x[k]
                solved = monotone_inverse.newton_solve(layer, x, tol, max_iter, x0)
            else:
                u0 = None if warm_start is None else warm_start.splitting(layer, k)
                solved = monotone_inverse.davis_yin_solve(layer, x, tol, max_iter, u0)
                state.u[k] = solved.u
            state.x[k], converged = solved.x, converged & solved.converged
            iterations[k] = int(solved.iterations.max(initial=0))
            x = self.orthogonal[k].inverse(solved.x)
        return InverseResult(x, state, iterations, converged)
