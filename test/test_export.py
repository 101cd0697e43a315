"""Export: torch, the numpy runtime and ONNX Runtime agree; the JSON is complete; bad files fail."""
import copy
import hashlib
import json
import pickle
import shutil

import numpy as np
import onnx
import pytest
import torch

from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.onnx_forward import OnnxForward
from loink_ros.core.runtime.solver import LOInKSolver

AGREE = 1e-5


def configurations(problem, count: int = 64, seed: int = 0) -> np.ndarray:
    """Inside the limits, and a few beyond them (the forward map is defined everywhere)."""
    rng = np.random.default_rng(seed)
    span = problem.upper - problem.lower
    return rng.uniform(problem.lower - 0.2 * span, problem.upper + 0.2 * span,
                       (count, problem.dim))


def torch_forward(result, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trained float64 torch network, through the stored normalisation."""
    norm = result.normalization
    with torch.no_grad():
        y_n, z, cost_n = result.net.double()(torch.from_numpy(norm.x_to_net(q)))
    return norm.y_from_net(y_n.numpy()), z.numpy(), norm.cost_from_net(cost_n.numpy())


def test_torch_numpy_and_onnxruntime_agree(tiny):
    q = configurations(tiny.problem)
    expected = torch_forward(tiny.result, q)
    numpy_solver = LOInKSolver(load_model(str(tiny.json_path)), tiny.problem)
    onnx_solver = LOInKSolver(load_model(str(tiny.json_path)), tiny.problem,
                              forward_backend='onnxruntime')
    backends = {'numpy': numpy_solver.forward(q), 'onnx': OnnxForward(tiny.onnx_path)(q),
                'onnx via solver': onnx_solver.forward(q)}
    for name, got in backends.items():
        for what, a, b in zip(('task', 'latent', 'cost'), got, expected):
            assert a.shape == b.shape, (name, what)
            assert np.abs(a - b).max() <= AGREE, (name, what, np.abs(a - b).max())
    # Not a vacuous agreement: the outputs vary over the configurations.
    assert all(np.ptp(part) > 1e-3 for part in expected)


def test_onnx_graph_is_valid_float64_with_a_dynamic_batch(tiny):
    model = onnx.load(str(tiny.onnx_path))
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ['configuration']
    assert [o.name for o in model.graph.output] == ['task', 'latent', 'cost']
    elem = model.graph.input[0].type.tensor_type.elem_type
    assert elem == onnx.TensorProto.DOUBLE
    forward = OnnxForward(tiny.onnx_path)
    for batch in (1, 7):
        task, latent, cost = forward(configurations(tiny.problem, batch, seed=batch))
        assert task.shape == (batch, 1) and latent.shape == (batch, 2) and cost.shape == (batch,)


def test_json_has_the_required_metadata(tiny):
    meta = json.loads(tiny.json_path.read_text())
    problem, result, net = tiny.problem, tiny.result, tiny.result.net
    assert meta['format'] == 'loink-model' and meta['format_version'] == 1
    assert meta['name'] == 'tiny'
    # The version names the model and the exact ONNX file it ships with.
    digest = hashlib.sha256(tiny.onnx_path.read_bytes()).hexdigest()[:8]
    assert meta['model_version'].startswith('tiny-') and meta['model_version'].endswith(digest)
    assert meta['onnx'] == tiny.onnx_path.name

    p = meta['problem']
    assert p['name'] == 'planar3' and p['urdf'] == 'planar3.urdf'
    assert p['joint_names'] == list(problem.joint_names)
    assert p['joint_lower'] == problem.lower.tolist() and p['joint_upper'] == problem.upper.tolist()
    assert p['task_names'] == list(problem.task_names) and p['cost_name'] == problem.cost_name
    train_y = tiny.dataset.y
    assert np.all(np.asarray(p['task_lower']) >= train_y.min(0))
    assert np.all(np.asarray(p['task_upper']) <= train_y.max(0))
    assert np.allclose(p['task_lower'], result.task_lower, rtol=0, atol=0)
    assert np.allclose(p['task_upper'], result.task_upper, rtol=0, atol=0)
    # A known-good configuration whose task is a valid request (the solver's example_task()).
    assert p['example_configuration'] == problem.example_configuration().tolist()
    example_task = problem.task(np.asarray(p['example_configuration']))[0]
    assert np.all((example_task >= p['task_lower']) & (example_task <= p['task_upper']))
    assert meta['normalization'] == json.loads(json.dumps(result.normalization.to_dict()))

    n = meta['network']
    assert (n['dim'], n['task_dim'], n['latent_dim']) == (3, 1, 2)
    mu, nu = net.bilipnet.bounds()
    assert n['mu'] == pytest.approx(mu, rel=1e-12) and n['nu'] == pytest.approx(nu, rel=1e-12)
    assert n['mu'] == pytest.approx(tiny.config.network.mu, rel=1e-6)
    assert n['nu'] == pytest.approx(tiny.config.network.nu, rel=1e-6)
    depth = tiny.config.network.depth
    assert [layer['kind'] for layer in n['layers']] == ['orthogonal'] + ['monotone', 'orthogonal'] * depth
    weights = net.bilipnet.explicit_weights()
    for stored, explicit in zip(n['layers'], weights):
        if stored['kind'] == 'orthogonal':
            assert np.array_equal(stored['R'], explicit['R']) and np.array_equal(stored['b'], explicit['b'])
            continue
        assert stored['mu'] * (stored['mu'] + stored['gamma']) > 0
        assert len(stored['blocks']) == len(tiny.config.network.blocks)
        for block, exp in zip(stored['blocks'], explicit['blocks']):
            assert np.array_equal(block['S'], exp['S']) and np.array_equal(block['b'], exp['b'])
            assert (block['V'] is None) == (exp['V'] is None)
    mono_mu = np.prod([layer['mu'] for layer in n['layers'] if layer['kind'] == 'monotone'])
    assert mono_mu == pytest.approx(n['mu'], rel=1e-12)
    head = n['cost_head']
    assert head['activation'] == 'softplus'
    assert len(head['layers']) == len(tiny.config.network.cost_hidden) + 1
    assert meta['training']['epochs'] == tiny.config.epochs
    assert meta['training']['config']['seed'] == tiny.config.seed
    assert meta['training']['final']['val_loss'] == tiny.result.history[-1]['val_loss']


def test_no_pickles_anywhere(tiny, monkeypatch):
    # The export is JSON + ONNX only, and loading them never unpickles anything.
    assert sorted(p.name for p in tiny.json_path.parent.glob('tiny.*')) == ['tiny.json', 'tiny.onnx']
    text = tiny.json_path.read_text()
    json.loads(text)
    assert 'pickle' not in text.lower()

    def refuse(*args, **kwargs):
        raise AssertionError('something unpickled')

    for name in ('load', 'loads', 'Unpickler'):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(np, 'load', refuse)
    model = load_model(str(tiny.json_path))
    solver = LOInKSolver(model, tiny.problem, forward_backend='onnxruntime')
    assert np.all(np.isfinite(solver.forward(configurations(tiny.problem, 4))[0]))


# ---- broken model files ---------------------------------------------------------------

def copy_model(tiny, folder, meta_change=None, text_change=None, with_onnx=True):
    """A copy of the tiny model in `folder`, its JSON edited; returns the JSON path."""
    folder.mkdir(exist_ok=True)
    if with_onnx:
        shutil.copy(tiny.onnx_path, folder / tiny.onnx_path.name)
    path = folder / tiny.json_path.name
    meta = json.loads(tiny.json_path.read_text())
    if meta_change is not None:
        edited = copy.deepcopy(meta)
        meta = meta_change(edited) or edited
    text = json.dumps(meta)
    path.write_text(text if text_change is None else text_change(text))
    return path


def drop_row_of_r(meta):
    meta['network']['layers'][0]['R'] = meta['network']['layers'][0]['R'][:-1]


def drop_column_of_s(meta):
    block = meta['network']['layers'][1]['blocks'][0]
    block['S'] = [row[:-1] for row in block['S']]


def transpose_v(meta):
    block = meta['network']['layers'][1]['blocks'][1]
    block['V'] = np.asarray(block['V']).T[:, :-1].tolist()


def short_bias(meta):
    meta['network']['layers'][3]['b_y'] = meta['network']['layers'][3]['b_y'][:-1]


def wrong_dim(meta):
    meta['network']['task_dim'] = 2


def drop_a_layer(meta):
    del meta['network']['layers'][1]


def short_normalization(meta):
    meta['normalization']['x_lower'] = meta['normalization']['x_lower'][:-1]


def long_task_bounds(meta):
    meta['problem']['task_lower'] = meta['problem']['task_lower'] * 2


def wide_cost_head(meta):
    first = meta['network']['cost_head']['layers'][0]
    first['W'] = [row * 2 for row in first['W']]


def no_onnx_key(meta):
    del meta['onnx']


BROKEN = {
    'truncated': dict(text_change=lambda t: t[:len(t) // 2]),
    'not json': dict(text_change=lambda t: 'this is not json\n' + t),
    'empty': dict(text_change=lambda t: ''),
    'a list': dict(text_change=lambda t: '[1, 2, 3]'),
    'wrong format tag': dict(meta_change=lambda m: {**m, 'format': 'onnx-model'}),
    'no format tag': dict(meta_change=lambda m: {k: v for k, v in m.items() if k != 'format'}),
    'newer format version': dict(meta_change=lambda m: {**m, 'format_version': 2}),
    'missing onnx file': dict(with_onnx=False),
    'no onnx key': dict(meta_change=no_onnx_key),
    'no network': dict(meta_change=lambda m: {k: v for k, v in m.items() if k != 'network'}),
    'R with a missing row': dict(meta_change=drop_row_of_r),
    'S with a missing column': dict(meta_change=drop_column_of_s),
    'V of the wrong shape': dict(meta_change=transpose_v),
    'short b_y': dict(meta_change=short_bias),
    'task_dim disagrees': dict(meta_change=wrong_dim),
    'layer kinds out of order': dict(meta_change=drop_a_layer),
    'normalisation of the wrong length': dict(meta_change=short_normalization),
    'task bounds of the wrong length': dict(meta_change=long_task_bounds),
    'cost head of the wrong width': dict(meta_change=wide_cost_head),
}


@pytest.mark.parametrize('case', BROKEN)
def test_broken_model_files_raise_model_file_error(tiny, tmp_path, case):
    path = copy_model(tiny, tmp_path / 'model', **BROKEN[case])
    with pytest.raises(ModelFileError) as caught:
        load_model(str(path))
    message = str(caught.value)
    assert message and '\n' not in message
    assert 'Traceback' not in message


def test_missing_model_file_and_unknown_name(tiny, tmp_path, monkeypatch):
    with pytest.raises(ModelFileError, match='does not exist') as caught:
        load_model(str(tmp_path / 'nothing.json'))
    assert '\n' not in str(caught.value)
    monkeypatch.setenv('LOINK_MODEL_PATH', str(tmp_path))
    monkeypatch.delenv('AMENT_PREFIX_PATH', raising=False)
    with pytest.raises(ModelFileError, match='no model named') as caught:
        load_model('no_such_model_name')
    assert '\n' not in str(caught.value)


def test_model_found_by_name_on_the_model_path(tiny, monkeypatch):
    monkeypatch.setenv('LOINK_MODEL_PATH', str(tiny.json_path.parent))
    model = load_model('tiny')
    assert model.path == tiny.json_path and model.onnx_path == tiny.onnx_path
    assert model.version == json.loads(tiny.json_path.read_text())['model_version']


def test_an_intact_copy_loads(tiny, tmp_path):
    # Guards the broken-file tests: copying itself does not break a model.
    path = copy_model(tiny, tmp_path / 'model')
    model = load_model(str(path))
    q = configurations(tiny.problem, 5)
    assert np.array_equal(LOInKSolver(model, tiny.problem).forward(q)[0],
                          LOInKSolver(load_model(str(tiny.json_path)), tiny.problem).forward(q)[0])
