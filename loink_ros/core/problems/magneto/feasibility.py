"""When a Magneto stance is feasible: inside the configuration bounds, gimbals inside their
limits, body corners >= CLEARANCE above the surface; a stance whose required adhesion
exceeds the magnet force cannot hold (named by the violations, not part of `feasible`)."""

from __future__ import annotations

import numpy as np

from loink_ros.core.problems.backends import NUMPY
from loink_ros.core.problems.magneto.geometry import LEGS
from loink_ros.core.problems.magneto.kinematics import gimbal_angles
from loink_ros.core.problems.magneto.parameters import BODY_CORNERS, CLEARANCE, FEASIBILITY_TOL


def feasibility(q: np.ndarray, kinematics: dict, lower: np.ndarray, upper: np.ndarray,
                gimbal_lower: np.ndarray, gimbal_upper: np.ndarray,
                tol: float = FEASIBILITY_TOL) -> dict[str, np.ndarray]:
    """Per configuration (B,): inside bounds, gimbals inside limits, clearance, all; from
    q (B, 18) and its forward_batch() `kinematics`."""
    bounds = np.all((q >= lower - tol) & (q <= upper + tol), axis=1)
    g = kinematics['gimbal_angles']
    gimbal = np.all((g >= gimbal_lower - tol) & (g <= gimbal_upper + tol), axis=(1, 2))
    clear = np.all(kinematics['corners'][..., 2] >= CLEARANCE - tol, axis=1)
    return {'bounds': bounds, 'gimbals': gimbal, 'clearance': clear,
            'all': bounds & gimbal & clear}


def gimbal_violations(dirs: np.ndarray, gimbal_lower: np.ndarray,
                      gimbal_upper: np.ndarray) -> list[str]:
    """The gimbal limits that magnet directions (4, 3) in the gimbal frames break."""
    gimbals = np.column_stack(gimbal_angles(NUMPY, dirs.T))
    excess = np.maximum(gimbals - gimbal_upper, gimbal_lower - gimbals)
    return [f'gimbal {axis} limit of leg {leg} exceeded by {excess[k, a]:.3g} rad'
            for k, leg in enumerate(LEGS) for a, axis in enumerate('zy')
            if excess[k, a] > FEASIBILITY_TOL]


def clearance_violations(height: float, rotation: np.ndarray) -> list[str]:
    """The body clearance, if the corners of a body at `height` with `rotation` break it."""
    heights = height + (rotation @ np.array(BODY_CORNERS).T)[2]
    if heights.min() < CLEARANCE - FEASIBILITY_TOL:
        return [f'body clearance {heights.min():.3g} m below {CLEARANCE:g} m']
    return []


def adhesion_violations(adhesion: float, magnet_force: float) -> list[str]:
    """The magnet force, if a stance needs more adhesion than it gives."""
    if adhesion > magnet_force:
        return [f'required adhesion {adhesion:.4g} N above the magnet force {magnet_force:g} N']
    return []
