"""The learned optimum inside the limits (core/runtime/bounded_latent.py): the least-norm
latent whose inverse is inside a box that z = 0's answer leaves."""
import numpy as np

from loink_ros.core.runtime.bounded_latent import least_latent_inside
from loink_ros.core.runtime.model_file import load_model


def test_the_least_norm_latent_inside_a_box_that_z0_leaves():
    model = load_model('planar3')
    inverse, norm = model.inverse, model.normalization
    rng = np.random.default_rng(8)
    y_n = norm.y_to_net(np.array([[0.45]]))[0]
    z0 = inverse(np.concatenate([y_n, [0.0, 0.0]])[None])
    # A box around the answers of latents about 0.6 from 0: z = 0's answer is outside it.
    shifted = inverse(np.concatenate([y_n, [0.6, -0.3]])[None]).x[0]
    lower, upper = shifted - 0.15, shifted + 0.15
    assert np.any((z0.x[0] < lower) | (z0.x[0] > upper))
    x, z, converged = least_latent_inside(inverse, y_n, lower, upper, z0, 'newton', 1e-10, 100)
    assert converged and np.all(x >= lower - 1e-9) and np.all(x <= upper + 1e-9)
    out = model.network.forward(x[None])[0]
    assert np.abs(out[:1] - y_n).max() <= 1e-8 and np.allclose(out[1:], z, atol=1e-8)
    # No latent with an answer inside the box is shorter, by a dense search around it.
    trial = z + rng.uniform(-0.3, 0.3, (3000, 2))
    answers = inverse(np.hstack([np.repeat(y_n[None], len(trial), 0), trial])).x
    inside = np.all((answers >= lower) & (answers <= upper), axis=1)
    assert inside.sum() > 50
    assert np.linalg.norm(z) <= np.linalg.norm(trial[inside], axis=1).min() + 1e-6
