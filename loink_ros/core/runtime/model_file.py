"""Loading, checking and finding model files (docs/MODEL_FORMAT.md)."""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loink_ros.core.normalization import Normalization
from loink_ros.core.runtime.bilip_map import BiLipMap
from loink_ros.core.runtime.cost_head_map import CostHeadMap
from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.network_inverse import NetworkInverse

FORMAT = 'loink-model'
FORMAT_VERSION = 1
REPO_MODELS = Path(__file__).resolve().parents[3] / 'models'
# The ONNX graph must reproduce the JSON weights' forward map to this relative error.
ONNX_AGREE = 1e-8
PROBE_COUNT = 16


@dataclass
class ModelFile:
    """A loaded model: metadata plus the numpy network, its inverse and the cost head."""

    path: Path
    meta: dict
    normalization: Normalization
    network: BiLipMap
    cost_head: CostHeadMap
    inverse: NetworkInverse = field(init=False)

    def __post_init__(self) -> None:
        self.inverse = NetworkInverse(self.network)

    @property
    def name(self) -> str:
        return self.meta['name']

    @property
    def version(self) -> str:
        return self.meta['model_version']

    @property
    def problem(self) -> dict:
        return self.meta['problem']

    @property
    def task_dim(self) -> int:
        return int(self.meta['network']['task_dim'])

    @property
    def latent_dim(self) -> int:
        return int(self.meta['network']['latent_dim'])

    @property
    def task_lower(self) -> np.ndarray:
        return np.asarray(self.problem['task_lower'], float)

    @property
    def task_upper(self) -> np.ndarray:
        return np.asarray(self.problem['task_upper'], float)

    @property
    def joint_lower(self) -> np.ndarray:
        return np.asarray(self.problem['joint_lower'], float)

    @property
    def joint_upper(self) -> np.ndarray:
        return np.asarray(self.problem['joint_upper'], float)

    @property
    def example_configuration(self) -> np.ndarray | None:
        """The known-good configuration stored at export; None in older files."""
        q = self.problem.get('example_configuration')
        return None if q is None else np.asarray(q, float)

    @property
    def onnx_path(self) -> Path:
        return self.path.parent / self.meta['onnx']

    def forward(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The JSON weights' (task, latent, cost) of configurations (B, n), in robot units."""
        out = self.network.forward(self.normalization.x_to_net(np.atleast_2d(q)))
        y_n, z = out[:, :self.task_dim], out[:, self.task_dim:]
        cost = self.normalization.cost_from_net(self.cost_head.cost(z, y_n))
        return self.normalization.y_from_net(y_n), z, cost


def model_dirs() -> list[Path]:
    """Where model names are looked up: $LOINK_MODEL_PATH, the repo, installed shares."""
    dirs = [Path(p) for p in os.environ.get('LOINK_MODEL_PATH', '').split(os.pathsep) if p]
    dirs.append(REPO_MODELS)
    prefixes = os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
    dirs += [Path(p) / 'share' / 'loink_ros' / 'models' for p in prefixes if p]
    return dirs


def resolve_model(name_or_path: str) -> Path:
    """A .json path as given, or the first <name>.json found in model_dirs()."""
    given = Path(name_or_path)
    if given.suffix == '.json' or given.exists():
        return given
    for folder in model_dirs():
        candidate = folder / f'{name_or_path}.json'
        if candidate.exists():
            return candidate
    raise ModelFileError(f'no model named {name_or_path!r} in {", ".join(map(str, model_dirs()))}')


def load_model(name_or_path: str) -> ModelFile:
    """Read and check a model; raises ModelFileError with a one-line reason.

    Checked: the format, every number finite, the shapes, ranges with lower < upper, and the
    ONNX file, loaded with ONNX Runtime, computing the JSON weights' map on probe inputs.
    """
    path = resolve_model(name_or_path)
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelFileError(f'model file {path} does not exist') from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFileError(f'model file {path} is not readable JSON: {err}') from None
    if not isinstance(meta, dict) or meta.get('format') != FORMAT:
        raise ModelFileError(f'{path} is not a LOInK model file (format != {FORMAT!r})')
    if meta.get('format_version') != FORMAT_VERSION:
        raise ModelFileError(f'{path} has format_version {meta.get("format_version")}, '
                             f'this build reads {FORMAT_VERSION}')
    try:
        _check_finite(meta)
        model = ModelFile(path, meta, Normalization.from_dict(meta['normalization']),
                          BiLipMap.from_weights(meta['network']['layers']),
                          CostHeadMap(meta['network']['cost_head']['layers']))
        _check_shapes(model)
        onnx_path = model.onnx_path
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ModelFileError(f'{path} is corrupt: {_one_line(err)}') from None
    if not onnx_path.is_file():
        raise ModelFileError(f'{path} names {onnx_path.name}, which does not exist')
    _check_onnx(model)
    return model


def _one_line(err: Exception) -> str:
    return ' '.join(f'{type(err).__name__}: {err}'.split())


def _check_finite(meta: dict) -> None:
    """ValueError naming the first entry of problem, normalization or network that is not a
    finite number (JSON NaN and Infinity parse as floats)."""
    for section in ('problem', 'normalization', 'network'):
        where = _first_non_finite(meta[section], section)
        if where is not None:
            raise ValueError(f'{where} is not finite (NaN or inf)')


def _first_non_finite(value, where: str) -> str | None:
    if isinstance(value, dict):
        found = (_first_non_finite(v, f'{where}.{k}') for k, v in value.items())
        return next((f for f in found if f is not None), None)
    if isinstance(value, bool) or not isinstance(value, (list, int, float)):
        return None
    try:
        numbers = np.asarray(value, dtype=float)
    except OverflowError:   # a JSON integer beyond the float range
        return where
    except (TypeError, ValueError):   # names, ragged lists or lists of dicts: look inside
        found = (_first_non_finite(v, f'{where}[{i}]') for i, v in enumerate(value))
        return next((f for f in found if f is not None), None)
    return None if np.all(np.isfinite(numbers)) else where


def _check_shapes(model: ModelFile) -> None:
    net, problem = model.meta['network'], model.problem
    dim = len(problem['joint_names'])
    if net['dim'] != dim or net['task_dim'] + net['latent_dim'] != dim:
        raise ValueError('network dimensions disagree with the joint list')
    if len(problem['task_names']) != net['task_dim']:
        raise ValueError('task names disagree with task_dim')
    task_dim = net['task_dim']
    norm = model.normalization
    vectors = {'problem.joint_lower': (problem['joint_lower'], dim),
               'problem.joint_upper': (problem['joint_upper'], dim),
               'problem.task_lower': (problem['task_lower'], task_dim),
               'problem.task_upper': (problem['task_upper'], task_dim),
               'normalization.x_lower': (norm.x_lower, dim),
               'normalization.x_upper': (norm.x_upper, dim),
               'normalization.y_mean': (norm.y_mean, task_dim),
               'normalization.y_std': (norm.y_std, task_dim)}
    for name, (value, length) in vectors.items():
        if np.shape(value) != (length,):
            raise ValueError(f'{name} has shape {np.shape(value)}, expected ({length},)')
    if not (np.all(norm.x_upper > norm.x_lower) and np.all(norm.y_std > 0) and norm.cost_std > 0):
        raise ValueError('normalization has an empty range or a non-positive std')
    for name in ('joint', 'task'):
        if not np.all(np.asarray(problem[f'{name}_lower']) < np.asarray(problem[f'{name}_upper'])):
            raise ValueError(f'problem.{name}_lower is not below problem.{name}_upper')
    example = model.example_configuration
    if example is not None:
        if example.shape != (dim,):
            raise ValueError(f'problem.example_configuration has shape {example.shape}, '
                             f'expected ({dim},)')
        if not np.all((example >= model.joint_lower) & (example <= model.joint_upper)):
            raise ValueError('problem.example_configuration is outside the joint limits')
    _check_cost_head(model.cost_head, task_dim)
    probe = np.zeros((1, dim))
    if not np.all(np.isfinite(model.network.forward(probe))):
        raise ValueError('network gives non-finite output')
    if not np.all(np.isfinite(model.cost_head.phi(np.zeros((1, task_dim))))):
        raise ValueError('cost head gives non-finite output')


def _check_cost_head(head: CostHeadMap, task_dim: int) -> None:
    """Each layer's W (out, in) takes the previous output; the last gives one number."""
    width = task_dim
    for i, (w, b) in enumerate(head.weights):
        if w.ndim != 2 or w.shape[1] != width or b.shape != (w.shape[0],):
            raise ValueError(f'cost head layer {i}: W {w.shape} and b {b.shape} do not take '
                             f'{width} inputs')
        width = w.shape[0]
    if width != 1:
        raise ValueError('the cost head must end in one output')


def probe_configurations(model: ModelFile) -> np.ndarray:
    """Fixed probe inputs (PROBE_COUNT, n): the joint box's corners-to-centre diagonal and a
    seeded spread over the box."""
    lower, upper = model.joint_lower, model.joint_upper
    diagonal = lower + np.linspace(0.0, 1.0, 5)[:, None] * (upper - lower)
    spread = np.random.default_rng(0).uniform(lower, upper, (PROBE_COUNT - 5, len(lower)))
    return np.vstack([diagonal, spread])


def _check_onnx(model: ModelFile) -> None:
    """ModelFileError unless the ONNX file loads and matches the JSON weights on the probes."""
    from loink_ros.core.runtime.onnx_forward import OnnxForward  # onnxruntime only here
    where = f'{model.path}: {model.onnx_path.name}'
    q = probe_configurations(model)
    try:
        got = OnnxForward(model.onnx_path)(q)
    except Exception as err:   # onnxruntime raises its own exception types for bad graphs
        raise ModelFileError(f'{where} is not a usable ONNX model: {_one_line(err)}') from None
    for name, a, b in zip(('task', 'latent', 'cost'), got, model.forward(q)):
        if a.shape != b.shape or not np.all(np.abs(a - b) <= ONNX_AGREE * (1.0 + np.abs(b))):
            raise ModelFileError(f'{where} disagrees with the JSON weights on its {name} output '
                                 '(the files do not belong together)')
