"""Cayley map: a free matrix to one with orthonormal columns (or rows, if wide)."""

import torch


def cayley(weight: torch.Tensor) -> torch.Tensor:
    """Map an (m, k) matrix to an (m, k) matrix with orthonormal columns (rows if m < k)."""
    rows, cols = weight.shape
    if rows < cols:
        return cayley(weight.T).T
    upper, lower = weight[:cols], weight[cols:]
    eye = torch.eye(cols, dtype=weight.dtype, device=weight.device)
    z = upper - upper.T + lower.T @ lower
    top = torch.linalg.solve(eye + z, eye - z)
    # -2 V (I + Z)^-1, written as a solve with the transpose.
    bottom = -2.0 * torch.linalg.solve((eye + z).T, lower.T).T
    return torch.cat([top, bottom], dim=0)


def scaled_cayley(weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Cayley map of the weight rescaled to Frobenius norm `scale`."""
    return cayley(scale * weight / weight.norm())
