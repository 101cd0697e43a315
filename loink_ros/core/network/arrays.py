"""Conversion of trained tensors to plain float64 arrays for export."""

import numpy as np
import torch


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """Detached float64 numpy copy."""
    return tensor.detach().cpu().double().numpy()
