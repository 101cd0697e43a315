"""The trained LOInK network: BiLipNet G(x_n) = [y_n; z] plus the structured cost head."""

from dataclasses import dataclass, field

import torch
from torch import nn

from loink_ros.core.network.bilipnet import BiLipNet
from loink_ros.core.network.cost_head import CostHead


@dataclass
class NetworkConfig:
    """Architecture of a LOInK network."""

    blocks: list[int] = field(default_factory=lambda: [64, 64])
    depth: int = 2
    mu: float = 0.1
    nu: float = 10.0
    learn_bounds: bool = False
    cost_hidden: list[int] = field(default_factory=lambda: [64, 64])


class LOInKNet(nn.Module):
    """Works in normalised units; `loss` is METHOD.md s.1's training loss."""

    def __init__(self, dim: int, task_dim: int, config: NetworkConfig):
        super().__init__()
        self.dim, self.task_dim = dim, task_dim
        self.bilipnet = BiLipNet(dim, config.blocks, config.depth, config.mu, config.nu,
                                 config.learn_bounds)
        self.cost_head = CostHead(task_dim, config.cost_hidden)

    def forward(self, x_n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Normalised configuration -> (task y_n, latent z, predicted cost J_n)."""
        out = self.bilipnet(x_n)
        y_n, z = out[:, :self.task_dim], out[:, self.task_dim:]
        return y_n, z, self.cost_head(z, y_n)

    def loss(self, x_n: torch.Tensor, y_n: torch.Tensor, cost_n: torch.Tensor,
             cost_weight: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(total, task term, cost term): mean ||y_hat - y||^2 + lambda mean (J_hat - J)^2."""
        y_hat, _, cost_hat = self(x_n)
        task_loss = ((y_hat - y_n) ** 2).sum(-1).mean()
        cost_loss = ((cost_hat - cost_n) ** 2).mean()
        return task_loss + cost_weight * cost_loss, task_loss, cost_loss
