"""Structured cost head J_hat(z, y) = 0.5 ||z||^2 + phi(y) (METHOD.md s.1)."""

import torch
from torch import nn

from loink_ros.core.network.arrays import to_numpy


class CostHead(nn.Module):
    """phi(y): a small softplus MLP giving the minimum cost over the task's self-motion set."""

    def __init__(self, task_dim: int, hidden: list[int]):
        super().__init__()
        sizes = [task_dim, *hidden, 1]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def phi(self, y: torch.Tensor) -> torch.Tensor:
        """Minimum cost at task y, shape (batch,)."""
        for linear in self.linears[:-1]:
            y = nn.functional.softplus(linear(y))
        return self.linears[-1](y)[..., 0]

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Predicted cost of latent z at task y."""
        return 0.5 * (z * z).sum(-1) + self.phi(y)

    def explicit_weights(self) -> dict:
        """Plain arrays the numpy runtime needs."""
        with torch.no_grad():
            return {'activation': 'softplus', 'layers': [
                {'W': to_numpy(layer.weight), 'b': to_numpy(layer.bias)} for layer in self.linears]}
