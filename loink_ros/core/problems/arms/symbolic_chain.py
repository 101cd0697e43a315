"""A Pinocchio model's kinematics as CasADi expressions: frame placements and the generalized
gravity, for the compiled runtime (compiled/codegen.py). Same definitions as Pinocchio:
oMi = oM(parent) * jointPlacement * X_J(q_i), g(q) = dV/dq with V = -sum m_i g0 . c_i(q)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin


def motion_axes(model: pin.Model) -> list[tuple[str, np.ndarray]]:
    """Per joint: ('revolute' or 'prismatic', unit axis in the joint frame), read from the
    joint's motion subspace at the neutral configuration (one velocity per joint)."""
    data = model.createData()
    pin.computeJointJacobians(model, data, pin.neutral(model))
    axes = []
    for i, joint in enumerate(model.joints[1:], start=1):
        s = pin.getJointJacobian(model, data, i, pin.LOCAL)[:, joint.idx_v]
        linear, angular = s[:3], s[3:]
        if np.linalg.norm(angular) > 1e-12 and np.linalg.norm(linear) < 1e-12:
            axes.append(('revolute', angular / np.linalg.norm(angular)))
        elif np.linalg.norm(angular) < 1e-12:
            axes.append(('prismatic', linear / np.linalg.norm(linear)))
        else:
            raise ValueError(f'joint {model.names[i]!r} is neither revolute nor prismatic')
    return axes


def _rotation(ca, axis: np.ndarray, angle):
    """Rodrigues: I + sin(a) K + (1 - cos(a)) K^2 for a unit axis."""
    k = ca.DM([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return ca.DM.eye(3) + ca.sin(angle) * k + (1.0 - ca.cos(angle)) * (k @ k)


class SymbolicChain:
    """Placements oMi (rotation, translation) of every joint of `model` at a CasADi SX q
    (one coordinate per joint: an angle or a position)."""

    def __init__(self, model: pin.Model, q):
        import casadi as ca
        self.model, self.q = model, q
        rotations, translations = [ca.DM.eye(3)], [ca.DM.zeros(3)]
        for i, (kind, axis) in enumerate(motion_axes(model), start=1):
            parent, placement = model.parents[i], model.jointPlacements[i]
            rot = rotations[parent] @ ca.DM(placement.rotation)
            pos = translations[parent] + rotations[parent] @ ca.DM(placement.translation)
            angle = q[model.joints[i].idx_v]
            if kind == 'revolute':
                rot = rot @ _rotation(ca, axis, angle)
            else:
                pos = pos + rot @ ca.DM(axis) * angle
            rotations.append(rot)
            translations.append(pos)
        self.rotations, self.translations = rotations, translations

    def frame_position(self, frame_id: int):
        """Position (3) of a frame in the world (the URDF root)."""
        import casadi as ca
        frame = self.model.frames[frame_id]
        offset = ca.DM(frame.placement.translation)
        return self.translations[frame.parentJoint] + self.rotations[frame.parentJoint] @ offset

    def angular_jacobian(self, frame_id: int):
        """(3, n): a frame's angular velocity in the world axes per joint velocity: the world
        axis of each revolute joint that carries the frame, 0 for the others."""
        import casadi as ca
        frame = self.model.frames[frame_id]
        columns = [ca.DM.zeros(3) for _ in range(self.model.nv)]
        axes = motion_axes(self.model)
        for i in self.model.supports[frame.parentJoint][1:]:
            kind, axis = axes[i - 1]
            if kind == 'revolute':
                columns[self.model.joints[i].idx_v] = self.rotations[i] @ ca.DM(axis)
        return ca.horzcat(*columns)

    def frame_rotation(self, frame_id: int):
        """Rotation (3 x 3) of a frame in the world."""
        import casadi as ca
        frame = self.model.frames[frame_id]
        return self.rotations[frame.parentJoint] @ ca.DM(frame.placement.rotation)

    def gravity_torque(self):
        """Generalized gravity (n): the joint torques holding q against gravity."""
        import casadi as ca
        g0 = ca.DM(self.model.gravity.linear)
        potential = 0
        for i in range(1, self.model.njoints):
            inertia = self.model.inertias[i]
            com = self.translations[i] + self.rotations[i] @ ca.DM(inertia.lever)
            potential -= inertia.mass * ca.dot(g0, com)
        return ca.gradient(potential, self.q)
