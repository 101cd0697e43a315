"""BiLipNet G = R_d M_d ... R_1 M_1 R_0: bi-Lipschitz with bounds (mu, nu) by construction."""

import torch
from torch import nn

from loink_ros.core.network.monotone_layer import MonotoneLayer
from loink_ros.core.network.orthogonal_layer import OrthogonalLayer


class BiLipNet(nn.Module):
    """Invertible map R^n -> R^n; each of the `depth` monotone layers gets (mu, nu)^(1/depth)."""

    def __init__(self, dim: int, blocks: list[int], depth: int = 2, mu: float = 0.1,
                 nu: float = 10.0, learn_bounds: bool = False):
        super().__init__()
        mu_k, nu_k = mu ** (1.0 / depth), nu ** (1.0 / depth)
        layers: list[nn.Module] = [OrthogonalLayer(dim)]
        for _ in range(depth):
            layers += [MonotoneLayer(dim, blocks, mu_k, nu_k, learn_bounds), OrthogonalLayer(dim)]
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply G to a batch of row vectors."""
        for layer in self.layers:
            x = layer(x)
        return x

    def bounds(self) -> tuple[float, float]:
        """The (mu, nu) bi-Lipschitz bounds the layers currently guarantee."""
        mu, nu = 1.0, 1.0
        for layer in self.layers:
            if isinstance(layer, MonotoneLayer):
                mu *= float(layer.mu.detach())
                nu *= float((layer.mu + layer.gamma).detach())
        return mu, nu

    def explicit_weights(self) -> list[dict]:
        """Per-layer plain arrays, in forward order."""
        return [layer.explicit_weights() for layer in self.layers]
