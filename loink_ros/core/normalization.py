"""Normalisation between robot units and network units (docs/MODEL_FORMAT.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the runtime loads Normalization without the dataset code (tqdm)
    from loink_ros.core.dataset import Dataset


@dataclass
class Normalization:
    """Joint limits -> [-1, 1]; task and cost standardised by dataset mean and std."""

    x_lower: np.ndarray
    x_upper: np.ndarray
    y_mean: np.ndarray
    y_std: np.ndarray
    cost_mean: float
    cost_std: float

    @classmethod
    def fit(cls, dataset: Dataset, lower: np.ndarray, upper: np.ndarray) -> Normalization:
        """From the joint limits and a training set."""
        return cls(np.asarray(lower, float), np.asarray(upper, float), dataset.y.mean(0),
                   dataset.y.std(0), float(dataset.cost.mean()), float(dataset.cost.std()))

    @classmethod
    def from_dict(cls, data: dict) -> Normalization:
        """From the JSON metadata."""
        arrays = {k: np.asarray(data[k], float) for k in ('x_lower', 'x_upper', 'y_mean', 'y_std')}
        return cls(**arrays, cost_mean=float(data['cost_mean']), cost_std=float(data['cost_std']))

    def to_dict(self) -> dict:
        """For the JSON metadata."""
        return {'x_lower': self.x_lower.tolist(), 'x_upper': self.x_upper.tolist(),
                'y_mean': self.y_mean.tolist(), 'y_std': self.y_std.tolist(),
                'cost_mean': self.cost_mean, 'cost_std': self.cost_std}

    def x_to_net(self, x: np.ndarray) -> np.ndarray:
        """Joint units -> [-1, 1]."""
        return 2.0 * (x - self.x_lower) / (self.x_upper - self.x_lower) - 1.0

    def x_from_net(self, x_n: np.ndarray) -> np.ndarray:
        """[-1, 1] -> joint units."""
        return self.x_lower + 0.5 * (x_n + 1.0) * (self.x_upper - self.x_lower)

    def y_to_net(self, y: np.ndarray) -> np.ndarray:
        """Task units -> standardised."""
        return (y - self.y_mean) / self.y_std

    def y_from_net(self, y_n: np.ndarray) -> np.ndarray:
        """Standardised -> task units."""
        return self.y_mean + self.y_std * y_n

    def cost_from_net(self, cost_n: np.ndarray) -> np.ndarray:
        """Standardised -> cost units."""
        return self.cost_mean + self.cost_std * cost_n
