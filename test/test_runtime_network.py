"""The numpy BiLipNet runtime against the torch network: forward, Jacobian, both inverses."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from loink_ros.core.network.bilipnet import BiLipNet
from loink_ros.core.runtime.bilip_map import BiLipMap
from loink_ros.core.runtime.davis_yin_inverse import DavisYinInverse
from loink_ros.core.runtime.monotone_map import MonotoneMap
from loink_ros.core.runtime.network_inverse import NetworkInverse
from loink_ros.core.runtime.newton_inverse import NewtonInverse

REPO = Path(__file__).resolve().parents[1]

# (dim, blocks, depth, mu, nu, learned): 'learned' perturbs the per-layer bounds and weight
# scales the way training moves them, and uses three blocks so that V chains across blocks.
SETTINGS = {
    'mu0.1_nu10': (3, [64, 64], 2, 0.1, 10.0, False),
    'mu0.5_nu2': (4, [32, 32], 2, 0.5, 2.0, False),
    'learned': (6, [32, 24, 16], 3, 0.23, 7.4, True),
}


def make_net(setting: str, seed: int = 0) -> BiLipNet:
    """A float64 torch BiLipNet with trained-looking (non-zero, uneven) parameters."""
    dim, blocks, depth, mu, nu, learned = SETTINGS[setting]
    torch.manual_seed(seed)
    net = BiLipNet(dim, blocks, depth, mu, nu, learn_bounds=learned).double()
    with torch.no_grad():
        for name, param in net.named_parameters():
            if 'bias' in name:
                param.normal_(0.0, 0.5)
            elif learned and 'log_' in name:
                param.add_(0.3 * torch.randn_like(param))
            elif learned and 'scale' in name:
                param.mul_(torch.exp(0.3 * torch.randn_like(param)))
    return net


def make_map(setting: str, seed: int = 0) -> BiLipMap:
    """The runtime map of make_net's network."""
    return BiLipMap.from_weights(make_net(setting, seed).explicit_weights())


def targets(g: BiLipMap, count: int, seed: int = 1) -> np.ndarray:
    """Outputs w = G(x) of configurations spread over and beyond [-1, 1]^n."""
    return g.forward(np.random.default_rng(seed).uniform(-1.5, 1.5, (count, g.dim)))


def round_trip_error(g: BiLipMap, x: np.ndarray, w: np.ndarray) -> float:
    """max_i ||G(x_i) - w_i||."""
    return float(np.linalg.norm(g.forward(x) - w, axis=1).max())


def test_runtime_does_not_import_torch():
    code = ('import sys; import loink_ros.core.runtime.network_inverse; '
            'assert "torch" not in sys.modules, "runtime imported torch"')
    subprocess.run([sys.executable, '-c', code], cwd=REPO, check=True)


def test_the_solver_imports_neither_onnxruntime_nor_torch_nor_tqdm():
    # onnxruntime loads on demand (model checks, the onnxruntime backend), never on import.
    code = ('import json, sys; import loink_ros.core.runtime.solver; heavy = ("onnxruntime", '
            '"torch", "tqdm"); print(json.dumps([m for m in heavy if m in sys.modules]))')
    out = subprocess.run([sys.executable, '-c', code], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == []


@pytest.mark.parametrize('setting', SETTINGS)
def test_forward_matches_torch(setting):
    net = make_net(setting)
    g = BiLipMap.from_weights(net.explicit_weights())
    x = np.random.default_rng(2).normal(0.0, 2.0, (64, g.dim))
    expected = net(torch.from_numpy(x)).detach().numpy()
    assert np.abs(g.forward(x) - expected).max() <= 1e-10


def test_weights_read_from_json_give_the_same_map():
    weights = make_net('learned').explicit_weights()
    as_json = json.loads(json.dumps(weights, default=lambda a: a.tolist()))
    assert isinstance(as_json[1]['blocks'][0]['S'], list) and as_json[1]['blocks'][0]['V'] is None
    x = np.random.default_rng(3).normal(size=(8, 6))
    assert np.array_equal(BiLipMap.from_weights(as_json).forward(x),
                          BiLipMap.from_weights(weights).forward(x))


def test_malformed_weights_are_rejected():
    weights = make_net('mu0.5_nu2').explicit_weights()
    with pytest.raises(ValueError):
        BiLipMap.from_weights(weights[1:])
    weights[1]['blocks'][1]['V'] = weights[1]['blocks'][1]['V'].T[:, :-1]
    with pytest.raises(ValueError):
        BiLipMap.from_weights(weights)


def central_differences(fn, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Jacobian of fn at each row of x, shape (B, n, n)."""
    steps = eps * np.eye(x.shape[1])
    columns = [(fn(x + e) - fn(x - e)) / (2.0 * eps) for e in steps]
    return np.stack(columns, axis=2)


@pytest.mark.parametrize('setting', SETTINGS)
def test_jacobians_match_finite_differences(setting):
    g = make_map(setting)
    x = np.random.default_rng(4).normal(size=(16, g.dim))
    assert np.abs(g.jacobian(x) - central_differences(g.forward, x)).max() <= 1e-6
    layer = g.monotone[0]
    value, jac = layer.forward_with_jacobian(x)
    assert np.array_equal(value, layer.forward(x))
    assert np.abs(jac - central_differences(layer.forward, x)).max() <= 1e-6


@pytest.mark.parametrize('setting', SETTINGS)
def test_layers_keep_their_bounds_and_orthogonality(setting):
    g = make_map(setting, seed=5)
    rng = np.random.default_rng(6)
    x = rng.normal(0.0, 3.0, (300, g.dim))
    for layer in g.monotone:
        # Jacobians at sampled inputs, and at random activation patterns (reachable or not).
        patterns = rng.uniform(size=(300, layer.width)) < rng.uniform(size=(300, 1))
        jac = np.concatenate([layer.forward_with_jacobian(x)[1],
                              layer.jacobian_at(patterns.astype(float))])
        sym_min = np.linalg.eigvalsh(0.5 * (jac + jac.transpose(0, 2, 1))).min()
        assert sym_min >= layer.mu - 1e-9
        assert np.linalg.svd(jac, compute_uv=False).max() <= layer.mu + layer.gamma + 1e-9
    for orth in g.orthogonal:
        assert np.abs(orth.R.T @ orth.R - np.eye(g.dim)).max() <= 1e-12


@pytest.mark.parametrize('setting', SETTINGS)
def test_both_inverses_round_trip_and_agree(setting):
    g = make_map(setting)
    inverse = NetworkInverse(g)
    w = np.vstack([targets(g, 24), np.random.default_rng(7).normal(0.0, 2.0, (8, g.dim))])
    newton = inverse(w, 'newton', tol=1e-10)
    splitting = inverse(w, 'davis_yin', tol=1e-7)
    assert newton.converged.all() and splitting.converged.all()
    assert round_trip_error(g, newton.x, w) <= 1e-8
    assert round_trip_error(g, splitting.x, w) <= 1e-5
    assert np.abs(newton.x - splitting.x).max() <= 1e-5
    assert len(newton.iterations) == len(g.monotone) == len(newton.state.x)


@pytest.mark.parametrize('method', ['newton', 'davis_yin'])
def test_warm_start_after_a_small_change_needs_fewer_iterations(method):
    g = make_map('mu0.1_nu10')
    inverse = NetworkInverse(g)
    w = targets(g, 8)
    first = inverse(w, method)
    moved = w + 1e-3 * np.random.default_rng(8).normal(size=w.shape)
    cold = inverse(moved, method)
    warm = inverse(moved, method, warm_start=first.state)
    assert warm.converged.all() and cold.converged.all()
    assert sum(warm.iterations) < sum(cold.iterations)
    assert np.abs(warm.x - cold.x).max() <= 1e-5


def test_newton_state_is_the_splitting_fixed_point():
    g = make_map('learned')
    inverse = NetworkInverse(g)
    w = targets(g, 8)
    newton = inverse(w, 'newton')
    splitting = inverse(w, 'davis_yin', tol=1e-9, warm_start=newton.state)
    assert splitting.converged.all() and max(splitting.iterations) <= 2
    assert np.abs(splitting.x - newton.x).max() <= 1e-9


@pytest.mark.parametrize('method', ['newton', 'davis_yin'])
def test_state_at_a_configuration_solves_its_own_output(method):
    g = make_map('learned')
    inverse = NetworkInverse(g)
    x = np.random.default_rng(11).uniform(-1.0, 1.0, (6, g.dim))
    cold = inverse(g.forward(x), method)
    seeded = inverse(g.forward(x), method, warm_start=inverse.state_at(x))
    assert seeded.converged.all() and max(seeded.iterations) <= 1 < min(cold.iterations)
    assert np.abs(seeded.x - x).max() <= 1e-9


@pytest.mark.parametrize('method', ['newton', 'davis_yin'])
def test_batched_inverse_equals_per_row_inverse(method):
    g = make_map('learned')
    inverse = NetworkInverse(g)
    w = targets(g, 12)
    batched = inverse(w, method)
    rows = [inverse(w[i:i + 1], method) for i in range(len(w))]
    assert np.abs(batched.x - np.vstack([r.x for r in rows])).max() <= 1e-9
    assert batched.iterations == np.max([r.iterations for r in rows], axis=0).tolist()
    assert batched.converged.all() and all(r.converged[0] for r in rows)


@pytest.mark.parametrize('batch', [1, 16])
def test_too_few_iterations_are_reported_as_not_converged(batch):
    g = make_map('mu0.1_nu10')
    inverse = NetworkInverse(g)
    w = targets(g, batch)
    for method, max_iter in (('newton', 1), ('davis_yin', 20)):
        result = inverse(w, method, max_iter=max_iter)
        assert not result.converged.any(), method
        assert round_trip_error(g, result.x, w) > 1e-6
    layer, y = g.monotone[0], targets(g, batch)
    newton = NewtonInverse(layer)
    solved = newton.solve(y, 1e-10, 2)
    residual = np.abs(layer.forward(solved.x) - y).max(axis=1)
    assert np.array_equal(solved.converged, residual <= 1e-10)
    assert not newton.solve(y, 1e-10, 0).converged.any()


@pytest.mark.parametrize('method', ['newton', 'davis_yin'])
def test_non_finite_rows_never_converge(method):
    g = make_map('mu0.5_nu2')
    inverse = NetworkInverse(g)
    w = targets(g, 4)
    w[1, 2] = np.nan
    assert not inverse(w[1:2], method, max_iter=50).converged[0]
    assert inverse(w, method, max_iter=50).converged.tolist() == [True, False, True, True]


def test_monotone_solvers_agree_on_one_layer():
    layer = make_map('learned').monotone[1]
    y = layer.forward(np.random.default_rng(9).normal(0.0, 2.0, (10, 6)))
    newton = NewtonInverse(layer).solve(y, 1e-12, 50)
    splitting = DavisYinInverse(layer).solve(y, 1e-9, 5000)
    assert newton.converged.all() and splitting.converged.all()
    assert np.abs(layer.forward(newton.x) - y).max() <= 1e-12
    assert np.abs(newton.x - splitting.x).max() <= 1e-7
    assert (newton.iterations < splitting.iterations).all()


def test_newton_line_search_never_lets_the_residual_grow():
    # M(x) = 0.1 x + 9.9 relu(x): from x = -1 the full Newton step for M(x) = 1 lands at x = 10,
    # where |F| = 99 > |F(-1)| = 1.1; backtracking must keep |F| decreasing and still converge.
    layer = MonotoneMap(0.1, 9.9, [0.0], [{'S': [[1.0]], 'V': None, 'b': [0.0]}])
    for batch in (1, 2):
        y, x0 = np.ones((batch, 1)), -np.ones((batch, 1))
        residuals = [np.abs(layer.forward(x0) - y).max()]
        for max_iter in range(1, 4):
            solved = NewtonInverse(layer).solve(y, 1e-12, max_iter, x0)
            residuals.append(np.abs(layer.forward(solved.x) - y).max())
        assert all(b < a for a, b in zip(residuals, residuals[1:])), residuals
        solved = NewtonInverse(layer).solve(y, 1e-12, 20, x0)
        assert solved.converged.all() and np.allclose(solved.x, 0.1, atol=1e-12)


def test_davis_yin_step_is_the_method_formula():
    # METHOD.md s.3 with dense matrices: u += (I + alpha (I - V))^-1 (2 h_hat - u - alpha C h_hat
    # + alpha b_z) - h_hat, h_hat = relu(u), alpha = mu/gamma, C = (gamma/mu) S S^T.
    layer = make_map('learned').monotone[0]
    mu, gamma, s, width = layer.mu, layer.gamma, layer.S, layer.width
    v = np.zeros((width, width))
    for prev, block, v_block in zip(layer.slices, layer.slices[1:], layer.V):
        v[block, prev] = v_block
    rng = np.random.default_rng(10)
    y, u = rng.normal(size=(1, layer.dim)), rng.normal(size=(1, width))
    alpha, c = mu / gamma, gamma / mu * s @ s.T
    b_z = np.sqrt(2.0 * gamma) / mu * s @ (y[0] - layer.b_y) + layer.b
    h_hat = np.maximum(u[0], 0.0)
    rhs = 2.0 * h_hat - u[0] - alpha * c @ h_hat + alpha * b_z
    h = np.linalg.solve((1.0 + alpha) * np.eye(width) - alpha * v, rhs)
    stepped = DavisYinInverse(layer).solve(y, 0.0, 1, u)
    assert np.abs(stepped.u[0] - (u[0] + h - h_hat)).max() <= 1e-12
    assert not stepped.converged[0] and stepped.iterations[0] == 1
