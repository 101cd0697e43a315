"""Monotone layer: mu-strongly monotone and nu-Lipschitz by construction (METHOD.md s.2)."""

import math

import torch
from torch import nn

from loink_ros.core.network.arrays import to_numpy
from loink_ros.core.network.cayley import scaled_cayley


class MonotoneLayer(nn.Module):
    """M(x) = mu x + sqrt(gamma/2) sum_l S_l^T h_l + b_y with h_l a ReLU recursion over blocks."""

    def __init__(self, dim: int, blocks: list[int], mu: float, nu: float, learn_bounds: bool = False):
        super().__init__()
        if not 0.0 < mu < nu:
            raise ValueError(f'need 0 < mu < nu, got mu={mu}, nu={nu}')
        self.dim, self.blocks = dim, list(blocks)
        log_mu, log_gamma = torch.tensor(math.log(mu)), torch.tensor(math.log(nu - mu))
        if learn_bounds:
            self.log_mu, self.log_gamma = nn.Parameter(log_mu), nn.Parameter(log_gamma)
        else:
            self.register_buffer('log_mu', log_mu)
            self.register_buffer('log_gamma', log_gamma)
        self.fq = nn.Parameter(nn.init.xavier_normal_(torch.empty(sum(blocks), dim)))
        self.fq_scale = nn.Parameter(self.fq.detach().norm().clone())
        self.fr = nn.ParameterList()
        self.fr_scale = nn.ParameterList()
        previous = 0
        for width in blocks:
            f = nn.init.xavier_normal_(torch.empty(width + previous, width))
            self.fr.append(nn.Parameter(f))
            self.fr_scale.append(nn.Parameter(f.detach().norm().clone()))
            previous = width
        self.bias = nn.Parameter(torch.zeros(sum(blocks)).uniform_(-0.5, 0.5))
        self.bias_y = nn.Parameter(torch.zeros(dim))

    @property
    def mu(self) -> torch.Tensor:
        """Strong monotonicity bound."""
        return self.log_mu.exp()

    @property
    def gamma(self) -> torch.Tensor:
        """nu - mu."""
        return self.log_gamma.exp()

    def block_weights(self) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Per block (S_l, V_l,l-1); V is None for the first block."""
        q = scaled_cayley(self.fq, self.fq_scale)
        out, start, a_prev, q_prev = [], 0, None, None
        for width, f, scale in zip(self.blocks, self.fr, self.fr_scale):
            ab_t = scaled_cayley(f, scale)
            a, b = ab_t[:width].T, ab_t[width:].T
            q_l = q[start:start + width]
            if a_prev is None:
                s, v = a @ q_l, None
            else:
                s, v = a @ q_l - b @ q_prev, 2.0 * b @ a_prev.T
            out.append((s, v))
            start, a_prev, q_prev = start + width, a, q_l
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply M to a batch of row vectors."""
        gamma = self.gamma
        out = self.mu * x + self.bias_y
        h, start = None, 0
        for (s, v), width in zip(self.block_weights(), self.blocks):
            pre = math.sqrt(2.0) * gamma.sqrt() * x @ s.T + self.bias[start:start + width]
            if v is not None:
                pre = pre + h @ v.T
            h = torch.relu(pre)
            out = out + (gamma / 2.0).sqrt() * h @ s
            start += width
        return out

    def explicit_weights(self) -> dict:
        """Plain arrays the numpy runtime needs."""
        with torch.no_grad():
            blocks, start = [], 0
            for (s, v), width in zip(self.block_weights(), self.blocks):
                blocks.append({'S': to_numpy(s), 'V': None if v is None else to_numpy(v),
                               'b': to_numpy(self.bias[start:start + width])})
                start += width
            return {'kind': 'monotone', 'mu': float(self.mu), 'gamma': float(self.gamma),
                    'b_y': to_numpy(self.bias_y), 'blocks': blocks}
