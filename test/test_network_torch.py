"""The torch building blocks: Cayley map, monotone layers, BiLipNet bounds, cost head."""
import numpy as np
import pytest
import torch

from loink_ros.core.network.bilipnet import BiLipNet
from loink_ros.core.network.cayley import cayley, scaled_cayley
from loink_ros.core.network.cost_head import CostHead
from loink_ros.core.network.monotone_layer import MonotoneLayer

TOL = 1e-9


def jacobians(fn, x: torch.Tensor) -> torch.Tensor:
    """d fn / dx at every row of x (B, n) -> (B, n_out, n); fn acts row-wise."""
    return torch.func.vmap(torch.func.jacrev(lambda row: fn(row[None])[0]))(x)


def perturbed(module: torch.nn.Module, seed: int, learned: bool) -> torch.nn.Module:
    """float64 copy with trained-looking parameters; learned log-bounds moved too."""
    torch.manual_seed(seed)
    module = module.double()
    with torch.no_grad():
        for name, param in module.named_parameters():
            if name.endswith('bias') or name.endswith('bias_y'):
                param.normal_(0.0, 0.7)
            elif 'log_' in name:
                assert learned, f'{name} is a parameter although the bounds are fixed'
                param.add_(0.4 * torch.randn_like(param))
            elif 'scale' in name:
                param.mul_(torch.exp(0.5 * torch.randn_like(param)))
    return module


def sample_inputs(dim: int, count: int = 200, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).normal(0.0, 2.0, (count, dim)))


@pytest.mark.parametrize('shape', [(7, 3), (4, 4), (3, 7), (1, 5), (5, 1)],
                         ids=['tall', 'square', 'wide', 'row', 'column'])
def test_cayley_gives_orthonormal_columns_or_rows(shape):
    torch.manual_seed(1)
    weight = 2.0 * torch.randn(*shape, dtype=torch.float64)
    q = cayley(weight)
    assert q.shape == shape
    rows, cols = shape
    gram = q.T @ q if rows >= cols else q @ q.T
    assert torch.allclose(gram, torch.eye(min(shape), dtype=torch.float64), atol=1e-12)
    # The rescaled map too, and the scale matters (the result is not a constant).
    scaled = scaled_cayley(weight, torch.tensor(0.3, dtype=torch.float64))
    gram = scaled.T @ scaled if rows >= cols else scaled @ scaled.T
    assert torch.allclose(gram, torch.eye(min(shape), dtype=torch.float64), atol=1e-12)
    assert not torch.allclose(scaled, q)


def test_cayley_is_differentiable_and_stays_orthogonal_after_a_step():
    torch.manual_seed(2)
    weight = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    target = torch.randn(6, 3, dtype=torch.float64)
    loss = ((cayley(weight) - target) ** 2).sum()
    loss.backward()
    assert weight.grad is not None and torch.isfinite(weight.grad).all()
    assert weight.grad.abs().max() > 0
    with torch.no_grad():
        q = cayley(weight - 0.1 * weight.grad)
    assert torch.allclose(q.T @ q, torch.eye(3, dtype=torch.float64), atol=1e-12)


def check_layer_bounds(layer: MonotoneLayer, x: torch.Tensor) -> None:
    mu, nu = layer.mu.item(), (layer.mu + layer.gamma).item()
    jac = jacobians(layer, x).detach().numpy()
    sym_min = np.linalg.eigvalsh(0.5 * (jac + jac.transpose(0, 2, 1))).min()
    sigma_max = np.linalg.svd(jac, compute_uv=False).max()
    assert sym_min >= mu - TOL, (sym_min, mu)
    assert sigma_max <= nu + TOL, (sigma_max, nu)
    # The Jacobians are not trivially mu I: the nonlinear part is active.
    assert np.abs(jac - mu * np.eye(layer.dim)).max() > 1e-3


@pytest.mark.parametrize('learned', [False, True], ids=['fixed', 'learned'])
@pytest.mark.parametrize('dim, blocks, mu, nu', [(3, [16, 16], 0.3, 3.0),
                                                 (5, [8, 12, 6], 0.05, 20.0)])
def test_monotone_layer_respects_its_bounds(dim, blocks, mu, nu, learned):
    layer = perturbed(MonotoneLayer(dim, blocks, mu, nu, learn_bounds=learned), 4, learned)
    if learned:
        # The learned bounds moved away from the initial ones, and the layer follows them.
        assert abs(layer.mu.item() - mu) > 1e-3 and abs((layer.mu + layer.gamma).item() - nu) > 1e-3
    else:
        assert layer.mu.item() == pytest.approx(mu) and (layer.mu + layer.gamma).item() == pytest.approx(nu)
    check_layer_bounds(layer, sample_inputs(dim))


def test_monotone_layer_rejects_bad_bounds():
    for mu, nu in [(0.0, 1.0), (-0.1, 1.0), (2.0, 1.0), (1.0, 1.0)]:
        with pytest.raises(ValueError):
            MonotoneLayer(3, [4], mu, nu)


def test_learned_bounds_are_trainable_and_fixed_ones_are_not():
    fixed = MonotoneLayer(3, [4], 0.2, 5.0, learn_bounds=False)
    learned = MonotoneLayer(3, [4], 0.2, 5.0, learn_bounds=True)
    assert not any('log_' in name for name, _ in fixed.named_parameters())
    assert {'log_mu', 'log_gamma'} <= {name for name, _ in learned.named_parameters()}
    out = learned(torch.randn(5, 3)).sum()
    out.backward()
    assert learned.log_mu.grad is not None and learned.log_gamma.grad is not None


@pytest.mark.parametrize('learned', [False, True], ids=['fixed', 'learned'])
def test_bilipnet_bounds_are_the_product_of_layer_bounds_and_hold(learned):
    dim, depth, mu, nu = 4, 3, 0.1, 10.0
    net = perturbed(BiLipNet(dim, [12, 12], depth, mu, nu, learn_bounds=learned), 5, learned)
    layers = [layer for layer in net.layers if isinstance(layer, MonotoneLayer)]
    assert len(layers) == depth
    expected_mu = float(np.prod([layer.mu.item() for layer in layers]))
    expected_nu = float(np.prod([(layer.mu + layer.gamma).item() for layer in layers]))
    got_mu, got_nu = net.bounds()
    assert got_mu == pytest.approx(expected_mu, rel=1e-12)
    assert got_nu == pytest.approx(expected_nu, rel=1e-12)
    if not learned:
        assert (got_mu, got_nu) == (pytest.approx(mu), pytest.approx(nu))
    else:
        assert got_mu != pytest.approx(mu, rel=1e-3)

    x = sample_inputs(dim, 300, seed=1)
    jac = jacobians(net, x).detach().numpy()
    sigma = np.linalg.svd(jac, compute_uv=False)
    assert sigma.min() >= got_mu - TOL and sigma.max() <= got_nu + TOL
    # Finite pairs as well: mu |dx| <= |G(x) - G(x')| <= nu |dx|.
    x2 = x + torch.from_numpy(np.random.default_rng(2).normal(0.0, 1.0, x.shape))
    with torch.no_grad():
        ratio = ((net(x2) - net(x)).norm(dim=1) / (x2 - x).norm(dim=1)).numpy()
    assert ratio.min() >= got_mu - TOL and ratio.max() <= got_nu + TOL


def test_cost_head_is_half_squared_latent_plus_phi():
    torch.manual_seed(6)
    head = CostHead(task_dim=2, hidden=[8, 8]).double()
    y = torch.randn(50, 2, dtype=torch.float64)
    z = 3.0 * torch.randn(50, 3, dtype=torch.float64)
    with torch.no_grad():
        difference = head(z, y) - head(torch.zeros_like(z), y)
        assert torch.allclose(difference, 0.5 * (z ** 2).sum(-1), atol=1e-12)
        assert torch.allclose(head(torch.zeros_like(z), y), head.phi(y), atol=0)
        # phi really depends on y (it is not a constant offset).
        assert head.phi(y).std() > 0
    # Gradient in z is z itself: the optimum over z is z = 0 for every task.
    z.requires_grad_(True)
    head(z, y).sum().backward()
    assert torch.allclose(z.grad, z.detach(), atol=1e-12)
