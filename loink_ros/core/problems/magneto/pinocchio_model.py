"""Magneto in Pinocchio (free-flyer root): the reference kinematics the answers are checked
with. A configuration (18) is the body pose [x, y, yaw, roll, pitch, height] in F and the 12
active joints; Pinocchio's q adds the base quaternion and the gimbal joints."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.backends import MATH
from loink_ros.core.problems.magneto.geometry import ACTIVE_JOINTS, LEGS
from loink_ros.core.problems.magneto.parameters import SURFACE_NORMAL
from loink_ros.core.problems.thread_data import PerThreadData


def body_rotation(pose: np.ndarray) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll) of one pose [x, y, yaw, roll, pitch, height]."""
    return pin.rpy.rpyToMatrix(pose[3], pose[4], pose[2])


def pose_rate_map(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """d (base linear, angular velocity in the base frame) / d pose, (3, 6) each; columns
    x, y, yaw, roll, pitch, height."""
    rot = body_rotation(q)
    yaw, pitch = q[2], q[4]
    lin = np.zeros((3, 6))
    lin[:, [0, 1, 5]] = rot.T
    rz = pin.rpy.rpyToMatrix(0.0, 0.0, yaw)
    rzy = rz @ pin.rpy.rpyToMatrix(0.0, pitch, 0.0)
    ang = np.zeros((3, 6))
    ang[:, 2] = rot.T @ np.array([0.0, 0.0, 1.0])
    ang[:, 4] = rot.T @ rz[:, 1]
    ang[:, 3] = rot.T @ rzy[:, 0]
    return lin, ang


class MagnetoPinocchio:
    """Contact points, foot frames, CoM and the task Jacobian of Magneto from Pinocchio."""

    data = PerThreadData()

    def __init__(self, model: pin.Model, foot_offset: float):
        """`foot_offset` (m): gimbal centre to contact point, along the magnet axis."""
        self.model, self.foot_offset = model, foot_offset
        ids = [model.getJointId(n) for n in ACTIVE_JOINTS]
        self.q_index = np.array([model.idx_qs[j] for j in ids])
        self.v_index = np.array([model.idx_vs[j] for j in ids])
        self.gimbal_index = np.array([[model.idx_qs[model.getJointId(f'{leg}_gimbal_{a}_joint')]
                                       for a in ('z', 'y')] for leg in LEGS])
        self.centre_joint = [model.getJointId(f'{leg}_gimbal_z_joint') for leg in LEGS]
        self.foot_frame = [model.getFrameId(f'{leg}_foot') for leg in LEGS]

    def full_configuration(self, q: np.ndarray, resolve_gimbals: bool = True) -> np.ndarray:
        """Pinocchio configurations (B, nq) of configurations (B, 18), gimbals resolved flat.

        The gimbals are resolved from Pinocchio's own frames: with the magnet axis
        d = R_gimbal^T (-normal) in the (unrotated) gimbal frame, g_z = atan2(d_y, d_x),
        g_y = -asin(d_z), g_x = 0, so Rz(g_z) Ry(g_y) e_x = d and the foot z is the normal.
        """
        q = np.atleast_2d(q)
        out = np.tile(pin.neutral(self.model), (len(q), 1))
        data = self.data
        for row, full in zip(q, out):
            full[:3] = row[[0, 1, 5]]
            full[3:7] = pin.Quaternion(body_rotation(row)).coeffs()
            full[self.q_index] = row[6:]
            if resolve_gimbals:
                pin.forwardKinematics(self.model, data, full)
                for leg, j in enumerate(self.centre_joint):
                    d = -data.oMi[j].rotation.T @ SURFACE_NORMAL
                    full[self.gimbal_index[leg]] = [math.atan2(d[1], d[0]), -MATH.asin(d[2])]
        return out

    def contact_points(self, q: np.ndarray) -> np.ndarray:
        """Contact points of flat feet (gimbal centre - offset * normal), (B, 4, 3)."""
        full = self.full_configuration(q, resolve_gimbals=False)
        data = self.data
        out = np.empty((len(full), 4, 3))
        for i, row in enumerate(full):
            pin.forwardKinematics(self.model, data, row)
            centres = np.array([data.oMi[j].translation for j in self.centre_joint])
            out[i] = centres - self.foot_offset * SURFACE_NORMAL
        return out

    def feet_com_dirs(self, q: np.ndarray) -> tuple[np.ndarray, ...]:
        """Foot frame positions and normals (B, 4, 3), CoM (B, 3) and magnet directions in
        the gimbal frames (B, 4, 3), the gimbals resolved."""
        full = self.full_configuration(q)
        data = self.data
        pos, nrm = np.empty((len(full), 4, 3)), np.empty((len(full), 4, 3))
        com, dirs = np.empty((len(full), 3)), np.empty((len(full), 4, 3))
        for i, row in enumerate(full):
            com[i] = pin.centerOfMass(self.model, data, row)   # also runs the forward kinematics
            for k, f in enumerate(self.foot_frame):
                placement = pin.updateFramePlacement(self.model, data, f)
                pos[i, k] = placement.translation
                nrm[i, k] = placement.rotation[:, 2]
                j = self.centre_joint[k]
                frame = data.oMi[self.model.parents[j]].rotation @ self.model.jointPlacements[j].rotation
                dirs[i, k] = -frame.T @ SURFACE_NORMAL
        return pos, nrm, com, dirs

    def com(self, q: np.ndarray) -> np.ndarray:
        """Centre of mass in F, (B, 3)."""
        return np.array([pin.centerOfMass(self.model, self.data, row)
                         for row in self.full_configuration(q)])

    def contact_jacobian(self, q: np.ndarray) -> np.ndarray:
        """d contact points / d q (12, 18) at one configuration, from Pinocchio's joint
        Jacobians and the pose's rate map."""
        q = np.asarray(q, float)
        full = self.full_configuration(q[None], resolve_gimbals=False)[0]
        data = self.data
        pin.computeJointJacobians(self.model, data, full)
        lin, ang = pose_rate_map(q)
        jac = np.zeros((12, 18))
        for k, j in enumerate(self.centre_joint):
            full_jac = pin.getJointJacobian(self.model, data, j, pin.LOCAL_WORLD_ALIGNED)[:3]
            jac[3 * k:3 * k + 3, :6] = full_jac[:, :3] @ lin + full_jac[:, 3:6] @ ang
            jac[3 * k:3 * k + 3, 6:] = full_jac[:, self.v_index]
        return jac
