"""Magneto's forward kinematics in the footprint frame F, written once for every `ops`
backend (problems/backends.py), plus its numpy batch form.

Configuration: body pose [x, y, yaw, roll, pitch, height] (R = Rz(yaw) Ry(pitch) Rx(roll))
and the 12 active joints; the passive gimbals are resolved so that each foot lies flat on
the surface (leg_forward). Frames: docs/MAGNETO.md.
"""

from __future__ import annotations

import numpy as np

from loink_ros.core.problems.backends import NUMPY
from loink_ros.core.problems.magneto.algebra import (
    add,
    axis_rotation,
    body_rotation,
    joint_rotation,
    mat_mul,
    mat_t_vec,
    mat_vec,
    mul,
    vadd,
    vscale,
)
from loink_ros.core.problems.magneto.geometry import LegGeometry, MagnetoGeometry


def gimbal_angles(ops, d: list) -> tuple:
    """Gimbal z and y angles putting the magnet axis on d (in the unrotated gimbal frame):
    Rz(g_z) Ry(g_y) e_x = d for g_z = atan2(d_y, d_x), g_y = -asin(d_z)."""
    return ops.atan2(d[1], d[0]), -ops.asin(d[2])


def leg_forward(ops, leg: LegGeometry, rot_b: list, pos_b: list, angles: list,
                normal: list) -> dict:
    """One leg in F: gimbal centre, resolved gimbal, foot, leg points, mass moments.

    The passive gimbal is resolved so that the foot frame lies flat on the surface: its z
    (the magnet face normal) equals the surface normal `normal`, and the last gimbal joint
    (about the magnet axis, which does not move the contact point) is 0. Then the foot
    contact point is the gimbal centre - |foot offset| * normal.
    """
    (r_c, p_c), (r_f, p_f), (r_t, p_t), (r_g, p_g) = leg.placements
    rot = mat_mul(rot_b, r_c)
    pos = vadd(pos_b, mat_vec(rot_b, p_c))
    frames = []
    for (r_next, p_next), axis, angle in zip([(r_f, p_f), (r_t, p_t), (r_g, p_g)], leg.axes, angles):
        rot = mat_mul(rot, joint_rotation(ops, axis, angle))
        frames.append((rot, pos))
        pos = vadd(pos, mat_vec(rot, p_next))
        rot = mat_mul(rot, r_next)
    centre, rot_g0 = pos, rot
    # Gimbal: Rz(g1) Ry(g2) e_x = d, the magnet axis in the gimbal frame, must be -normal.
    d = mat_t_vec(rot_g0, vscale(-1.0, normal))
    rho = ops.sqrt(add(mul(d[0], d[0]), mul(d[1], d[1])))
    c1, s1, c2, s2 = d[0] / rho, d[1] / rho, rho, -d[2]
    rot_gz = mat_mul(rot_g0, axis_rotation('z', c1, s1))
    rot_gy = mat_mul(rot_gz, axis_rotation('y', c2, s2))
    rot_gx = rot_gy
    foot = vadd(centre, mat_vec(rot_gx, leg.foot_offset))
    moments = []
    for (rot_j, pos_j), body in zip(frames + [(rot_gz, centre), (rot_gy, centre), (rot_gx, centre)],
                                    leg.bodies):
        point = vadd(pos_j, mat_vec(rot_j, body.lever))
        moments.append(vscale(body.mass, point))
    return {'centre': centre, 'foot': foot, 'gimbal_dir': d,
            'points': [frames[0][1], frames[1][1], frames[2][1], centre, foot],
            'gimbal_angles': gimbal_angles(ops, d), 'moments': moments}


def forward(ops, geometry: MagnetoGeometry, pose: list, joints: list, normal: list,
            corners: list) -> dict:
    """Whole robot in F from the body pose [x, y, yaw, roll, pitch, height] and 12 joints.

    Returns feet (4 x 3), gimbal centres, gimbal directions and angles, the CoM (3), the
    leg points and the body points `corners` (given in the base frame) in F.
    """
    x, y, yaw, roll, pitch, height = pose
    rot_b = body_rotation(ops, yaw, roll, pitch)
    pos_b = [x, y, height]
    normal = list(normal)
    legs = [leg_forward(ops, leg, rot_b, pos_b, joints[3 * i:3 * i + 3], normal)
            for i, leg in enumerate(geometry.legs)]
    moments = [vscale(geometry.base.mass, vadd(pos_b, mat_vec(rot_b, geometry.base.lever)))]
    for leg in legs:
        moments += leg['moments']
    total = [add(*(m[i] for m in moments)) for i in range(3)]
    com = vscale(1.0 / geometry.mass, total)
    return {'feet': [leg['foot'] for leg in legs], 'centres': [leg['centre'] for leg in legs],
            'gimbal_dirs': [leg['gimbal_dir'] for leg in legs],
            'gimbal_angles': [leg['gimbal_angles'] for leg in legs],
            'com': com, 'leg_points': [leg['points'] for leg in legs],
            'corners': [vadd(pos_b, mat_vec(rot_b, list(c))) for c in corners]}


def _stack(vectors: list) -> np.ndarray:
    """Lists (K) of backend vectors of (B,) scalars (or floats) as one array (B, K, len)."""
    return np.stack([np.stack(np.broadcast_arrays(*v), -1) for v in vectors], 1)


def forward_batch(geometry: MagnetoGeometry, q: np.ndarray, normal: list, corners: list) -> dict:
    """forward() on configurations (B, 18) in numpy: feet (B,4,3), centres, gimbal angles
    (B,4,2) and directions (B,4,3), CoM (B,3), corners (B,len(corners),3), leg points
    (B,4,5,3): hip, femur joint, knee, gimbal centre, foot."""
    q = np.atleast_2d(np.asarray(q, float))
    out = forward(NUMPY, geometry, [q[:, i] for i in range(6)], [q[:, 6 + i] for i in range(12)],
                  normal, corners)
    return {'feet': _stack(out['feet']), 'centres': _stack(out['centres']),
            'gimbal_dirs': _stack(out['gimbal_dirs']),
            'gimbal_angles': _stack(out['gimbal_angles']),
            'com': np.stack(np.broadcast_arrays(*out['com']), -1),
            'corners': _stack(out['corners']),
            'leg_points': np.stack([_stack(points) for points in out['leg_points']], 1)}


def body_rotations(pose: np.ndarray) -> np.ndarray:
    """Batched Rz(yaw) Ry(pitch) Rx(roll) of poses (B, 6), (B, 3, 3)."""
    rot = body_rotation(NUMPY, pose[:, 2], pose[:, 3], pose[:, 4])
    return _stack(rot)
