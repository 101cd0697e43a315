"""A problem whose task is the position of a frame of a URDF robot (Pinocchio)."""

import hashlib
import math
from functools import cached_property
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.arms import rotation_chart
from loink_ros.core.problems.arms.self_collision import SelfCollision, reduced_with_geometry
from loink_ros.core.problems.arms.symbolic_chain import SymbolicChain
from loink_ros.core.problems.backends import casadi_ops
from loink_ros.core.problems.problem import Problem
from loink_ros.core.problems.symbolic import SymbolicProblem
from loink_ros.core.problems.thread_data import PerThreadData

AXES = 'xyz'
CHART_AXES = ('rx', 'ry', 'rz')
# Declared range (rad) of a continuous joint unless `limits` gives another.
CONTINUOUS_RANGE = (-np.pi, np.pi)


def is_continuous(joint: pin.JointModel) -> bool:
    """Pinocchio's unbounded revolute joints (URDF `continuous`): q = (cos, sin), one velocity."""
    return joint.nq == 2 and joint.nv == 1


def urdf_joint_limits(urdf: Path) -> dict[str, tuple[float, float]]:
    """Joint name -> (lower, upper) of a URDF's one-coordinate joints; continuous: unbounded."""
    model = pin.buildModelFromUrdf(str(urdf))
    limits = {}
    for name, joint in zip(model.names[1:], model.joints[1:]):
        if joint.nq == 1:
            limits[name] = (float(model.lowerPositionLimit[joint.idx_q]),
                            float(model.upperPositionLimit[joint.idx_q]))
        else:
            limits[name] = (-math.inf, math.inf)
    return limits


class KinematicProblem(Problem):
    """Task = chosen components of the tip frame position, in the base frame, and with a
    nominal orientation R0 the tip's orientation too: a pose task, whose last three
    components `<tip>_rx, _ry, _rz` are the rotation vector log(R0^T R) (rotation_chart).

    The base frame must be fixed to the URDF root (no joint between them, locked joints
    aside); the task is expressed in it.

    The configuration is one coordinate per joint, in the URDF's order: an angle (rad) or a
    position (m). A continuous joint is a revolute joint on a declared range, CONTINUOUS_RANGE
    unless `limits` narrows or moves it; its angle becomes Pinocchio's (cos, sin) for the
    kinematics. Joints with more coordinates (floating, planar, spherical) and joints without
    finite limits are refused with a ValueError naming them: lock them or give `limits`.
    """

    data = PerThreadData()

    def __init__(self, urdf: Path, tip_frame: str, axes: str, name: str, cost_name: str,
                 base_frame: str = 'base_link', locked_joints: tuple[str, ...] = (),
                 limits: tuple[np.ndarray, np.ndarray] | None = None,
                 srdf: Path | None = None, package_dirs: tuple[str, ...] = (),
                 orientation: np.ndarray | None = None,
                 locked_positions: dict[str, float] | None = None):
        """`locked_joints` are fixed at their neutral value; `limits` (lower, upper), one
        value per joint, replace the URDF's (and a continuous joint's declared range);
        `srdf` (with the `package_dirs` the URDF's meshes are found in) gives the
        self-collision model (self_collisions), whose disabled pairs it lists;
        `orientation` (3 x 3, in the base frame) makes it a pose task about that nominal;
        `locked_positions` gives a locked joint another value than its neutral one."""
        self.urdf, self.tip_frame, self.base_frame = Path(urdf), tip_frame, base_frame
        model = pin.buildModelFromUrdf(str(self.urdf))
        locked = [model.getJointId(n) for n in locked_joints if model.existJointName(n)]
        reference = pin.neutral(model)
        for joint_name, value in (locked_positions or {}).items():
            joint = model.joints[model.getJointId(joint_name)]
            reference[joint.idx_q] = value
        self.collision = None
        if srdf is not None:
            self.model, geometry = reduced_with_geometry(model, self.urdf, Path(srdf),
                                                         list(package_dirs), locked, reference)
            self.collision = SelfCollision(self.model, geometry)
        elif locked:
            self.model = pin.buildReducedModel(model, locked, reference)
        else:
            self.model = model
        if not self.model.existFrame(tip_frame):
            raise ValueError(f'frame {tip_frame!r} not in {self.urdf.name}')
        self.tip_id = self.model.getFrameId(tip_frame)
        self.base_placement = self._base_placement()
        self.rows = [AXES.index(a) for a in axes]
        self.name, self.cost_name = name, cost_name
        self.joint_names = [n for n in self.model.names[1:]]
        self._check_joint_kinds()
        self.lower, self.upper = self._joint_limits(limits)
        joints = self.model.joints[1:]
        self.continuous = np.array([is_continuous(j) for j in joints], dtype=bool)
        self.revolute = np.array([j.shortname().startswith('JointModelR') for j in joints])
        # Where each angle goes in Pinocchio's q: its own entry, or the (cos, sin) pair.
        self._q_index = np.array([j.idx_q for j in joints])
        self.nominal = None if orientation is None else np.array(orientation, float)
        self.task_names = [f'{tip_frame}_{a}' for a in axes]
        if self.nominal is not None:
            self.task_names += [f'{tip_frame}_{a}' for a in CHART_AXES]

    @property
    def is_pose(self) -> bool:
        """Whether the task includes the orientation (chart about `nominal`)."""
        return self.nominal is not None

    @property
    def task_is_tip_position(self) -> bool:
        """Whether the task holds the whole tip position (full-pose IK starts from it)."""
        return sorted(self.rows) == [0, 1, 2]

    @cached_property
    def tip_reach(self) -> float:
        """The tip's certified reach (m) from the base origin (problems/arms/reach.py): ~0.1 s on
        a 7-joint arm, so computed once per problem, for every service and library."""
        from loink_ros.core.problems.arms.reach import reach  # reach.py imports this module
        return reach(self).bound

    def _base_placement(self) -> pin.SE3 | None:
        """The base frame in the URDF root; None where they coincide (or no such frame)."""
        if not self.model.existFrame(self.base_frame):
            return None
        frame = self.model.frames[self.model.getFrameId(self.base_frame)]
        if frame.parentJoint != 0:
            raise ValueError(f'{self.urdf.name}: base frame {self.base_frame!r} moves with joint '
                             f'{self.model.names[frame.parentJoint]!r}; lock the joints between '
                             'the URDF root and the base, or choose a base fixed to the root')
        return None if frame.placement.isIdentity() else frame.placement

    def _in_base(self, placement: pin.SE3) -> pin.SE3:
        return placement if self.base_placement is None else self.base_placement.actInv(placement)

    def _check_joint_kinds(self) -> None:
        for name, joint in zip(self.joint_names, self.model.joints[1:]):
            if joint.nv != 1 or (joint.nq != 1 and not is_continuous(joint)):
                raise ValueError(
                    f'{self.urdf.name}: joint {name!r} ({joint.shortname()}) has {joint.nq} '
                    'configuration coordinates; LOInK learns one per joint: lock it '
                    '(locked_joints) or replace it by single-axis joints')

    def _joint_limits(self, limits) -> tuple[np.ndarray, np.ndarray]:
        """Per joint: `limits`, else the URDF's, with CONTINUOUS_RANGE for continuous joints."""
        if limits is None:
            joints = self.model.joints[1:]
            lower = np.array([CONTINUOUS_RANGE[0] if is_continuous(j) else
                              self.model.lowerPositionLimit[j.idx_q] for j in joints])
            upper = np.array([CONTINUOUS_RANGE[1] if is_continuous(j) else
                              self.model.upperPositionLimit[j.idx_q] for j in joints])
        else:
            lower, upper = (np.array(v, dtype=float).reshape(-1) for v in limits)
            if lower.shape != (self.dim,) or upper.shape != (self.dim,):
                raise ValueError(f'limits need {self.dim} values each (joints {self.joint_names}), '
                                 f'got {lower.size} and {upper.size}')
        bad = ~(np.isfinite(lower) & np.isfinite(upper) & (lower < upper))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f'{self.urdf.name}: joint {self.joint_names[i]!r} has no finite '
                             f'range (lower {lower[i]}, upper {upper[i]}): give limits '
                             '(lower, upper) for it, or lock it')
        return lower, upper

    def same_position_links(self) -> list[str]:
        """The tip and every link fixed to it at the same position, tip first: a position-only
        answer for the tip is one for each of them."""
        links = {name for name, tip in self.rigid_links().items()
                 if np.allclose(tip.translation, 0.0, rtol=0.0, atol=1e-9)}
        return [self.tip_frame] + sorted(links - {self.tip_frame})

    def rigid_links(self) -> dict[str, pin.SE3]:
        """Each link moving rigidly with the tip (the tip included) -> the tip's placement
        in that link's frame: a pose asked for the link is the pose link * placement of the tip."""
        tip = self.model.frames[self.tip_id]
        return {frame.name: frame.placement.actInv(tip.placement)
                for frame in self.model.frames
                if frame.type == pin.FrameType.BODY and frame.parentJoint == tip.parentJoint}

    def base_rigid_frames(self) -> dict[str, pin.SE3]:
        """Each link fixed to the base (the base included) -> its placement in the base
        frame: a pose given in that link's frame is placement * pose in the base frame."""
        placement = (lambda f: f) if self.base_placement is None else self.base_placement.actInv
        return {frame.name: placement(frame.placement) for frame in self.model.frames
                if frame.type == pin.FrameType.BODY and frame.parentJoint == 0}

    def pinocchio_configuration(self, q: np.ndarray) -> np.ndarray:
        """Pinocchio's q (nq,) of one configuration (n,): continuous angles as (cos, sin)."""
        if not self.continuous.any():
            return q
        out = np.empty(self.model.nq)
        simple = ~self.continuous
        out[self._q_index[simple]] = q[simple]
        angles, at = q[self.continuous], self._q_index[self.continuous]
        out[at], out[at + 1] = np.cos(angles), np.sin(angles)
        return out

    def tip_position(self, q: np.ndarray) -> np.ndarray:
        """Tip position (3,) at one configuration."""
        data = self.data
        pin.forwardKinematics(self.model, data, self.pinocchio_configuration(q))
        return self._in_base(pin.updateFramePlacement(self.model, data, self.tip_id)).translation.copy()

    def tip_pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tip position (3,) and rotation matrix (3, 3) in the base frame at one configuration."""
        data = self.data
        pin.forwardKinematics(self.model, data, self.pinocchio_configuration(q))
        placement = self._in_base(pin.updateFramePlacement(self.model, data, self.tip_id))
        return placement.translation.copy(), placement.rotation.copy()

    def pose_jacobian(self, q: np.ndarray) -> np.ndarray:
        """(6, n): tip linear and angular velocity in the base frame's axes per joint velocity
        (one per joint: the columns are d/d angle, continuous joints included)."""
        jac = pin.computeFrameJacobian(self.model, self.data, self.pinocchio_configuration(q),
                                       self.tip_id, pin.LOCAL_WORLD_ALIGNED)
        if self.base_placement is None:
            return jac
        turn = self.base_placement.rotation.T
        return np.vstack([turn @ jac[:3], turn @ jac[3:]])

    def task(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        if self.nominal is None:
            return np.array([self.tip_position(row)[self.rows] for row in q])
        out = np.empty((len(q), self.task_dim))
        for i, row in enumerate(q):
            position, rotation = self.tip_pose(row)
            out[i] = np.concatenate([position[self.rows],
                                     rotation_chart.chart(self.nominal, rotation)])
        return out

    def task_jacobian(self, q: np.ndarray) -> np.ndarray:
        jac = self.pose_jacobian(q)
        if self.nominal is None:
            return jac[self.rows]
        rotation = self._in_base(self.data.oMf[self.tip_id]).rotation
        local_angular = rotation.T @ jac[3:]
        return np.vstack([jac[self.rows],
                          rotation_chart.chart_jacobian(self.nominal, rotation, local_angular)])

    @property
    def has_collision_model(self) -> bool:
        return self.collision is not None

    def self_collisions(self, q: np.ndarray) -> list[str]:
        """The link pairs touching at one configuration (n,), one line each; [] when free or
        when the problem has no collision model (no SRDF)."""
        if self.collision is None:
            return []
        pairs = self.collision.colliding_links(self.pinocchio_configuration(np.asarray(q, float)))
        return [f'{a} touches {b}' for a, b in pairs]

    def sample_collision_free(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """(count, n) uniform within the limits, without self-collision (all of them without a
        collision model): the configurations a pose answer may be."""
        kept = []
        while len(kept) < count:
            for q in rng.uniform(self.lower, self.upper, size=(count - len(kept), self.dim)):
                if not self.self_collisions(q):
                    kept.append(q)
        return np.array(kept)

    def gravity_torque(self, q: np.ndarray) -> np.ndarray:
        """Static joint torques holding each configuration against gravity, (B, n)."""
        return np.array([pin.computeGeneralizedGravity(self.model, self.data,
                                                       self.pinocchio_configuration(row))
                         for row in np.atleast_2d(q)])

    def symbolic(self) -> SymbolicProblem | None:
        """The tip position by SymbolicChain and the variant's symbolic_cost."""
        import casadi as ca
        q, y = ca.SX.sym('q', self.dim), ca.SX.sym('y', self.task_dim)
        chain = SymbolicChain(self.model, q)
        cost = self.symbolic_cost(q, chain)
        if cost is None:
            return None
        position, rotation = self.symbolic_position(chain), self._symbolic_rotation(chain)
        task = position[self.rows]
        if self.nominal is not None:
            relative = ca.DM(self.nominal.T) @ rotation
            entries = [[relative[i, j] for j in range(3)] for i in range(3)]
            task = ca.vertcat(task, *rotation_chart.rotation_vector(casadi_ops(), entries))
        pose = ca.vertcat(position, ca.reshape(rotation.T, 9, 1))
        angular = chain.angular_jacobian(self.tip_id)
        if self.base_placement is not None:
            angular = ca.DM(self.base_placement.rotation.T) @ angular
        jacobian = ca.vertcat(ca.jacobian(position, q), angular)
        return SymbolicProblem(q, y, task, cost, pose=pose, pose_jacobian=jacobian,
                               revolute=tuple(bool(r) for r in self.revolute))

    def symbolic_position(self, chain: SymbolicChain):
        """The tip position (3) in the base frame as a CasADi expression."""
        import casadi as ca
        position = chain.frame_position(self.tip_id)
        if self.base_placement is None:
            return position
        base = self.base_placement
        return ca.DM(base.rotation.T) @ (position - ca.DM(base.translation))

    def _symbolic_rotation(self, chain: SymbolicChain):
        import casadi as ca
        rotation = chain.frame_rotation(self.tip_id)
        if self.base_placement is None:
            return rotation
        return ca.DM(self.base_placement.rotation.T) @ rotation

    def symbolic_cost(self, q, chain: SymbolicChain):
        """cost() as a CasADi expression of q (SX, n); None if the variant has none."""
        return None

    def compile_key(self) -> str:
        urdf = hashlib.sha256(self.urdf.read_bytes()).hexdigest()
        return f'{super().compile_key()} urdf {urdf}'

    def metadata(self) -> dict:
        meta = {**super().metadata(), 'robot': self.model.name, 'urdf': self.urdf.name,
                'base_frame': self.base_frame, 'tip_frame': self.tip_frame}
        if self.nominal is not None:
            meta['nominal_orientation'] = self.nominal.tolist()
        return meta
