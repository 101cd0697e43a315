"""Export a trained network as ONNX (forward map) + JSON (metadata and explicit weights)."""

import hashlib
import json
from dataclasses import asdict
from datetime import date
from pathlib import Path

import numpy as np
import torch
from torch import nn

from loink_ros.core.network.loink_net import LOInKNet
from loink_ros.core.normalization import Normalization
from loink_ros.core.problems.problem import Problem
from loink_ros.core.training import TrainResult

FORMAT = 'loink-model'
FORMAT_VERSION = 1
OPSET = 17


class FrozenForward(nn.Module):
    """The forward map rebuilt from explicit weights (plain matmuls, exportable to ONNX).

    Joint units in; (task, latent, cost) out. Cayley maps are evaluated once at export, so
    the ONNX graph holds exactly the matrices the numpy runtime uses.
    """

    def __init__(self, weights: dict, norm: Normalization):
        super().__init__()
        self.task_dim = weights['task_dim']
        self.layers = [_frozen_layer(layer) for layer in weights['layers']]
        self.cost_layers = [(_t(layer['W']), _t(layer['b'])) for layer in weights['cost_head']['layers']]
        self.x_lower, self.x_upper = _t(norm.x_lower), _t(norm.x_upper)
        self.y_mean, self.y_std = _t(norm.y_mean), _t(norm.y_std)
        self.cost_mean, self.cost_std = norm.cost_mean, norm.cost_std

    def forward(self, configuration: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(task, latent, cost) of a batch of configurations."""
        x = 2.0 * (configuration - self.x_lower) / (self.x_upper - self.x_lower) - 1.0
        for layer in self.layers:
            x = layer(x)
        y_n, z = x[:, :self.task_dim], x[:, self.task_dim:]
        h = y_n
        for w, b in self.cost_layers[:-1]:
            h = _softplus(h @ w.T + b)
        w, b = self.cost_layers[-1]
        cost_n = 0.5 * (z * z).sum(-1) + (h @ w.T + b)[:, 0]
        return self.y_mean + self.y_std * y_n, z, self.cost_mean + self.cost_std * cost_n


def _softplus(x: torch.Tensor) -> torch.Tensor:
    """log(1 + e^x) from Relu/Abs/Exp/Log: ONNX Runtime's CPU Softplus has no float64 kernel."""
    return torch.relu(x) + torch.log(1.0 + torch.exp(-torch.abs(x)))


def _t(value) -> torch.Tensor:
    return torch.as_tensor(np.asarray(value), dtype=torch.float64)


def _frozen_layer(layer: dict):
    if layer['kind'] == 'orthogonal':
        r, b = _t(layer['R']), _t(layer['b'])
        return lambda x: x @ r.T + b
    mu, gamma, b_y = layer['mu'], layer['gamma'], _t(layer['b_y'])
    blocks = [(_t(blk['S']), None if blk['V'] is None else _t(blk['V']), _t(blk['b']))
              for blk in layer['blocks']]

    def monotone(x: torch.Tensor) -> torch.Tensor:
        out, h = mu * x + b_y, None
        for s, v, b in blocks:
            pre = (2.0 * gamma) ** 0.5 * x @ s.T + b
            h = torch.relu(pre if v is None else pre + h @ v.T)
            out = out + (gamma / 2.0) ** 0.5 * h @ s
        return out
    return monotone


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def network_weights(net: LOInKNet) -> dict:
    """The 'network' section of the JSON."""
    mu, nu = net.bilipnet.bounds()
    return _jsonable({'dim': net.dim, 'task_dim': net.task_dim,
                      'latent_dim': net.dim - net.task_dim, 'mu': mu, 'nu': nu,
                      'layers': net.bilipnet.explicit_weights(),
                      'cost_head': net.cost_head.explicit_weights()})


def example_configuration(problem: Problem, result: TrainResult) -> np.ndarray:
    """The problem's example configuration, checked: inside the joint limits, its task inside
    the training's task bounds (so the solver's example_task() is a valid request)."""
    q = np.asarray(problem.example_configuration(), float)
    task = problem.task(q)[0]
    inside = np.all((q >= problem.lower) & (q <= problem.upper))
    if not inside or np.any((task < result.task_lower) | (task > result.task_upper)):
        raise ValueError(f'{problem.name}: example_configuration() {q.tolist()} reaches task '
                         f'{task.tolist()}, outside the joint limits or the task bounds seen in '
                         'training; override it with a configuration inside both')
    return q


def export_model(result: TrainResult, problem: Problem, out_stem: Path) -> tuple[Path, Path]:
    """Write <stem>.onnx and <stem>.json; returns both paths."""
    example = example_configuration(problem, result)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    onnx_path = out_stem.parent / f'{out_stem.name}.onnx'
    json_path = out_stem.parent / f'{out_stem.name}.json'
    net = result.net.double().eval()
    weights = network_weights(net)
    forward = FrozenForward(weights, result.normalization)
    trace_input = torch.as_tensor(0.5 * (problem.lower + problem.upper))[None]
    torch.onnx.export(forward, (trace_input,), str(onnx_path), input_names=['configuration'],
                      output_names=['task', 'latent', 'cost'], opset_version=OPSET,
                      dynamic_axes={n: {0: 'batch'} for n in ('configuration', 'task', 'latent', 'cost')},
                      dynamo=False)
    digest = hashlib.sha256(onnx_path.read_bytes()).hexdigest()[:8]
    meta = {
        'format': FORMAT, 'format_version': FORMAT_VERSION, 'name': out_stem.name,
        'model_version': f'{out_stem.name}-{date.today():%Y%m%d}-{digest}',
        'problem': {**problem.metadata(), 'task_lower': result.task_lower.tolist(),
                    'task_upper': result.task_upper.tolist(),
                    'example_configuration': example.tolist()},
        'normalization': result.normalization.to_dict(),
        'network': weights,
        'onnx': onnx_path.name,
        'training': {'config': asdict(result.config), 'epochs': len(result.history),
                     'final': result.history[-1] if result.history else None},
    }
    json_path.write_text(json.dumps(meta, indent=1))
    return onnx_path, json_path
