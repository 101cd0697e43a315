"""A robot description: the YAML file `loink robot init` writes and `loink robot train` reads
(docs/ROBOT.md). Every key is checked; a bad one gives a SpecError naming the file and key."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import yaml

from loink_ros.core.problems.arms.cost_terms import TERMS

AXES = 'xyz'


class SpecError(ValueError):
    """A robot description that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Field:
    """One key of a section: its kind, its default (None: required) and a check."""

    kind: str            # 'int', 'float', 'bool', 'ints', 'axes', 'device', 'workers'
    default: object = None
    low: float | None = None      # inclusive
    high: float | None = None     # inclusive
    positive: bool = False        # strictly above zero


SECTIONS: dict[str, dict[str, Field]] = {
    'task': {'axes': Field('axes', 'xyz')},
    'dataset': {'samples': Field('int', 200_000, low=1000), 'workers': Field('workers', 'auto')},
    'network': {'blocks': Field('ints', [64, 64]), 'depth': Field('int', 2, low=1),
                'mu': Field('float', 0.1, positive=True), 'nu': Field('float', 10.0, positive=True),
                'learn_bounds': Field('bool', False), 'cost_hidden': Field('ints', [64, 64])},
    'training': {'epochs': Field('int', 40, low=1), 'batch_size': Field('int', 512, low=1),
                 'lr': Field('float', 2e-3, positive=True),
                 'lr_final': Field('float', 1e-5, low=0.0),
                 'cost_weight': Field('float', 1.0, low=0.0),
                 'val_fraction': Field('float', 0.1, positive=True, high=0.5),
                 'device': Field('device', 'auto'), 'threads': Field('int', 1, low=1)},
    'check': {'targets': Field('int', 60, low=1), 'starts': Field('int', 12, low=2),
              'max_ambiguous': Field('float', 0.05, low=0.0, high=1.0)},
    'bench': {'targets': Field('int', 200, low=1), 'starts': Field('int', 16, low=1)},
    'solver': {'optimum_inside_limits': Field('bool', False)},
}
TOP = ('name', 'urdf', 'base', 'tip', 'task', 'joints', 'cost', 'dataset', 'network',
       'training', 'check', 'bench', 'solver', 'seed', 'output')
JOINT_KEYS = ('limits', 'locked')


@dataclass
class RobotSpec:
    """A checked description; paths are absolute, every section has all its keys."""

    name: str
    urdf: Path
    base: str
    tip: str
    limits: dict[str, tuple[float, float]]
    locked: dict[str, float]
    cost: dict[str, dict]
    sections: dict[str, dict]
    seed: int
    output: Path
    source: Path | None = None

    @property
    def axes(self) -> str:
        return self.sections['task']['axes']

    def to_dict(self, relative_to: Path | None = None) -> dict:
        """The description as plain data (paths relative to `relative_to` when given)."""
        def path(p: Path) -> str:
            return str(p.relative_to(relative_to)) if relative_to else str(p)
        return {'name': self.name, 'urdf': path(self.urdf), 'base': self.base, 'tip': self.tip,
                **{k: dict(v) for k, v in self.sections.items() if k == 'task'},
                'joints': {'limits': {k: list(v) for k, v in self.limits.items()},
                           'locked': dict(self.locked)},
                'cost': {k: dict(v) for k, v in self.cost.items()},
                **{k: dict(v) for k, v in self.sections.items() if k != 'task'},
                'seed': self.seed}


def load_spec(path: Path) -> RobotSpec:
    """Read and check a description file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SpecError(f'{path}: no such file') from None
    except yaml.YAMLError as err:
        raise SpecError(f'{path}: not valid YAML: {" ".join(str(err).split())}') from None
    spec = spec_from_dict(data, path.resolve().parent, str(path), path.resolve())
    if not spec.urdf.is_file():
        raise SpecError(f'{path}: urdf: {spec.urdf} does not exist')
    return spec


def spec_from_dict(data, folder: Path, where: str, source: Path | None = None) -> RobotSpec:
    """Check plain data (a parsed file, or a model's stored description); relative paths are
    taken from `folder`; messages start with `where`."""
    def fail(key: str, text: str):
        raise SpecError(f'{where}: {key}: {text}' if key else f'{where}: {text}')

    if not isinstance(data, dict):
        fail('', 'expected a mapping of keys (name, urdf, base, tip, ...)')
    _known_keys(data, TOP, '', fail)
    for key in ('name', 'urdf', 'base', 'tip'):
        if key not in data:
            fail(key, 'missing (required)')
        if not isinstance(data[key], str) or not data[key].strip():
            fail(key, f'must be a non-empty string, got {data[key]!r}')
    if not data['name'].replace('_', '').isalnum():
        fail('name', f'{data["name"]!r}: use letters, digits and _ (it names files and topics)')
    urdf = (folder / data['urdf']).resolve()
    sections = {name: _section(data.get(name), name, schema, fail)
                for name, schema in SECTIONS.items()}
    joints = data.get('joints') or {}
    if not isinstance(joints, dict):
        fail('joints', 'must be a mapping with limits and locked')
    _known_keys(joints, JOINT_KEYS, 'joints', fail)
    limits = {name: _range(value, f'joints.limits.{name}', fail)
              for name, value in _mapping(joints.get('limits'), 'joints.limits', fail).items()}
    locked = {name: _number(value, f'joints.locked.{name}', fail)
              for name, value in _mapping(joints.get('locked'), 'joints.locked', fail).items()}
    cost = _cost(data.get('cost'), fail)
    seed = data.get('seed', 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        fail('seed', f'must be an integer >= 0, got {seed!r}')
    output = data.get('output', data['name'])
    if not isinstance(output, str) or not output.strip():
        fail('output', f'must be a folder name, got {output!r}')
    return RobotSpec(data['name'], urdf, data['base'], data['tip'], limits, locked, cost,
                     sections, seed, (folder / output).resolve(), source)


def _known_keys(data: dict, known, where: str, fail) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f'; did you mean {close[0]!r}?' if close else ''
            fail(f'{where}.{key}' if where else str(key),
                 f'unknown key{hint} (known: {", ".join(known)})')


def _mapping(value, where: str, fail) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(where, f'must be a mapping (joint name: value), got {value!r}')
    return value


def _number(value, where: str, fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ''
        try:
            float(value)
            hint = ' (YAML reads a number like 1e-5 as text: write 1.0e-5)'
        except (TypeError, ValueError):
            pass
        fail(where, f'must be a number, got {value!r}{hint}')
    if value != value or abs(value) == float('inf'):
        fail(where, f'must be finite, got {value!r}')
    return float(value)


def _range(value, where: str, fail) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        fail(where, f'must be [lower, upper], got {value!r}')
    lower, upper = (_number(v, where, fail) for v in value)
    if not lower < upper:
        fail(where, f'lower {lower:g} must be below upper {upper:g}')
    return lower, upper


def _section(value, name: str, schema: dict[str, Field], fail) -> dict:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        fail(name, f'must be a mapping with keys {", ".join(schema)}')
    _known_keys(value, tuple(schema), name, fail)
    return {key: _value(value.get(key, spec.default), spec, f'{name}.{key}', fail)
            for key, spec in schema.items()}


def _value(value, spec: Field, where: str, fail):
    if spec.kind == 'bool':
        if not isinstance(value, bool):
            fail(where, f'must be true or false, got {value!r}')
        return value
    if spec.kind == 'axes':
        if (not isinstance(value, str) or not value or any(a not in AXES for a in value)
                or len(set(value)) != len(value)):
            fail(where, f'must be position axes out of x, y, z (e.g. xyz or xz), got {value!r}')
        return ''.join(a for a in AXES if a in value)
    if spec.kind == 'device':
        if value not in ('auto', 'cpu', 'cuda'):
            fail(where, f'must be auto, cpu or cuda, got {value!r}')
        return value
    if spec.kind == 'workers':
        if value == 'auto':
            return value
        spec = Field('int', low=1)
    if spec.kind == 'ints':
        if not isinstance(value, list) or not value or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
            fail(where, f'must be a list of positive integers, e.g. [64, 64], got {value!r}')
        return list(value)
    if spec.kind == 'int' and (isinstance(value, bool) or not isinstance(value, int)):
        fail(where, f'must be an integer, got {value!r}')
    number = _number(value, where, fail) if spec.kind in ('int', 'float') else value
    if spec.low is not None and number < spec.low:
        fail(where, f'must be >= {spec.low:g}, got {value!r}')
    if spec.high is not None and number > spec.high:
        fail(where, f'must be <= {spec.high:g}, got {value!r}')
    if spec.positive and number <= 0:
        fail(where, f'must be > 0, got {value!r}')
    return int(value) if spec.kind == 'int' else number


def _cost(value, fail) -> dict[str, dict]:
    if not isinstance(value, dict) or not value:
        fail('cost', f'must map term names to settings, e.g. range_centre: {{weight: 1.0}}; '
             f'terms: {", ".join(TERMS)}')
    cost = {}
    for name, settings in value.items():
        if name not in TERMS:
            _known_keys({name: None}, tuple(TERMS), 'cost', fail)
        where = f'cost.{name}'
        if isinstance(settings, (int, float)) and not isinstance(settings, bool):
            settings = {'weight': settings}
        if not isinstance(settings, dict):
            fail(where, f'must be a mapping like {{weight: 1.0}}, got {settings!r}')
        _known_keys(settings, ('weight', 'scale', *TERMS[name].options), where, fail)
        if 'weight' not in settings:
            fail(f'{where}.weight', 'missing (required)')
        term = dict(settings)
        term['weight'] = _number(settings['weight'], f'{where}.weight', fail)
        if term['weight'] < 0:
            fail(f'{where}.weight', f'must be >= 0, got {settings["weight"]!r}')
        if 'scale' in settings:
            term['scale'] = _number(settings['scale'], f'{where}.scale', fail)
            if term['scale'] <= 0:
                fail(f'{where}.scale', f'must be > 0, got {settings["scale"]!r}')
        if name == 'nominal_posture':
            term['posture'] = {k: _number(v, f'{where}.posture.{k}', fail) for k, v in
                               _mapping(settings.get('posture'), f'{where}.posture', fail).items()}
        if name == 'manipulability' and 'reference' in settings:
            term['reference'] = _number(settings['reference'], f'{where}.reference', fail)
        if name == 'joint_limit_barrier' and 'margin' in settings:
            margin = _number(settings['margin'], f'{where}.margin', fail)
            if not 0 < margin <= 1:
                fail(f'{where}.margin', f'must be in (0, 1], got {settings["margin"]!r}')
            term['margin'] = margin
        cost[name] = term
    if not any(t['weight'] > 0 for t in cost.values()):
        fail('cost', 'every weight is 0: give at least one term a positive weight, or each '
             'target has no optimum to learn')
    return cost
