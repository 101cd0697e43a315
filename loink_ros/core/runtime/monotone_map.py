"""The monotone layer M of the BiLipNet: forward, pre-activations, Jacobian (METHOD.md s.2)."""

from typing import Any, Sequence

import numpy as np


class MonotoneMap:
    """M(x) = mu x + sqrt(gamma/2) sum_l S_l^T h_l + b_y, h_l a ReLU recursion over blocks."""

    def __init__(self, mu: float, gamma: float, b_y: Any, blocks: Sequence[dict]):
        self.mu, self.gamma = float(mu), float(gamma)
        self.b_y = np.asarray(b_y, dtype=np.float64)
        self.S = np.vstack([np.asarray(block['S'], dtype=np.float64) for block in blocks])
        self.b = np.concatenate([np.asarray(block['b'], dtype=np.float64) for block in blocks])
        edges = np.cumsum([0] + [len(block['b']) for block in blocks])
        self.slices = [slice(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]
        self.V = _couplings(blocks, self.slices)
        self.width, self.dim = self.S.shape
        # Forward constants; dM/dx = mu I + gamma S^T G with G = dh/dx / sqrt(2 gamma).
        self.w_in = np.sqrt(2.0 * self.gamma) * self.S.T
        self.w_out = np.sqrt(0.5 * self.gamma) * self.S
        # (previous block, block, coupling) indexing both rows (n,) and batches (B, n).
        pairs = [((..., prev), (..., sl)) for prev, sl in zip(self.slices, self.slices[1:])]
        self._forward_chain = [(p, s, v.T.copy()) for (p, s), v in zip(pairs, self.V)]
        self._jacobian_chain = [((*p, slice(None)), (*s, slice(None)), v)
                                for (p, s), v in zip(pairs, self.V)]
        self._jac_out = self.gamma * self.S.T
        self._mu_eye = self.mu * np.eye(self.dim)

    def preactivation(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pre-activations z and hidden units h = relu(z), shape (..., N) for x (..., n)."""
        z = x @ self.w_in + self.b
        h = np.maximum(z, 0.0)  # exact for the first block; the others are redone in order
        for prev, block, v_t in self._forward_chain:
            z_block = z[block]
            z_block += h[prev] @ v_t
            np.maximum(z_block, 0.0, out=h[block])
        return z, h

    def output(self, x: np.ndarray, h: np.ndarray) -> np.ndarray:
        """M(x) given the hidden units h at x."""
        return self.mu * x + h @ self.w_out + self.b_y

    def input_from_hidden(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        """The x with M(x) = y when h are the hidden units at x (METHOD.md s.3)."""
        return (y - self.b_y - h @ self.w_out) / self.mu

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
        v = np.asarray(block['V'], dtype=np.float64)
        if v.shape != (sl.stop - sl.start, prev.stop - prev.start):
            raise ValueError(f'V of shape {v.shape} does not fit blocks {prev}, {sl}')
        couplings.append(v)
    return couplings
