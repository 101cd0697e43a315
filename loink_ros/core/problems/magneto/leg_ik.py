"""Closed-form leg IK of Magneto: the coxa/femur/tibia joints putting each flat foot on its
foothold from a given body pose, for ROBOTS.md's leg (a yaw, then two parallel pitches).
The knee branch is tibia < 0, the only one inside the tibia limits."""

from __future__ import annotations

import numpy as np

from loink_ros.core.problems.backends import MATH
from loink_ros.core.problems.magneto.geometry import MagnetoGeometry
from loink_ros.core.problems.magneto.kinematics import body_rotations
from loink_ros.core.problems.magneto.parameters import SURFACE_NORMAL
from loink_ros.core.problems.magneto.pinocchio_model import body_rotation


def check_leg_structure(geometry: MagnetoGeometry) -> None:
    """The closed form assumes ROBOTS.md's leg: yaw, then two parallel pitches."""
    eye = np.eye(3).tolist()
    for leg in geometry.legs:
        (_, _), (r_f, p_f), (r_t, p_t), (r_g, p_g) = leg.placements
        if leg.axes != ['y', 'z', 'z'] or r_f != eye or r_t != eye or r_g != eye:
            raise ValueError(f'{leg.name}: unexpected leg structure for the closed-form IK')
        if p_f[0] != 0.0 or p_f[2] != 0.0 or p_t[1:] != [0.0, 0.0] or p_g[1:] != [0.0, 0.0]:
            raise ValueError(f'{leg.name}: unexpected link offsets for the closed-form IK')


class ClosedFormLegs:
    """Leg IK of one Magneto geometry, batched (numpy) or for one row (plain floats)."""

    def __init__(self, geometry: MagnetoGeometry):
        check_leg_structure(geometry)
        self.geometry = geometry
        self.foot_offset = geometry.legs[0].foot_offset[0]
        # Per leg: coxa rotation and position, femur y offset, femur and tibia lengths.
        self._row_constants = [(leg.placements[0][0], leg.placements[0][1], leg.placements[1][1][1],
                                leg.placements[2][1][0], leg.placements[3][1][0])
                               for leg in geometry.legs]

    def solve(self, pose: np.ndarray, feet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Leg joints (B, 12) putting the flat feet on `feet` (B, 4, 3) from the body pose
        (B, 6). Returns (joints, reachable (B, 4))."""
        pose, feet = np.atleast_2d(pose), np.asarray(feet, float).reshape(len(np.atleast_2d(pose)), 4, 3)
        rot = np.stack([body_rotation(p) for p in pose]) if len(pose) < 8 else body_rotations(pose)
        centres = feet + self.foot_offset * SURFACE_NORMAL
        local = np.einsum('bji,bkj->bki', rot, centres - pose[:, None, [0, 1, 5]])
        joints = np.empty((len(pose), 12))
        reach = np.empty((len(pose), 4), dtype=bool)
        for k, leg in enumerate(self.geometry.legs):
            (r_c, p_c), (_, p_f), (_, p_t), (_, p_g) = leg.placements
            r = (local[:, k] - np.asarray(p_c)) @ np.asarray(r_c)
            q1 = np.arctan2(-r[:, 2], r[:, 0])
            u = np.hypot(r[:, 0], r[:, 2]) - p_f[0]
            v = r[:, 1] - p_f[1]
            l1, l2 = p_t[0], p_g[0]
            cos3 = (u * u + v * v - l1 * l1 - l2 * l2) / (2 * l1 * l2)
            reach[:, k] = np.abs(cos3) <= 1.0
            q3 = -np.arccos(np.clip(cos3, -1.0, 1.0))
            q2 = np.arctan2(v, u) - np.arctan2(l2 * np.sin(q3), l1 + l2 * np.cos(q3))
            joints[:, 3 * k:3 * k + 3] = np.column_stack([q1, q2, q3])
        return joints, reach

    def solve_row(self, pose: list, feet: list) -> list:
        """solve() for one row in plain floats, pose (6) and feet (12) to joints (12): the
        runtime path, ~10x less overhead; a foothold out of reach gets the leg stretched
        or folded towards it."""
        return self.joints(MATH, pose, feet)

    def joints(self, ops, pose: list, feet: list) -> list:
        """solve_row on any backend (problems/backends.py): scalars pose (6), feet (12) to the
        joints (12). With CasADi's unclipped acos a foothold out of reach gives NaN."""
        x, y, yaw, roll, pitch, h = pose
        cy, sy, cp, sp, cr, sr = (ops.cos(yaw), ops.sin(yaw), ops.cos(pitch), ops.sin(pitch),
                                  ops.cos(roll), ops.sin(roll))
        # R = Rz(yaw) Ry(pitch) Rx(roll), columns used as rows of R^T.
        r = ((cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr),
             (sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr),
             (-sp, cp * sr, cp * cr))
        out = []
        off = self.foot_offset
        for k, (r_c, p_c, p_fy, l1, l2) in enumerate(self._row_constants):
            dx, dy, dz = feet[3 * k] - x, feet[3 * k + 1] - y, feet[3 * k + 2] + off - h
            loc = [r[0][i] * dx + r[1][i] * dy + r[2][i] * dz - p_c[i] for i in range(3)]
            r0 = r_c[0][0] * loc[0] + r_c[1][0] * loc[1] + r_c[2][0] * loc[2]
            r1 = r_c[0][1] * loc[0] + r_c[1][1] * loc[1] + r_c[2][1] * loc[2]
            r2 = r_c[0][2] * loc[0] + r_c[1][2] * loc[1] + r_c[2][2] * loc[2]
            q1 = ops.atan2(-r2, r0)
            u, v = ops.sqrt(r0 * r0 + r2 * r2), r1 - p_fy
            q3 = -ops.acos((u * u + v * v - l1 * l1 - l2 * l2) / (2 * l1 * l2))
            q2 = ops.atan2(v, u) - ops.atan2(l2 * ops.sin(q3), l1 + l2 * ops.cos(q3))
            out += [q1, q2, q3]
        return out
