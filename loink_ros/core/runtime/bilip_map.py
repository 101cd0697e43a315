"""The BiLipNet G = R_d M_d ... R_1 M_1 R_0 from explicit weights: forward and Jacobian."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from loink_ros.core.runtime.monotone_map import MonotoneMap
from loink_ros.core.runtime.orthogonal_map import OrthogonalMap


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

    def monotone_inputs(self, x: np.ndarray) -> list[np.ndarray]:
        """What each monotone layer receives on the way from x (B, n) to G(x), forward order."""
        inputs = []
        x = self.orthogonal[0].forward(x)
        for mono, orth in zip(self.monotone, self.orthogonal[1:]):
            inputs.append(x)
            x = orth.forward(mono.forward(x))
        return inputs
