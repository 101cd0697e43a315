"""Magneto on an inclined surface: body pose + 12 joints, footholds + body height as the task,
required magnet adhesion J_f (+ small regularisers) as the cost. docs/MAGNETO.md says why.

Configuration (n = 18), in the footprint frame F (on the surface: z out of it, x uphill,
y across): body pose [x, y, yaw, roll, pitch, height] (base frame origin; R = Rz(yaw)
Ry(pitch) Rx(roll)) and the 12 active joints, coxa/femur/tibia of AR, AL, BR, BL. The
passive gimbals are not configuration: they are resolved so that each foot lies flat on
the surface (kinematics.leg_forward). Task (p = 13): the four contact points in F
and the commanded body height. Cost: cost.py. Feasible: feasibility.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.backends import MATH, casadi_ops
from loink_ros.core.problems.magneto import feasibility, sampling
from loink_ros.core.problems.magneto.casadi_expressions import casadi_expressions
from loink_ros.core.problems.magneto.cost import StanceCost
from loink_ros.core.problems.magneto.geometry import ACTIVE_JOINTS, LEGS, MagnetoGeometry
from loink_ros.core.problems.magneto.kinematics import forward_batch
from loink_ros.core.problems.magneto.leg_ik import ClosedFormLegs
from loink_ros.core.problems.magneto.parameters import (
    BODY_CORNERS,
    EXAMPLE_HEIGHT,
    FEASIBILITY_TOL,
    FRICTION,
    GRAVITY,
    JOINT_LOWER,
    JOINT_UPPER,
    MAGNET_FORCE,
    POSE_LOWER,
    POSE_NAMES,
    POSE_UPPER,
    SMOOTH,
    STANCE_JOINTS,
    SURFACE_NORMAL,
    W_ANGLE,
    W_BARRIER,
    W_GIMBAL,
    W_POSITION,
)
from loink_ros.core.problems.magneto.pinocchio_model import MagnetoPinocchio, body_rotation
from loink_ros.core.problems.problem import Problem
from loink_ros.core.problems.shipped_robots import robot_file
from loink_ros.core.problems.symbolic import SymbolicProblem


class MagnetoProblem(Problem):
    """Minimal-adhesion stance of Magneto for given footholds and body height."""

    def __init__(self, urdf: Path | None = None, inclination_deg: float = 40.0,
                 name: str = 'magneto', w_position: float = W_POSITION,
                 w_angle: float = W_ANGLE, w_barrier: float = W_BARRIER,
                 w_gimbal: float = W_GIMBAL, smooth: float = SMOOTH,
                 magnet_force: float = MAGNET_FORCE):
        """`magnet_force` (N) only sets the holding condition of violations()."""
        self.urdf = Path(urdf or robot_file('magneto.urdf'))
        model = pin.buildModelFromUrdf(str(self.urdf), pin.JointModelFreeFlyer())
        self.geometry = MagnetoGeometry.from_model(model)
        self.legs = ClosedFormLegs(self.geometry)
        self.robot = MagnetoPinocchio(model, self.legs.foot_offset)
        self.name, self.cost_name = name, 'required_adhesion_J'
        self.inclination = np.radians(inclination_deg)
        self.inclination_deg = float(inclination_deg)
        # Gravity in F: x uphill, z out of the surface.
        self.gravity = GRAVITY * np.array([-np.sin(self.inclination), 0.0, -np.cos(self.inclination)])
        self.magnet_force = magnet_force
        self.mass = self.geometry.mass
        self.joint_lower = model.lowerPositionLimit[self.robot.q_index].copy()
        self.joint_upper = model.upperPositionLimit[self.robot.q_index].copy()
        self.joint_names = POSE_NAMES + ACTIVE_JOINTS
        self.lower = np.concatenate([POSE_LOWER, np.maximum(np.tile(JOINT_LOWER, 4), self.joint_lower)])
        self.upper = np.concatenate([POSE_UPPER, np.minimum(np.tile(JOINT_UPPER, 4), self.joint_upper)])
        self.task_names = [f'{leg}_foot_{a}' for leg in LEGS for a in 'xyz'] + ['body_height_cmd']
        self.gimbal_lower = np.array([leg.gimbal_lower for leg in self.geometry.legs])
        self.gimbal_upper = np.array([leg.gimbal_upper for leg in self.geometry.legs])
        self.stance_cost = StanceCost(self.gravity.tolist(), self.mass, self.joint_lower,
                                      self.joint_upper, self.gimbal_lower, self.gimbal_upper,
                                      w_position, w_angle, w_barrier, w_gimbal, smooth)
        self.nominal_feet = self._nominal_feet()

    def _nominal_feet(self) -> np.ndarray:
        """Footholds (4, 3) of the nominal stance with its feet on the surface."""
        height = -self.forward(self.stance_configuration(0.0)[None])['feet'][0, 0, 2]
        feet = self.forward(self.stance_configuration(height)[None])['feet'][0]
        feet[:, 2] = 0.0
        return feet

    @classmethod
    def from_model(cls, meta: dict, urdf: Path | None = None) -> MagnetoProblem:
        """With the model file's magnet force (`magnet_force`, N; default MAGNET_FORCE)."""
        return cls(urdf, magnet_force=float(meta.get('magnet_force', MAGNET_FORCE)))

    @property
    def gimbal_index(self) -> np.ndarray:
        """Where the gimbal z, y angles (4, 2) sit in Pinocchio's q (full_configuration)."""
        return self.robot.gimbal_index

    def stance_configuration(self, height: float) -> np.ndarray:
        """Nominal stance: body level over the feet at `height`, ROBOTS.md's joint angles."""
        return np.concatenate([[0.0, 0.0, 0.0, 0.0, 0.0, height], STANCE_JOINTS])

    def metadata(self) -> dict:
        cost = self.stance_cost
        return {**super().metadata(), 'robot': 'magneto', 'urdf': self.urdf.name,
                'base_frame': 'footprint', 'tip_frame': ','.join(f'{leg}_foot' for leg in LEGS),
                'inclination_deg': self.inclination_deg, 'friction': FRICTION,
                'magnet_force': self.magnet_force,
                'cost_weights': {'position': cost.w_position, 'angle': cost.w_angle,
                                 'barrier': cost.w_barrier, 'gimbal': cost.w_gimbal,
                                 'smooth': cost.smooth}}

    # ---- kinematics: Pinocchio (the reference) and the batched numpy model ----------------

    def body_rotation(self, pose: np.ndarray) -> np.ndarray:
        """R = Rz(yaw) Ry(pitch) Rx(roll) of one pose [x, y, yaw, roll, pitch, height]."""
        return body_rotation(pose)

    def full_configuration(self, q: np.ndarray, resolve_gimbals: bool = True) -> np.ndarray:
        """Pinocchio configurations (B, nq) of configurations (B, 18), gimbals resolved flat."""
        return self.robot.full_configuration(q, resolve_gimbals)

    def task(self, q: np.ndarray) -> np.ndarray:
        """Contact points (flat feet: gimbal centre - offset * normal) and height, (B, 13)."""
        q = np.atleast_2d(q)
        out = np.empty((len(q), 13))
        out[:, :12] = self.robot.contact_points(q).reshape(len(q), 12)
        out[:, 12] = q[:, 5]
        return out

    def task_jacobian(self, q: np.ndarray) -> np.ndarray:
        """d task / d q (13, 18) from Pinocchio's joint Jacobians and the pose's rate map."""
        jac = np.zeros((13, 18))
        jac[:12] = self.robot.contact_jacobian(q)
        jac[12, 5] = 1.0
        return jac

    def foot_placements(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pinocchio's foot frames with the gimbals resolved: positions (B, 4, 3), normals (B, 4, 3)."""
        return self.robot.feet_com_dirs(q)[:2]

    def com(self, q: np.ndarray) -> np.ndarray:
        """Centre of mass in F from Pinocchio, (B, 3)."""
        return self.robot.com(q)

    def forward(self, q: np.ndarray) -> dict:
        """Batched numpy kinematics (kinematics.forward_batch)."""
        return forward_batch(self.geometry, q, SURFACE_NORMAL.tolist(), BODY_CORNERS)

    # ---- cost ----------------------------------------------------------------------------

    def cost_terms(self, q: np.ndarray, backend: str = 'pinocchio') -> dict:
        """J and its parts (B,): J_f (smooth), J_f_hard (exact max), posture, barrier, J.

        backend 'pinocchio' takes feet and CoM from Pinocchio; 'numpy' from the batched
        backend-generic kinematics (the same numbers to ~1e-15, much faster for big batches).
        """
        q = np.atleast_2d(np.asarray(q, float))
        if backend == 'pinocchio':
            feet, _, com, dirs = self.robot.feet_com_dirs(q)
            return self.terms_from(q, feet, com, dirs)
        out = self.forward(q)
        return self.terms_from(q, out['feet'], out['com'], out['gimbal_dirs'])

    def terms_from(self, q: np.ndarray, feet: np.ndarray, com: np.ndarray,
                   dirs: np.ndarray | None = None) -> dict:
        """Cost parts from configurations (B, 18), feet (B, 4, 3), CoM (B, 3) and the magnet
        directions in the gimbal frames (B, 4, 3; computed from q when not given)."""
        q = np.atleast_2d(q)
        if dirs is None:
            dirs = self.forward(q)['gimbal_dirs']
        return self.stance_cost.evaluate(q, feet, com, dirs)

    def cost(self, q: np.ndarray) -> np.ndarray:
        """J (B,), feet and CoM from Pinocchio; +inf past a gimbal limit (never NaN)."""
        cost = self.cost_terms(q)['J']
        return np.where(np.isnan(cost), np.inf, cost)

    def casadi_expressions(self, q=None, clip: bool = False) -> dict:
        """Symbolic task, cost terms and constraints on a CasADi SX vector q (18); `clip`
        clips asin and acos as the numpy path does (backends.casadi_ops)."""
        return casadi_expressions(self.geometry, self.stance_cost, q, clip)

    def symbolic(self) -> SymbolicProblem:
        """Task and cost of casadi_expressions, refine_legs, and the margins of violations()."""
        import casadi as ca
        q, y = ca.SX.sym('q', 18), ca.SX.sym('y', 13)
        ex = self.casadi_expressions(q, clip=True)
        pose = [q[i] for i in range(5)] + [y[12]]
        legs = self.legs.joints(casadi_ops(clip=True), pose, [y[i] for i in range(12)])
        angles = ca.reshape(ex['gimbal_angles'], 2, 4).T
        excess = ca.fmax(angles - ca.DM(self.gimbal_upper), ca.DM(self.gimbal_lower) - angles)
        margins = ca.vertcat(ca.vec(excess.T) - FEASIBILITY_TOL,
                             ex['clearance_g'] - FEASIBILITY_TOL,
                             ex['adhesion'] - self.magnet_force)
        return SymbolicProblem(q, y, ex['task'], ex['J'], ca.vertcat(*pose, *legs), margins)

    def compile_key(self) -> str:
        urdf = hashlib.sha256(self.urdf.read_bytes()).hexdigest()
        return f'{super().compile_key()} urdf {urdf}'

    # ---- feasibility ---------------------------------------------------------------------

    def feasibility(self, q: np.ndarray, tol: float = FEASIBILITY_TOL) -> dict:
        """Per configuration (B,): inside bounds, gimbals inside limits, clearance, all."""
        q = np.atleast_2d(q)
        return feasibility.feasibility(q, self.forward(q), self.lower, self.upper,
                                       self.gimbal_lower, self.gimbal_upper, tol)

    def violations(self, q: np.ndarray) -> list[str]:
        """Gimbal limits, body clearance and the magnet force, for one configuration (n,)."""
        q = np.asarray(q, float)
        feet, _, com, dirs = self.robot.feet_com_dirs(q[None])
        adhesion = self.stance_cost.required_adhesion(MATH, feet[0].tolist(), com[0].tolist())
        return (feasibility.gimbal_violations(dirs[0], self.gimbal_lower, self.gimbal_upper)
                + feasibility.clearance_violations(q[5], body_rotation(q))
                + feasibility.adhesion_violations(adhesion, self.magnet_force))

    # ---- closed-form legs and sampling ---------------------------------------------------

    def refine_legs(self, q: np.ndarray, task: np.ndarray) -> np.ndarray:
        """Keep the body pose (height set to the command), solve the legs in closed form.

        (B, 18), (B, 13) -> (B, 18); exact feet wherever the footholds are in reach.
        """
        q = np.array(np.atleast_2d(q), float)
        task = np.atleast_2d(task)
        q[:, 5] = task[:, 12]
        if len(q) == 1:
            q[0, 6:] = self.legs.solve_row(q[0, :6].tolist(), task[0, :12].tolist())
        else:
            q[:, 6:], _ = self.legs.solve(q[:, :6], task[:, :12].reshape(-1, 4, 3))
        return q

    def closed_form_refine(self, q: np.ndarray, task: np.ndarray) -> np.ndarray:
        """The network's body pose with the legs solved in closed form (refine_legs)."""
        return self.refine_legs(q, task)[0]

    def example_configuration(self) -> np.ndarray:
        """The nominal stance at EXAMPLE_HEIGHT: nominal footholds, legs in closed form."""
        task = np.concatenate([self.nominal_feet.ravel(), [EXAMPLE_HEIGHT]])
        return self.refine_legs(self.stance_configuration(EXAMPLE_HEIGHT), task)[0]

    def sample_targets(self, count: int, rng: np.random.Generator, margin: float = 0.0,
                       foot_z: float = 0.0) -> np.ndarray:
        """Tasks (count, 13) around the nominal footholds (sampling.sample_targets)."""
        return sampling.sample_targets(self.nominal_feet, count, rng, margin, foot_z)

    def stances_for(self, tasks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One random body pose per task (around the foothold centroid) with its leg IK."""
        return sampling.stances_for(self.legs, tasks, rng)

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """Feasible configurations near the wall-contact set (sampling.sample_stances)."""
        return sampling.sample_stances(self.nominal_feet, self.legs,
                                       lambda q: self.feasibility(q)['all'], count, rng)
