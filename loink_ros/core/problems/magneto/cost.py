"""Magneto's cost (N), for every `ops` backend (problems/backends.py):

    J = J_f + posture + w_barrier * joint barrier + w_gimbal * gimbal barrier

J_f: required adhesion from the minimum-norm static contact forces (smooth max over the
feet); posture: w_position * squared body offset from the foothold centroid (m) +
w_angle * (yaw^2 + roll^2 + pitch^2); barriers: sum of -log(4 u (1 - u)), u the joint
position scaled to [0, 1] over its URDF limits (12 active joints; the 8 limited gimbal
joints), +inf where u is outside (0, 1): a stance past a gimbal limit costs +inf, the
infeasible marker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.backends import MATH, NUMPY
from loink_ros.core.problems.magneto.adhesion import adhesion_per_foot, contact_forces, worst_foot
from loink_ros.core.problems.magneto.kinematics import gimbal_angles
from loink_ros.core.problems.magneto.parameters import FRICTION, SURFACE_NORMAL, TANGENT_EPS

NORMAL = SURFACE_NORMAL.tolist()


def posture(q: list, feet: list, w_position: float, w_angle: float):
    """w_position * |body xy - foothold centroid xy|^2 + w_angle * (yaw^2 + roll^2 + pitch^2), N."""
    cx = (feet[0][0] + feet[1][0] + feet[2][0] + feet[3][0]) * 0.25
    cy = (feet[0][1] + feet[1][1] + feet[2][1] + feet[3][1]) * 0.25
    return (w_position * ((q[0] - cx) ** 2 + (q[1] - cy) ** 2)
            + w_angle * (q[2] ** 2 + q[3] ** 2 + q[4] ** 2))


def limit_barrier(ops, value, lower: float, upper: float):
    """-log(4 u (1 - u)), u = (value - lower) / (upper - lower); +inf outside (0, 1)."""
    u = (value - lower) / (upper - lower)
    return ops.neg_log(4.0 * u * (1.0 - u))


def joint_barrier(ops, joints: list, lower: np.ndarray, upper: np.ndarray):
    """Sum of limit_barrier over the 12 active joints (finite inside the configuration
    bounds, which lie inside the URDF limits)."""
    total = 0.0
    for k in range(12):
        total = total + limit_barrier(ops, joints[k], lower[k], upper[k])
    return total


def gimbal_barrier(ops, dirs: list, lower: np.ndarray, upper: np.ndarray):
    """Sum of limit_barrier over the 8 limited gimbal joints (4, 2), from the magnet
    directions; +inf past a limit."""
    total = 0.0
    for k, d in enumerate(dirs):
        angles = gimbal_angles(ops, d)
        for a in range(2):
            total = total + limit_barrier(ops, angles[a], lower[k, a], upper[k, a])
    return total


def _stack(scalars: list) -> np.ndarray:
    return np.stack(np.broadcast_arrays(*scalars), -1)


@dataclass(frozen=True)
class StanceCost:
    """J of one Magneto set-up: its weights, its gravity in F and the limits of its barriers."""

    gravity: list             # m/s^2 in F
    mass: float               # kg
    joint_lower: np.ndarray   # (12,) URDF limits of the active joints
    joint_upper: np.ndarray
    gimbal_lower: np.ndarray  # (4, 2) gimbal z, y limits
    gimbal_upper: np.ndarray
    w_position: float
    w_angle: float
    w_barrier: float
    w_gimbal: float
    smooth: float

    def terms(self, ops, q: list, feet: list, com: list, dirs: list) -> dict:
        """J and its parts J_f (smooth), posture, barrier, gimbal; and the contact forces."""
        forces = contact_forces(feet, com, self.gravity, self.mass)
        sigma = adhesion_per_foot(ops, forces, NORMAL, FRICTION, self.smooth, TANGENT_EPS)
        j_f = worst_foot(ops, sigma, self.smooth)
        body = posture(q, feet, self.w_position, self.w_angle)
        barrier = self.w_barrier * joint_barrier(ops, q[6:], self.joint_lower, self.joint_upper)
        gimbal = (self.w_gimbal * gimbal_barrier(ops, dirs, self.gimbal_lower, self.gimbal_upper)
                  if self.w_gimbal else 0.0 * j_f)
        return {'J': j_f + body + barrier + gimbal, 'J_f': j_f, 'posture': body,
                'barrier': barrier, 'gimbal': gimbal, 'forces': forces}

    def pull_per_foot(self, ops, forces: list) -> list:
        """The exact pull each foot needs (no smoothing), N."""
        return adhesion_per_foot(ops, forces, NORMAL, FRICTION, None)

    def required_adhesion(self, ops, feet: list, com: list):
        """The exact J_f of a stance: max over the feet of their pull, no smoothing."""
        forces = contact_forces(feet, com, self.gravity, self.mass)
        return worst_foot(ops, self.pull_per_foot(ops, forces), None)

    def evaluate(self, q: np.ndarray, feet: np.ndarray, com: np.ndarray,
                 dirs: np.ndarray) -> dict[str, np.ndarray]:
        """J, J_f, J_f_hard (exact max), posture, barrier, gimbal (B,), sigma (exact pull,
        B x 4) and forces (B x 4 x 3) from configurations (B, 18), feet (B, 4, 3), CoM (B, 3)
        and magnet directions in the gimbal frames (B, 4, 3)."""
        if len(q) == 1:   # plain floats: ~20x faster than numpy on one row
            parts = self._evaluate(MATH, q[0].tolist(), feet[0].tolist(), com[0].tolist(),
                                   dirs[0].tolist())
            return {k: np.asarray(v, float)[None] for k, v in parts.items()}
        return self._evaluate(NUMPY, [q[:, i] for i in range(18)],
                              [[feet[:, k, i] for i in range(3)] for k in range(4)],
                              [com[:, i] for i in range(3)],
                              [[dirs[:, k, i] for i in range(3)] for k in range(4)])

    def _evaluate(self, ops, q: list, feet: list, com: list, dirs: list) -> dict:
        parts = self.terms(ops, q, feet, com, dirs)
        pull = self.pull_per_foot(ops, parts['forces'])
        return {'J': parts['J'], 'J_f': parts['J_f'], 'J_f_hard': worst_foot(ops, pull, None),
                'posture': parts['posture'], 'barrier': parts['barrier'], 'gimbal': parts['gimbal'],
                'sigma': _stack(pull), 'forces': np.stack([_stack(f) for f in parts['forces']], -2)}
