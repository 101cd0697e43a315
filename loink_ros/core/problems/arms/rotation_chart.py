"""The orientation part of a pose task: the rotation vector of R relative to a nominal R0.

r = log(R0^T R) (axis times angle, |r| <= pi) is smooth except where the angle reaches pi,
the one place every 3-D chart of the rotations must cut. Centred on the nominal, it puts
that cut on the rotations farthest from the nominal. The same formula serves numpy and
CasADi (the compiled runtime), so both give the same numbers.
"""

import math

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.backends import MATH

# Below this |sin(angle)| the chart uses the series of angle / sin(angle).
SMALL_SINE = 1e-6


def rotation_vector(ops, m) -> list:
    """log(M) as three scalars from the nine entries m[i][j] of a rotation M; `ops` is a
    backend of problems/backends.py (MATH, or casadi_ops() for the compiled runtime)."""
    s = [0.5 * (m[2][1] - m[1][2]), 0.5 * (m[0][2] - m[2][0]), 0.5 * (m[1][0] - m[0][1])]
    c = 0.5 * (m[0][0] + m[1][1] + m[2][2] - 1.0)
    sine = ops.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2])
    ratio = ops.if_else(sine < SMALL_SINE, 1.0 + sine * sine / 6.0,
                        ops.atan2(sine, c) / ops.fmax(sine, SMALL_SINE))
    return [ratio * v for v in s]


def chart(nominal: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Chart coordinates (3,) of one rotation matrix relative to the nominal."""
    relative = nominal.T @ rotation
    return np.array(rotation_vector(MATH, relative.tolist()))


def chart_jacobian(nominal: np.ndarray, rotation: np.ndarray,
                   local_angular: np.ndarray) -> np.ndarray:
    """d chart / d q (3, n) from the frame's angular Jacobian in its own axes (3, n)."""
    return pin.Jlog3(nominal.T @ rotation) @ local_angular


def quaternion_matrix(xyzw) -> np.ndarray:
    """Rotation matrix of a quaternion (x, y, z, w), normalised; ValueError for zero."""
    x, y, z, w = (float(v) for v in xyzw)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not norm > 0.0 or not math.isfinite(norm):
        raise ValueError('the quaternion is zero or not finite')
    return pin.Quaternion(w / norm, x / norm, y / norm, z / norm).toRotationMatrix()


def matrix_quaternion(rotation: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix, w >= 0."""
    quat = pin.Quaternion(rotation)
    xyzw = np.array([quat.x, quat.y, quat.z, quat.w])
    return -xyzw if xyzw[3] < 0 else xyzw
