"""A robot's joint limits: position and velocity from its URDF, tightened, and acceleration
and jerk added, by a joint_limits.yaml in the format MoveIt and ros2_control read
(`joint_limits.<joint>.has_velocity_limits / max_velocity`, `has_acceleration_limits /
max_acceleration`, `has_jerk_limits / max_jerk`, `has_position_limits / min_position /
max_position`).

A file's position and velocity limits only ever tighten the URDF's (as ros2_control's
joint_limits does); acceleration and jerk come from the file alone. A limit the file does not
give is infinite; `require` says which a caller cannot do without."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import yaml

# MoveIt's scaling factors when a joint_limits.yaml gives none (its robot_description_planning).
MOVEIT_DEFAULT_SCALING = 0.1


class JointLimitsError(ValueError):
    """A limits file that cannot be used, or a limit that is needed and missing: one line."""


@dataclass(frozen=True)
class JointLimits:
    """Per joint, in `names` order: position range and the largest |velocity|, |acceleration|
    and |jerk| (inf where none is known)."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray
    source: str = 'URDF'
    default_velocity_scaling: float = MOVEIT_DEFAULT_SCALING
    default_acceleration_scaling: float = MOVEIT_DEFAULT_SCALING

    def require(self, *kinds: str) -> JointLimits:
        """Itself, or JointLimitsError naming the first joint without a finite `kind` limit
        ('velocity', 'acceleration', 'jerk')."""
        for kind in kinds:
            values = getattr(self, kind)
            bad = ~np.isfinite(values)
            if bad.any():
                joint = self.names[int(np.flatnonzero(bad)[0])]
                raise JointLimitsError(f'joint {joint!r} has no {kind} limit in {self.source}: '
                                       f'give joint_limits.{joint}.has_{kind}_limits: true and '
                                       f'max_{kind} in a joint_limits.yaml')
        return self

    def scaled(self, velocity: float = 1.0, acceleration: float = 1.0,
               jerk: float = 1.0) -> JointLimits:
        """The same limits with velocity, acceleration and jerk scaled."""
        return replace(self, velocity=self.velocity * velocity,
                       acceleration=self.acceleration * acceleration, jerk=self.jerk * jerk)


def joint_limits(names: list[str], lower: np.ndarray, upper: np.ndarray,
                 velocity: np.ndarray, path: str | Path | None = None) -> JointLimits:
    """The URDF's limits of `names` (lower, upper, velocity: arrays in that order), with the
    limits file at `path` applied when given."""
    n = len(names)
    limits = JointLimits(tuple(names), np.array(lower, float), np.array(upper, float),
                         np.array(velocity, float), np.full(n, np.inf), np.full(n, np.inf))
    return with_file(limits, path) if path else limits


def with_file(limits: JointLimits, path: str | Path) -> JointLimits:
    """`limits` with a joint_limits.yaml applied (module docstring); JointLimitsError for a
    file that cannot be read or holds an unusable value."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise JointLimitsError(f'joint limits file {path}: {one_line(err)}') from None
    if not isinstance(document, dict) or not isinstance(document.get('joint_limits'), dict):
        raise JointLimitsError(f'joint limits file {path}: no joint_limits mapping')
    lower, upper = limits.lower.copy(), limits.upper.copy()
    values = {kind: getattr(limits, kind).copy() for kind in ('velocity', 'acceleration', 'jerk')}
    for i, name in enumerate(limits.names):
        entry = document['joint_limits'].get(name) or {}
        if not isinstance(entry, dict):
            raise JointLimitsError(f'joint limits file {path}: joint_limits.{name} is no mapping')
        for kind, value in values.items():
            given = limit_value(entry, kind, f'{path}: joint_limits.{name}')
            if given is not None:
                value[i] = min(value[i], given) if kind == 'velocity' else given
        if entry.get('has_position_limits'):
            low = number(entry, 'min_position', f'{path}: joint_limits.{name}')
            high = number(entry, 'max_position', f'{path}: joint_limits.{name}')
            lower[i], upper[i] = max(lower[i], low), min(upper[i], high)
            if lower[i] > upper[i]:
                raise JointLimitsError(f'joint limits file {path}: joint_limits.{name} leaves '
                                       f'an empty position range')
    scalings = [scaling(document, key, path) for key in
                ('default_velocity_scaling_factor', 'default_acceleration_scaling_factor')]
    return replace(limits, lower=lower, upper=upper, source=str(path),
                   default_velocity_scaling=scalings[0], default_acceleration_scaling=scalings[1],
                   **values)


def limit_value(entry: dict, kind: str, where: str) -> float | None:
    """max_<kind> where has_<kind>_limits is true, else None; positive and finite."""
    if not entry.get(f'has_{kind}_limits'):
        return None
    value = number(entry, f'max_{kind}', where)
    if not value > 0.0:
        raise JointLimitsError(f'{where}.max_{kind} = {value}: it must be > 0')
    return value


def number(entry: dict, key: str, where: str) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise JointLimitsError(f'{where}.{key} = {value!r}: a finite number is needed')
    return float(value)


def scaling(document: dict, key: str, path: Path) -> float:
    value = document.get(key, MOVEIT_DEFAULT_SCALING)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise JointLimitsError(f'joint limits file {path}: {key} = {value!r}: it must be in (0, 1]')
    return float(value)


def one_line(err: Exception) -> str:
    return ' '.join(str(err).split())
