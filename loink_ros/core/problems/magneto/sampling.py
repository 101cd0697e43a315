"""Magneto's targets and near-contact stances: footholds around the nominal ones, random
body poses around their centroid, legs by closed-form IK."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from loink_ros.core.problems.magneto.leg_ik import ClosedFormLegs
from loink_ros.core.problems.magneto.parameters import (
    ANGLE_RANGE,
    BODY_OFFSET,
    DATA_MARGIN,
    FOOT_RANGE,
    FOOT_Z,
    HEIGHT_RANGE,
)


def sample_targets(nominal_feet: np.ndarray, count: int, rng: np.random.Generator,
                   margin: float = 0.0, foot_z: float = 0.0) -> np.ndarray:
    """Tasks (count, 13): each foothold within FOOT_RANGE + margin of `nominal_feet` (4, 3)
    and up to foot_z off the surface, heights in HEIGHT_RANGE +/- margin (not all feasible)."""
    feet = nominal_feet[None] + rng.uniform(-1, 1, (count, 4, 3)) * [
        FOOT_RANGE + margin, FOOT_RANGE + margin, foot_z]
    lo, hi = HEIGHT_RANGE
    height = rng.uniform(lo - margin, hi + margin, count)
    return np.column_stack([feet.reshape(count, 12), height])


def stances_for(legs: ClosedFormLegs, tasks: np.ndarray, rng: np.random.Generator,
                offset: float = BODY_OFFSET, angle: float = ANGLE_RANGE) -> np.ndarray:
    """One random body pose per task (around the foothold centroid) with its leg IK,
    (B, 18); NaN rows where a foothold is out of reach."""
    tasks = np.atleast_2d(tasks)
    feet = tasks[:, :12].reshape(-1, 4, 3)
    centroid = feet.mean(1)
    pose = np.column_stack([centroid[:, 0] + rng.uniform(-offset, offset, len(tasks)),
                            centroid[:, 1] + rng.uniform(-offset, offset, len(tasks)),
                            rng.uniform(-angle, angle, (len(tasks), 3)), tasks[:, 12]])
    joints, reach = legs.solve(pose, feet)
    q = np.hstack([pose, joints])
    return np.where(reach.all(1)[:, None], q, np.nan)


def sample_stances(nominal_feet: np.ndarray, legs: ClosedFormLegs,
                   feasible: Callable[[np.ndarray], np.ndarray], count: int,
                   rng: np.random.Generator) -> np.ndarray:
    """Feasible configurations near the wall-contact set (count, 18), the training data.

    Footholds within FOOT_RANGE + DATA_MARGIN of nominal and up to FOOT_Z off the surface,
    heights in HEIGHT_RANGE +/- DATA_MARGIN, body offsets / angles uniform around the
    foothold centroid, legs by closed-form IK; only stances that `feasible` (B, 18) -> (B,)
    passes are kept.
    """
    kept, total = [], 0
    while total < count:
        need = max(64, int(1.6 * (count - total)))
        tasks = sample_targets(nominal_feet, need, rng, DATA_MARGIN, FOOT_Z)
        q = stances_for(legs, tasks, rng)
        q = q[np.isfinite(q).all(1)]
        q = q[feasible(q)]
        kept.append(q)
        total += len(q)
    return np.concatenate(kept)[:count]
