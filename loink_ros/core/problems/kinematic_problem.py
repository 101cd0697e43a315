"""A problem whose task is the position of a frame of a URDF robot (Pinocchio)."""

from importlib.resources import files
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.problem import Problem
from loink_ros.core.problems.thread_data import PerThreadData

AXES = 'xyz'


def robot_file(name: str) -> Path:
    """Path of a URDF shipped in loink_ros/robots."""
    return Path(str(files('loink_ros') / 'robots' / name))


class KinematicProblem(Problem):
    """Task = chosen components of the tip frame position, in the base frame."""

    data = PerThreadData()

    def __init__(self, urdf: Path, tip_frame: str, axes: str, name: str, cost_name: str,
                 base_frame: str = 'base_link', locked_joints: tuple[str, ...] = (),
                 limits: tuple[np.ndarray, np.ndarray] | None = None):
        """`locked_joints` are fixed at their neutral value; `limits` narrows the URDF's."""
        self.urdf, self.tip_frame, self.base_frame = Path(urdf), tip_frame, base_frame
        model = pin.buildModelFromUrdf(str(self.urdf))
        locked = [model.getJointId(n) for n in locked_joints if model.existJointName(n)]
        self.model = pin.buildReducedModel(model, locked, pin.neutral(model)) if locked else model
        if limits is not None:
            self.model.lowerPositionLimit[:], self.model.upperPositionLimit[:] = limits
        if not self.model.existFrame(tip_frame):
            raise ValueError(f'frame {tip_frame!r} not in {self.urdf.name}')
        self.tip_id = self.model.getFrameId(tip_frame)
        self.rows = [AXES.index(a) for a in axes]
        self.name, self.cost_name = name, cost_name
        self.joint_names = [n for n in self.model.names[1:]]
        self.lower = self.model.lowerPositionLimit.copy()
        self.upper = self.model.upperPositionLimit.copy()
        self.task_names = [f'{tip_frame}_{a}' for a in axes]

    def tip_position(self, q: np.ndarray) -> np.ndarray:
        """Tip position (3,) at one configuration."""
        data = self.data
        pin.forwardKinematics(self.model, data, q)
        return pin.updateFramePlacement(self.model, data, self.tip_id).translation.copy()

    def task(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        return np.array([self.tip_position(row)[self.rows] for row in q])

    def task_jacobian(self, q: np.ndarray) -> np.ndarray:
        jac = pin.computeFrameJacobian(self.model, self.data, q, self.tip_id,
                                       pin.LOCAL_WORLD_ALIGNED)
        return jac[self.rows]

    def gravity_torque(self, q: np.ndarray) -> np.ndarray:
        """Static joint torques holding each configuration against gravity, (B, n)."""
        return np.array([pin.computeGeneralizedGravity(self.model, self.data, row)
                         for row in np.atleast_2d(q)])

    def metadata(self) -> dict:
        return {**super().metadata(), 'robot': self.model.name, 'urdf': self.urdf.name,
                'base_frame': self.base_frame, 'tip_frame': self.tip_frame}
