"""The orthogonal layer R of the BiLipNet (METHOD.md s.2)."""

from typing import Any

import numpy as np


class OrthogonalMap:
    """x -> R x + b with R orthogonal; inverse R^T (y - b)."""

    def __init__(self, R: Any, b: Any):
        self.R, self.b = np.asarray(R, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if self.R.ndim != 2 or self.R.shape != (len(self.b), len(self.b)):
            raise ValueError(f'R {self.R.shape} and b {self.b.shape} do not match')

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Apply the map to a batch (B, n)."""
        return x @ self.R.T + self.b

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """Exact inverse on a batch (B, n)."""
        return (y - self.b) @ self.R
