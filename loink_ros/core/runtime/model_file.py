"""Loading and finding model files (docs/MODEL_FORMAT.md)."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loink_ros.core.normalization import Normalization
from loink_ros.core.runtime.cost_head import CostHeadMap
from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.network import BiLipMap

FORMAT = 'loink-model'
FORMAT_VERSION = 1
REPO_MODELS = Path(__file__).resolve().parents[3] / 'models'


@dataclass
class ModelFile:
    """A loaded model: metadata plus the numpy network."""

    path: Path
    meta: dict
    normalization: Normalization
    network: BiLipMap
    cost_head: CostHeadMap

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
    def onnx_path(self) -> Path:
        return self.path.parent / self.meta['onnx']


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
    """Read and check a model; raises ModelFileError with a one-line reason."""
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
        model = ModelFile(path, meta, Normalization.from_dict(meta['normalization']),
                          BiLipMap.from_weights(meta['network']['layers']),
                          CostHeadMap(meta['network']['cost_head']['layers']))
        _check_shapes(model)
        onnx_path = model.onnx_path
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ModelFileError(f'{path} is corrupt: {type(err).__name__}: {err}') from None
    if not onnx_path.exists():
        raise ModelFileError(f'{path} names {onnx_path.name}, which does not exist')
    return model


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
    probe = np.zeros((1, dim))
    if not np.all(np.isfinite(model.network.forward(probe))):
        raise ValueError('network gives non-finite output')
    if model.cost_head.weights[-1][0].shape[0] != 1:
        raise ValueError('the cost head must end in one output')
    if not np.all(np.isfinite(model.cost_head.phi(np.zeros((1, task_dim))))):
        raise ValueError('cost head gives non-finite output')
