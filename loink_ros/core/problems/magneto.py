"""Magneto on an inclined surface: body pose + 12 joints, footholds + body height as the task,
required magnet adhesion J_f (+ small regularisers) as the cost. docs/MAGNETO.md says why.

Configuration (n = 18), in the footprint frame F (on the surface: z out of it, x uphill,
y across): body pose [x, y, yaw, roll, pitch, height] (base frame origin; R = Rz(yaw)
Ry(pitch) Rx(roll)) and the 12 active joints, coxa/femur/tibia of AR, AL, BR, BL. The
passive gimbals are not configuration: they are resolved so that each foot lies flat on
the surface (magneto_model.leg_forward). Task (p = 13): the four contact points in F and
the commanded body height. Cost (N):
    J = J_f + posture + w_b * joint barrier + w_g * gimbal barrier
J_f: required adhesion from the minimum-norm static contact forces (smooth max over the
feet); posture: w_position * squared body offset from the foothold centroid (m) +
w_angle * (yaw^2 + roll^2 + pitch^2); barriers: sum of -log(4 u (1 - u)), u the joint
position scaled to [0, 1] over its URDF limits (12 active joints; the 8 limited gimbal
joints), +inf where u is outside (0, 1): a stance past a gimbal limit costs +inf, the
infeasible marker. Feasible = inside the configuration bounds, gimbals inside their limits,
body corners >= CLEARANCE above the surface; violations() also names a stance whose
required adhesion exceeds MAGNET_FORCE (it cannot hold).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems import magneto_model as mm
from loink_ros.core.problems.kinematic_problem import robot_file
from loink_ros.core.problems.problem import Problem
from loink_ros.core.problems.thread_data import PerThreadData

# Physics and cost settings (docs/MAGNETO.md).
GRAVITY = 9.81
FRICTION = 0.7            # foot friction coefficient mu
SMOOTH = 0.2              # N: width of the smooth max(0, .) and of the smooth max over feet
TANGENT_EPS = 0.01        # N: ||t|| = sqrt(t.t + eps^2)
W_POSITION = 10.0         # N/m^2: body offset from the foothold centroid
W_ANGLE = 10.0            # N/rad^2: yaw, roll, pitch
W_BARRIER = 0.3           # N: joint-limit log-barrier
W_GIMBAL = 1.0            # N: gimbal-limit log-barrier
CLEARANCE = 0.03          # m: body corners above the surface
MAGNET_FORCE = 100.0      # N: a stance needing more than this cannot hold (public 100-147 N)
FEASIBILITY_TOL = 1e-9    # rad, m: slack of the gimbal and clearance conditions
BODY_CORNERS = [(sx * 0.15, sy * 0.11, 0.0) for sx in (1, -1) for sy in (1, -1)]

# Nominal stance (ROBOTS.md): coxa 0, femur pi/20, tibia -pi/2 - pi/20, gimbals flat.
STANCE_JOINTS = np.tile([0.0, np.pi / 20, -np.pi / 2 - np.pi / 20], 4)
# m: body height of the example configuration (nominal footholds, legs by closed-form IK).
EXAMPLE_HEIGHT = 0.07

# Configuration bounds: body pose, and operating ranges of coxa / femur / tibia inside the
# URDF limits (docs/MAGNETO.md: they cut odd stances with a foot almost under its hip; no
# optimum comes near them). The joint barrier uses the URDF limits.
POSE_NAMES = ['body_x', 'body_y', 'body_yaw', 'body_roll', 'body_pitch', 'body_height']
POSE_LOWER = np.array([-0.12, -0.12, -0.4, -0.4, -0.4, 0.03])
POSE_UPPER = np.array([0.12, 0.12, 0.4, 0.4, 0.4, 0.12])
JOINT_LOWER = np.array([-1.0, -1.0, -2.1])
JOINT_UPPER = np.array([1.0, 0.6, -0.35])

# Targets: each foothold within +/-FOOT_RANGE of its nominal place, height in HEIGHT_RANGE.
FOOT_RANGE = 0.03
HEIGHT_RANGE = (0.05, 0.10)
# Training data: a little wider, feet up to +/-FOOT_Z off the surface, body offsets around
# the foothold centroid within BODY_OFFSET (x, y) and ANGLE_RANGE (yaw, roll, pitch).
DATA_MARGIN = 0.01
FOOT_Z = 0.02
BODY_OFFSET = 0.07
ANGLE_RANGE = 0.35


class MagnetoProblem(Problem):
    """Minimal-adhesion stance of Magneto for given footholds and body height."""

    data = PerThreadData()

    def __init__(self, urdf: Path | None = None, inclination_deg: float = 40.0,
                 name: str = 'magneto', w_position: float = W_POSITION,
                 w_angle: float = W_ANGLE, w_barrier: float = W_BARRIER,
                 w_gimbal: float = W_GIMBAL, smooth: float = SMOOTH,
                 magnet_force: float = MAGNET_FORCE):
        """`magnet_force` (N) only sets the holding condition of violations()."""
        self.urdf = Path(urdf or robot_file('magneto.urdf'))
        self.model = pin.buildModelFromUrdf(str(self.urdf), pin.JointModelFreeFlyer())
        self.geometry = mm.MagnetoGeometry.from_model(self.model)
        self._check_leg_structure()
        self._ik_constants = [(leg.placements[0][0], leg.placements[0][1], leg.placements[1][1][1],
                               leg.placements[2][1][0], leg.placements[3][1][0])
                              for leg in self.geometry.legs]
        self.name, self.cost_name = name, 'required_adhesion_J'
        self.inclination = np.radians(inclination_deg)
        self.inclination_deg = float(inclination_deg)
        # Gravity in F: x uphill, z out of the surface.
        self.gravity = GRAVITY * np.array([-np.sin(self.inclination), 0.0, -np.cos(self.inclination)])
        self.normal = np.array([0.0, 0.0, 1.0])
        self.w_position, self.w_angle, self.smooth = w_position, w_angle, smooth
        self.w_barrier, self.w_gimbal = w_barrier, w_gimbal
        self.magnet_force = magnet_force
        self.mass = self.geometry.mass
        names = [f'{leg}_{part}_joint' for leg in mm.LEGS for part in ('coxa', 'femur', 'tibia')]
        ids = [self.model.getJointId(n) for n in names]
        self.q_index = np.array([self.model.idx_qs[j] for j in ids])
        self.v_index = np.array([self.model.idx_vs[j] for j in ids])
        self.gimbal_index = np.array([[self.model.idx_qs[self.model.getJointId(f'{leg}_gimbal_{a}_joint')]
                                       for a in ('z', 'y')] for leg in mm.LEGS])
        self.centre_joint = [self.model.getJointId(f'{leg}_gimbal_z_joint') for leg in mm.LEGS]
        self.foot_frame = [self.model.getFrameId(f'{leg}_foot') for leg in mm.LEGS]
        self.joint_lower = self.model.lowerPositionLimit[self.q_index].copy()
        self.joint_upper = self.model.upperPositionLimit[self.q_index].copy()
        self.joint_names = POSE_NAMES + names
        self.lower = np.concatenate([POSE_LOWER, np.maximum(np.tile(JOINT_LOWER, 4), self.joint_lower)])
        self.upper = np.concatenate([POSE_UPPER, np.minimum(np.tile(JOINT_UPPER, 4), self.joint_upper)])
        self.task_names = [f'{leg}_foot_{a}' for leg in mm.LEGS for a in 'xyz'] + ['body_height_cmd']
        self.gimbal_lower = np.array([leg.gimbal_lower for leg in self.geometry.legs])
        self.gimbal_upper = np.array([leg.gimbal_upper for leg in self.geometry.legs])
        self.foot_offset = self.geometry.legs[0].foot_offset[0]
        stance = self.stance_configuration(0.0)
        self.nominal_height = -self.forward(stance[None])['feet'][0, 0, 2]
        self.nominal_feet = self.forward(self.stance_configuration(self.nominal_height)[None])['feet'][0]
        self.nominal_feet[:, 2] = 0.0

    # ---- structure ---------------------------------------------------------------------

    def _check_leg_structure(self) -> None:
        """The closed-form leg IK assumes ROBOTS.md's leg: yaw, then two parallel pitches."""
        for leg in self.geometry.legs:
            (_, _), (r_f, p_f), (r_t, p_t), (r_g, p_g) = leg.placements
            eye = np.eye(3).tolist()
            if leg.axes != ['y', 'z', 'z'] or r_f != eye or r_t != eye or r_g != eye:
                raise ValueError(f'{leg.name}: unexpected leg structure for the closed-form IK')
            if p_f[0] != 0.0 or p_f[2] != 0.0 or p_t[1:] != [0.0, 0.0] or p_g[1:] != [0.0, 0.0]:
                raise ValueError(f'{leg.name}: unexpected link offsets for the closed-form IK')

    def stance_configuration(self, height: float) -> np.ndarray:
        """Nominal stance: body level over the feet at `height`, ROBOTS.md's joint angles."""
        return np.concatenate([[0.0, 0.0, 0.0, 0.0, 0.0, height], STANCE_JOINTS])

    def metadata(self) -> dict:
        return {**super().metadata(), 'robot': 'magneto', 'urdf': self.urdf.name,
                'base_frame': 'footprint', 'tip_frame': ','.join(f'{leg}_foot' for leg in mm.LEGS),
                'inclination_deg': self.inclination_deg, 'friction': FRICTION,
                'cost_weights': {'position': self.w_position, 'angle': self.w_angle,
                                 'barrier': self.w_barrier, 'gimbal': self.w_gimbal,
                                 'smooth': self.smooth}}

    # ---- Pinocchio path ----------------------------------------------------------------

    def body_rotation(self, pose: np.ndarray) -> np.ndarray:
        """R = Rz(yaw) Ry(pitch) Rx(roll) of one pose [x, y, yaw, roll, pitch, height]."""
        return pin.rpy.rpyToMatrix(pose[3], pose[4], pose[2])

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
            full[3:7] = pin.Quaternion(self.body_rotation(row)).coeffs()
            full[self.q_index] = row[6:]
            if resolve_gimbals:
                pin.forwardKinematics(self.model, data, full)
                for leg, j in enumerate(self.centre_joint):
                    d = -data.oMi[j].rotation.T @ self.normal
                    full[self.gimbal_index[leg]] = [math.atan2(d[1], d[0]), -mm.MATH.asin(d[2])]
        return out

    def _centres_pin(self, full: np.ndarray) -> np.ndarray:
        data = self.data
        pin.forwardKinematics(self.model, data, full)
        return np.array([data.oMi[j].translation for j in self.centre_joint])

    def task(self, q: np.ndarray) -> np.ndarray:
        """Contact points (flat feet: gimbal centre - offset * normal) and height, (B, 13)."""
        q = np.atleast_2d(q)
        full = self.full_configuration(q, resolve_gimbals=False)
        out = np.empty((len(q), 13))
        for i, row in enumerate(full):
            out[i, :12] = (self._centres_pin(row) - self.foot_offset * self.normal).ravel()
        out[:, 12] = q[:, 5]
        return out

    def foot_placements(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pinocchio's foot frames with the gimbals resolved: positions (B, 4, 3), normals (B, 4, 3)."""
        return self._pin_feet_com(q)[:2]

    def _pin_feet_com(self, q: np.ndarray) -> tuple[np.ndarray, ...]:
        """Feet, foot normals, CoM and magnet directions in the gimbal frames, from Pinocchio."""
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
                dirs[i, k] = -frame.T @ self.normal
        return pos, nrm, com, dirs

    def com(self, q: np.ndarray) -> np.ndarray:
        """Centre of mass in F from Pinocchio, (B, 3)."""
        return np.array([pin.centerOfMass(self.model, self.data, row)
                         for row in self.full_configuration(q)])

    def task_jacobian(self, q: np.ndarray) -> np.ndarray:
        """d task / d q (13, 18) from Pinocchio's joint Jacobians and the pose's rate map."""
        q = np.asarray(q, float)
        full = self.full_configuration(q[None], resolve_gimbals=False)[0]
        data = self.data
        pin.computeJointJacobians(self.model, data, full)
        rot = self.body_rotation(q)
        yaw, pitch = q[2], q[4]
        # Columns: x, y, yaw, roll, pitch, height -> base twist (local linear, local angular).
        lin = np.zeros((3, 6))
        lin[:, [0, 1, 5]] = rot.T
        rz = pin.rpy.rpyToMatrix(0.0, 0.0, yaw)
        rzy = rz @ pin.rpy.rpyToMatrix(0.0, pitch, 0.0)
        ang = np.zeros((3, 6))
        ang[:, 2] = rot.T @ np.array([0.0, 0.0, 1.0])
        ang[:, 4] = rot.T @ rz[:, 1]
        ang[:, 3] = rot.T @ rzy[:, 0]
        jac = np.zeros((13, 18))
        for k, j in enumerate(self.centre_joint):
            full_jac = pin.getJointJacobian(self.model, data, j, pin.LOCAL_WORLD_ALIGNED)[:3]
            jac[3 * k:3 * k + 3, :6] = full_jac[:, :3] @ lin + full_jac[:, 3:6] @ ang
            jac[3 * k:3 * k + 3, 6:] = full_jac[:, self.v_index]
        jac[12, 5] = 1.0
        return jac

    def cost_terms(self, q: np.ndarray, backend: str = 'pinocchio') -> dict:
        """J and its parts (B,): J_f (smooth), J_f_hard (exact max), posture, barrier, J.

        backend 'pinocchio' takes feet and CoM from Pinocchio; 'numpy' from the batched
        magneto_model code (the same numbers to ~1e-15, much faster for big batches).
        """
        q = np.atleast_2d(np.asarray(q, float))
        if backend == 'pinocchio':
            feet, _, com, dirs = self._pin_feet_com(q)
            return self.terms_from(q, feet, com, dirs)
        else:
            out = self.forward(q)
            return self.terms_from(q, out['feet'], out['com'], out['gimbal_dirs'])

    def terms_from(self, q: np.ndarray, feet: np.ndarray, com: np.ndarray,
                   dirs: np.ndarray | None = None) -> dict:
        """Cost parts from configurations (B, 18), feet (B, 4, 3), CoM (B, 3) and the magnet
        directions in the gimbal frames (B, 4, 3; computed from q when not given)."""
        q = np.atleast_2d(q)
        if dirs is None:
            dirs = self.forward(q)['gimbal_dirs']
        if len(q) == 1:   # plain floats: ~20x faster than numpy on one row
            return _as_batch(self._terms(mm.MATH, q[0].tolist(), feet[0].tolist(), com[0].tolist(),
                                         dirs[0].tolist()))
        return self._terms(mm.NUMPY, [q[:, i] for i in range(18)],
                           [[feet[:, k, i] for i in range(3)] for k in range(4)],
                           [com[:, i] for i in range(3)],
                           [[dirs[:, k, i] for i in range(3)] for k in range(4)])

    def _terms(self, ops, ql: list, feet_l: list, com_l: list, dirs_l: list) -> dict:
        forces = mm.contact_forces(ops, feet_l, com_l, self.gravity.tolist(), self.mass)
        sigma = mm.adhesion_per_foot(ops, forces, self.normal.tolist(), FRICTION, self.smooth, TANGENT_EPS)
        hard = mm.adhesion_per_foot(ops, forces, self.normal.tolist(), FRICTION, None)
        j_f = mm.worst_foot(ops, sigma, self.smooth)
        j_hard = mm.worst_foot(ops, hard, None)
        posture = self.posture(ops, ql, feet_l)
        barrier = self.w_barrier * self.barrier(ops, ql)
        gimbal = self.w_gimbal * self.gimbal_barrier(ops, dirs_l) if self.w_gimbal else 0.0 * j_f
        return {'J': j_f + posture + barrier + gimbal, 'J_f': j_f, 'J_f_hard': j_hard,
                'posture': posture, 'barrier': barrier, 'gimbal': gimbal,
                'sigma': np.stack(np.broadcast_arrays(*hard), -1),
                'forces': np.stack([np.stack(np.broadcast_arrays(*f), -1) for f in forces], -2)}

    def cost(self, q: np.ndarray) -> np.ndarray:
        """J (B,), feet and CoM from Pinocchio; +inf past a gimbal limit (never NaN)."""
        cost = self.cost_terms(q)['J']
        return np.where(np.isnan(cost), np.inf, cost)

    def violations(self, q: np.ndarray) -> list[str]:
        """Gimbal limits, body clearance and the magnet force, for one configuration (n,)."""
        q = np.asarray(q, float)
        feet, _, com, dirs = self._pin_feet_com(q[None])
        d = dirs[0]
        gimbals = np.column_stack([np.arctan2(d[:, 1], d[:, 0]), -mm.NUMPY.asin(d[:, 2])])
        excess = np.maximum(gimbals - self.gimbal_upper, self.gimbal_lower - gimbals)
        found = [f'gimbal {axis} limit of leg {leg} exceeded by {excess[k, a]:.3g} rad'
                 for k, leg in enumerate(mm.LEGS) for a, axis in enumerate('zy')
                 if excess[k, a] > FEASIBILITY_TOL]
        heights = q[5] + (self.body_rotation(q) @ np.array(BODY_CORNERS).T)[2]
        if heights.min() < CLEARANCE - FEASIBILITY_TOL:
            found.append(f'body clearance {heights.min():.3g} m below {CLEARANCE:g} m')
        adhesion = self._hard_adhesion(feet[0].tolist(), com[0].tolist())
        if adhesion > self.magnet_force:
            found.append(f'required adhesion {adhesion:.4g} N above the magnet force '
                         f'{self.magnet_force:g} N')
        return found

    def _hard_adhesion(self, feet: list, com: list) -> float:
        """The exact J_f (max over the feet, no smoothing) of one stance, in plain floats."""
        forces = mm.contact_forces(mm.MATH, feet, com, self.gravity.tolist(), self.mass)
        need = mm.adhesion_per_foot(mm.MATH, forces, self.normal.tolist(), FRICTION, None)
        return mm.worst_foot(mm.MATH, need, None)

    def example_configuration(self) -> np.ndarray:
        """The nominal stance at EXAMPLE_HEIGHT: nominal footholds, legs in closed form."""
        task = np.concatenate([self.nominal_feet.ravel(), [EXAMPLE_HEIGHT]])
        return self.refine_legs(self.stance_configuration(EXAMPLE_HEIGHT), task)[0]

    # ---- backend-generic pieces (numpy batches and CasADi) ------------------------------

    def posture(self, ops, q: list, feet: list):
        """w_position * |body xy - foothold centroid xy|^2 + w_angle * (yaw^2 + roll^2 + pitch^2), N."""
        cx = (feet[0][0] + feet[1][0] + feet[2][0] + feet[3][0]) * 0.25
        cy = (feet[0][1] + feet[1][1] + feet[2][1] + feet[3][1]) * 0.25
        return (self.w_position * ((q[0] - cx) ** 2 + (q[1] - cy) ** 2)
                + self.w_angle * (q[2] ** 2 + q[3] ** 2 + q[4] ** 2))

    def gimbal_barrier(self, ops, dirs: list):
        """sum over the 8 limited gimbal joints of -log(4 u (1 - u)), from the magnet directions;
        +inf past a limit."""
        total = 0.0
        for k, d in enumerate(dirs):
            angles = (ops.atan2(d[1], d[0]), -ops.asin(d[2]))
            for a in range(2):
                lo, hi = self.gimbal_lower[k, a], self.gimbal_upper[k, a]
                u = (angles[a] - lo) / (hi - lo)
                total = total + ops.neg_log(4.0 * u * (1.0 - u))
        return total

    def barrier(self, ops, q: list):
        """sum over the 12 joints of -log(4 u (1 - u)), u in [0, 1] over the URDF limits (finite
        inside the configuration bounds, which lie inside them)."""
        total = 0.0
        for k in range(12):
            lo, hi = self.joint_lower[k], self.joint_upper[k]
            u = (q[6 + k] - lo) / (hi - lo)
            total = total + ops.neg_log(4.0 * u * (1.0 - u))
        return total

    def forward(self, q: np.ndarray) -> dict:
        """Batched numpy kinematics: feet (B,4,3), centres, gimbal angles (B,4,2) and
        directions (B,4,3), CoM (B,3), body corners (B,4,3), leg points (B,4,5,3): hip,
        femur joint, knee, gimbal centre, foot."""
        q = np.atleast_2d(np.asarray(q, float))
        out = mm.forward(mm.NUMPY, self.geometry, [q[:, i] for i in range(6)],
                         [q[:, 6 + i] for i in range(12)], self.normal.tolist(), BODY_CORNERS)
        stack = lambda vecs: np.stack([np.stack(np.broadcast_arrays(*v), -1) for v in vecs], 1)
        return {'feet': stack(out['feet']), 'centres': stack(out['centres']),
                'gimbal_dirs': stack(out['gimbal_dirs']),
                'gimbal_angles': stack([a[:2] for a in out['gimbal_angles']]),
                'com': np.stack(np.broadcast_arrays(*out['com']), -1),
                'corners': stack(out['corners']),
                'leg_points': np.stack([stack(points) for points in out['leg_points']], 1)}

    # ---- feasibility, IK, sampling ------------------------------------------------------

    def feasibility(self, q: np.ndarray, tol: float = FEASIBILITY_TOL) -> dict:
        """Per configuration (B,): inside bounds, gimbals inside limits, clearance, all."""
        q = np.atleast_2d(q)
        out = self.forward(q)
        bounds = np.all((q >= self.lower - tol) & (q <= self.upper + tol), axis=1)
        g = out['gimbal_angles']
        gimbal = np.all((g >= self.gimbal_lower - tol) & (g <= self.gimbal_upper + tol), axis=(1, 2))
        clear = np.all(out['corners'][..., 2] >= CLEARANCE - tol, axis=1)
        return {'bounds': bounds, 'gimbals': gimbal, 'clearance': clear,
                'all': bounds & gimbal & clear}

    def leg_ik(self, pose: np.ndarray, feet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Closed-form leg joints (B, 12) putting the flat feet on `feet` (B, 4, 3) from the
        body pose (B, 6); knee branch tibia < 0 (the only one inside the tibia limits).
        Returns (joints, reachable (B, 4))."""
        pose, feet = np.atleast_2d(pose), np.asarray(feet, float).reshape(len(np.atleast_2d(pose)), 4, 3)
        rot = np.stack([self.body_rotation(p) for p in pose]) if len(pose) < 8 else _rotations(pose)
        centres = feet + self.foot_offset * self.normal
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

    def refine_legs(self, q: np.ndarray, task: np.ndarray) -> np.ndarray:
        """Keep the body pose (height set to the command), solve the legs in closed form.

        (B, 18), (B, 13) -> (B, 18); exact feet wherever the footholds are in reach.
        """
        q = np.array(np.atleast_2d(q), float)
        task = np.atleast_2d(task)
        q[:, 5] = task[:, 12]
        if len(q) == 1:
            q[0, 6:] = self._leg_ik_row(q[0, :6].tolist(), task[0, :12].tolist())
        else:
            q[:, 6:], _ = self.leg_ik(q[:, :6], task[:, :12].reshape(-1, 4, 3))
        return q

    def closed_form_refine(self, q: np.ndarray, task: np.ndarray) -> np.ndarray:
        """The network's body pose with the legs solved in closed form (refine_legs)."""
        return self.refine_legs(q, task)[0]

    def _leg_ik_row(self, pose: list, feet: list) -> list:
        """leg_ik for one row in plain floats (the runtime path: ~10x fewer overheads)."""
        x, y, yaw, roll, pitch, h = pose
        cy, sy, cp, sp, cr, sr = (math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch),
                                  math.cos(roll), math.sin(roll))
        # R = Rz(yaw) Ry(pitch) Rx(roll), columns used as rows of R^T.
        r = ((cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr),
             (sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr),
             (-sp, cp * sr, cp * cr))
        out = []
        off = self.foot_offset
        for k, (r_c, p_c, p_fy, l1, l2) in enumerate(self._ik_constants):
            dx, dy, dz = feet[3 * k] - x, feet[3 * k + 1] - y, feet[3 * k + 2] + off - h
            loc = [r[0][i] * dx + r[1][i] * dy + r[2][i] * dz - p_c[i] for i in range(3)]
            r0 = r_c[0][0] * loc[0] + r_c[1][0] * loc[1] + r_c[2][0] * loc[2]
            r1 = r_c[0][1] * loc[0] + r_c[1][1] * loc[1] + r_c[2][1] * loc[2]
            r2 = r_c[0][2] * loc[0] + r_c[1][2] * loc[1] + r_c[2][2] * loc[2]
            q1 = math.atan2(-r2, r0)
            u, v = math.hypot(r0, r2), r1 - p_fy
            cos3 = max(-1.0, min(1.0, (u * u + v * v - l1 * l1 - l2 * l2) / (2 * l1 * l2)))
            q3 = -math.acos(cos3)
            q2 = math.atan2(v, u) - math.atan2(l2 * math.sin(q3), l1 + l2 * math.cos(q3))
            out += [q1, q2, q3]
        return out

    def sample_targets(self, count: int, rng: np.random.Generator, margin: float = 0.0,
                       foot_z: float = 0.0) -> np.ndarray:
        """Tasks (count, 13): footholds near nominal, heights in HEIGHT_RANGE (not all feasible)."""
        feet = self.nominal_feet[None] + rng.uniform(-1, 1, (count, 4, 3)) * [
            FOOT_RANGE + margin, FOOT_RANGE + margin, foot_z]
        lo, hi = HEIGHT_RANGE
        height = rng.uniform(lo - margin, hi + margin, count)
        return np.column_stack([feet.reshape(count, 12), height])

    def stances_for(self, tasks: np.ndarray, rng: np.random.Generator,
                    offset: float = BODY_OFFSET, angle: float = ANGLE_RANGE) -> np.ndarray:
        """One random body pose per task (around the foothold centroid) with its leg IK."""
        tasks = np.atleast_2d(tasks)
        feet = tasks[:, :12].reshape(-1, 4, 3)
        centroid = feet.mean(1)
        pose = np.column_stack([centroid[:, 0] + rng.uniform(-offset, offset, len(tasks)),
                                centroid[:, 1] + rng.uniform(-offset, offset, len(tasks)),
                                rng.uniform(-angle, angle, (len(tasks), 3)), tasks[:, 12]])
        joints, reach = self.leg_ik(pose, feet)
        q = np.hstack([pose, joints])
        return np.where(reach.all(1)[:, None], q, np.nan)

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """Feasible configurations near the wall-contact set (count, 18).

        Footholds within FOOT_RANGE + DATA_MARGIN of nominal and up to FOOT_Z off the surface,
        heights in HEIGHT_RANGE +/- DATA_MARGIN, body offsets / angles uniform around the
        foothold centroid, legs by closed-form IK; only feasible stances are kept.
        """
        kept, total = [], 0
        while total < count:
            need = max(64, int(1.6 * (count - total)))
            tasks = self.sample_targets(need, rng, DATA_MARGIN, FOOT_Z)
            q = self.stances_for(tasks, rng)
            ok = np.isfinite(q).all(1)
            q = q[ok]
            q = q[self.feasibility(q)['all']]
            kept.append(q)
            total += len(q)
        return np.concatenate(kept)[:count]

    # ---- CasADi --------------------------------------------------------------------------

    def casadi_expressions(self, q=None) -> dict:
        """Symbolic task, cost terms and constraints on a CasADi SX vector q (18)."""
        import casadi as ca
        ops = mm.casadi_ops()
        q = ca.SX.sym('q', 18) if q is None else q
        ql = [q[i] for i in range(18)]
        out = mm.forward(ops, self.geometry, ql[:6], ql[6:], self.normal.tolist(), BODY_CORNERS)
        forces = mm.contact_forces(ops, out['feet'], out['com'], self.gravity.tolist(), self.mass)
        sigma = mm.adhesion_per_foot(ops, forces, self.normal.tolist(), FRICTION, self.smooth, TANGENT_EPS)
        j_f = mm.worst_foot(ops, sigma, self.smooth)
        posture = self.posture(ops, ql, out['feet'])
        barrier = self.w_barrier * self.barrier(ops, ql)
        gimbal = self.w_gimbal * self.gimbal_barrier(ops, out['gimbal_dirs']) if self.w_gimbal else 0.0
        total = j_f + posture + barrier + gimbal
        feet = ca.vertcat(*[ca.vertcat(*f) for f in out['feet']])
        # Gimbal limits on the magnet direction d = Rz(g1) Ry(g2) e_x in the gimbal frame:
        # g1 = atan2(d_y, d_x) in [lo1, hi1], g2 = -asin(d_z) in [lo2, hi2].
        gimbal = []
        for k, d in enumerate(out['gimbal_dirs']):
            (lo1, lo2), (hi1, hi2) = self.gimbal_lower[k], self.gimbal_upper[k]
            gimbal += [d[1] - np.tan(hi1) * d[0], np.tan(lo1) * d[0] - d[1],   # g1 <= hi1, >= lo1
                       -np.sin(hi2) - d[2], d[2] + np.sin(lo2)]                # g2 <= hi2, >= lo2
        clearance = ca.vertcat(*[CLEARANCE - c[2] for c in out['corners']])
        return {'q': q, 'task': ca.vertcat(feet, q[5]), 'J': total, 'J_f': j_f,
                'posture': posture, 'barrier': barrier, 'gimbal': gimbal,
                'com': ca.vertcat(*out['com']), 'feet': feet,
                'gimbal_angles': ca.vertcat(*[ca.vertcat(a[0], a[1]) for a in out['gimbal_angles']]),
                'gimbal_g': ca.vertcat(*gimbal), 'clearance_g': clearance}


def _as_batch(terms: dict) -> dict:
    """One row's cost parts (floats, (4,), (4, 3)) as a batch of one."""
    return {k: np.asarray(v, float)[None] for k, v in terms.items()}


def _rotations(pose: np.ndarray) -> np.ndarray:
    """Batched Rz(yaw) Ry(pitch) Rx(roll), (B, 3, 3)."""
    yaw, roll, pitch = pose[:, 2], pose[:, 3], pose[:, 4]
    r = mm.body_rotation(mm.NUMPY, yaw, roll, pitch)
    return np.stack([np.stack(np.broadcast_arrays(*row), -1) for row in r], 1)
