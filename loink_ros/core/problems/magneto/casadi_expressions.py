"""Magneto's task, cost and feasibility conditions as CasADi expressions, for optimisers
(CasADi is imported on first use: the runtime does not need it)."""

from __future__ import annotations

import numpy as np

from loink_ros.core.problems.backends import casadi_ops
from loink_ros.core.problems.magneto.cost import StanceCost
from loink_ros.core.problems.magneto.geometry import MagnetoGeometry
from loink_ros.core.problems.magneto.kinematics import forward
from loink_ros.core.problems.magneto.parameters import BODY_CORNERS, CLEARANCE, SURFACE_NORMAL


def gimbal_constraints(dirs: list, lower: np.ndarray, upper: np.ndarray) -> list:
    """Gimbal limits (4, 2) as g <= 0 on the magnet directions d = Rz(g1) Ry(g2) e_x in the
    gimbal frames: g1 = atan2(d_y, d_x) in [lo1, hi1], g2 = -asin(d_z) in [lo2, hi2]."""
    out = []
    for k, d in enumerate(dirs):
        (lo1, lo2), (hi1, hi2) = lower[k], upper[k]
        out += [d[1] - np.tan(hi1) * d[0], np.tan(lo1) * d[0] - d[1],   # g1 <= hi1, >= lo1
                -np.sin(hi2) - d[2], d[2] + np.sin(lo2)]                # g2 <= hi2, >= lo2
    return out


def casadi_expressions(geometry: MagnetoGeometry, cost: StanceCost, q=None,
                       clip: bool = False) -> dict:
    """Task (13), J and its parts, the exact required adhesion, CoM, feet, gimbal angles and
    the constraints g <= 0 (gimbal_g, clearance_g) on a CasADi SX vector q (18; a new symbol
    if None); `clip` as casadi_ops."""
    import casadi as ca
    ops = casadi_ops(clip)
    q = ca.SX.sym('q', 18) if q is None else q
    ql = [q[i] for i in range(18)]
    out = forward(ops, geometry, ql[:6], ql[6:], SURFACE_NORMAL.tolist(), BODY_CORNERS)
    terms = cost.terms(ops, ql, out['feet'], out['com'], out['gimbal_dirs'])
    feet = ca.vertcat(*[ca.vertcat(*f) for f in out['feet']])
    gimbal_g = gimbal_constraints(out['gimbal_dirs'], cost.gimbal_lower, cost.gimbal_upper)
    return {'q': q, 'task': ca.vertcat(feet, q[5]), 'J': terms['J'], 'J_f': terms['J_f'],
            'posture': terms['posture'], 'barrier': terms['barrier'], 'gimbal': terms['gimbal'],
            'adhesion': cost.required_adhesion(ops, out['feet'], out['com']),
            'com': ca.vertcat(*out['com']), 'feet': feet,
            'gimbal_angles': ca.vertcat(*[ca.vertcat(*a) for a in out['gimbal_angles']]),
            'gimbal_g': ca.vertcat(*gimbal_g),
            'clearance_g': ca.vertcat(*[CLEARANCE - c[2] for c in out['corners']])}
