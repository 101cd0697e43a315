"""Magneto's numbers (joint placements, axes, masses, CoM levers, gimbal limits) read from
the Pinocchio model of loink_ros/robots/magneto.urdf, so the backend-generic kinematics and
Pinocchio describe the same robot (test/test_magneto.py checks they agree to 1e-9)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

LEGS = ('AR', 'AL', 'BR', 'BL')
LEG_JOINTS = ('coxa', 'femur', 'tibia', 'gimbal_z', 'gimbal_y', 'gimbal_x')
ACTIVE_JOINTS = [f'{leg}_{part}_joint' for leg in LEGS for part in LEG_JOINTS[:3]]
ZERO_SNAP = 1e-14   # placement entries below this are exact zeros (cos(pi/2) round-off)


@dataclass(frozen=True)
class Body:
    """A rigid body moving with a joint: mass and CoM lever in the joint frame."""

    mass: float
    lever: list


@dataclass(frozen=True)
class LegGeometry:
    """One leg: coxa/femur/tibia placements and axes, gimbal centre, foot offset, bodies."""

    name: str
    placements: list      # [(R nested 3x3, p 3)] of coxa (in base), femur, tibia, gimbal_z
    axes: list            # active joint axes ('y', 'z', 'z')
    foot_offset: list     # foot contact frame origin in the magnet (gimbal_x) frame
    bodies: list          # Body of coxa, femur, tibia, gimbal_z, gimbal_y, gimbal_x joints
    gimbal_lower: np.ndarray
    gimbal_upper: np.ndarray


@dataclass(frozen=True)
class MagnetoGeometry:
    """Base body, total mass and the four legs (order LEGS)."""

    base: Body
    mass: float
    legs: list

    @classmethod
    def from_model(cls, model: pin.Model) -> MagnetoGeometry:
        """Read a Pinocchio model (free-flyer root) of magneto.urdf; checks its structure."""
        legs = [_leg_geometry(model, leg) for leg in LEGS]
        mass = float(sum(inertia.mass for inertia in model.inertias))
        return cls(_body(model, 1), mass, legs)


def _snap(a) -> list:
    a = np.where(np.abs(a) < ZERO_SNAP, 0.0, np.asarray(a, float))
    return a.tolist()


def _joint_id(model: pin.Model, name: str) -> int:
    if not model.existJointName(name):
        raise ValueError(f'joint {name!r} missing from the Magneto model')
    return model.getJointId(name)


def _axis_of(model: pin.Model, j: int) -> str:
    short = model.joints[j].shortname()
    if short not in ('JointModelRX', 'JointModelRY', 'JointModelRZ'):
        raise ValueError(f'{model.names[j]} is {short}, expected an axis-aligned revolute')
    return short[-1].lower()


def _body(model: pin.Model, j: int) -> Body:
    return Body(float(model.inertias[j].mass), _snap(model.inertias[j].lever))


def _foot_offset(model: pin.Model, leg: str, magnet_joint: int) -> list:
    """The contact frame origin in the magnet frame: on its x axis (the magnet axis)."""
    foot = model.frames[model.getFrameId(f'{leg}_foot')]
    if foot.parentJoint != magnet_joint:
        raise ValueError(f'{leg}_foot must hang off {leg}_gimbal_x_joint')
    offset = _snap(foot.placement.translation)
    if offset[1] != 0.0 or offset[2] != 0.0:
        raise ValueError(f'{leg}_foot must lie on the gimbal x axis')
    return offset


def _leg_geometry(model: pin.Model, leg: str) -> LegGeometry:
    ids = [_joint_id(model, f'{leg}_{part}_joint') for part in LEG_JOINTS]
    axes = [_axis_of(model, j) for j in ids]
    if axes[3:] != ['z', 'y', 'x']:
        raise ValueError(f'{leg} gimbal axes are {axes[3:]}, expected z, y, x')
    for j in ids[4:]:
        if not model.jointPlacements[j].isIdentity():
            raise ValueError(f'{model.names[j]}: the gimbal joints must share one centre')
    offset = _foot_offset(model, leg, ids[5])
    placements = [(_snap(model.jointPlacements[j].rotation),
                   _snap(model.jointPlacements[j].translation)) for j in ids[:4]]
    gimbal_q = [model.idx_qs[j] for j in ids[3:5]]
    return LegGeometry(leg, placements, axes[:3], offset, [_body(model, j) for j in ids],
                       model.lowerPositionLimit[gimbal_q].copy(),
                       model.upperPositionLimit[gimbal_q].copy())
