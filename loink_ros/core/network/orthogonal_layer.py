"""Orthogonal affine layer x -> R x + b with R from a Cayley map."""

import torch
from torch import nn

from loink_ros.core.network.arrays import to_numpy
from loink_ros.core.network.cayley import scaled_cayley


class OrthogonalLayer(nn.Module):
    """Affine map with an orthogonal matrix: exactly invertible, Lipschitz 1 both ways."""

    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, dim))
        nn.init.xavier_normal_(self.weight)
        self.scale = nn.Parameter(self.weight.detach().norm().clone())
        self.bias = nn.Parameter(torch.zeros(dim))

    def matrix(self) -> torch.Tensor:
        """The orthogonal matrix R."""
        return scaled_cayley(self.weight, self.scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply x -> R x + b to a batch of row vectors."""
        return x @ self.matrix().T + self.bias

    def explicit_weights(self) -> dict:
        """Plain arrays the numpy runtime needs."""
        with torch.no_grad():
            return {'kind': 'orthogonal', 'R': to_numpy(self.matrix()), 'b': to_numpy(self.bias)}
