"""A loaded model as the two flat arrays kernel.c reads (docs/COMPILED.md): integers (sizes)
and reals (weights, normalisation, the robot's joint limits), in the kernel's order; the
couplings V both as they are and transposed, and the cost head's W transposed, so the
kernel's products run along memory."""

import numpy as np

from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime.model_file import ModelFile


def pack(model: ModelFile, problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """(ints int32, reals float64) of `model`, clipping to `problem`'s joint limits."""
    network, norm, head = model.network, model.normalization, model.cost_head.weights
    ints = [network.dim, model.task_dim, len(network.monotone), len(head)]
    reals = [norm.x_lower, norm.x_upper, norm.y_mean, norm.y_std,
             [norm.cost_mean, norm.cost_std], problem.lower, problem.upper]
    for orth in network.orthogonal:
        reals += [orth.R, orth.b]
    for layer, newton in zip(network.monotone, model.inverse.newton):
        starts = [s.start for s in layer.slices] + [layer.slices[-1].stop]
        ints += [layer.width, len(layer.slices), *starts]
        couplings = [m for v in layer.V for m in (v, v.T)]
        reals += [[layer.mu, layer.gamma], layer.w_in, layer.b, *couplings, layer.w_out,
                  layer.b_y, layer.S, newton.origin_output, newton.origin_inverse_t]
    for w, b in head:
        ints += [w.shape[1], w.shape[0]]
        reals += [w.T, b]
    flat = np.concatenate([np.ascontiguousarray(r, dtype=np.float64).ravel() for r in reals])
    return np.array(ints, dtype=np.int32), flat
