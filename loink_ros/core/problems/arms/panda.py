"""Franka Panda (example-robot-data URDF): 7 arm joints, posture cost; the hand position on
narrowed limits (`panda`), on the URDF's (`panda_full`, the start model of full-pose IK), or
the full hand pose task (`panda_pose`)."""

from pathlib import Path

import numpy as np

from loink_ros.core.problems.arms.example_robots import mesh_root, robot_file
from loink_ros.core.problems.arms.posture_arm import PostureArmProblem

URDF = 'panda_description/urdf/panda.urdf'
SRDF = 'panda_description/srdf/panda.srdf'
FINGERS = ('panda_finger_joint1', 'panda_finger_joint2')
# Narrowed joint limits (rad), chosen so each target has one clear optimum (docs/PANDA.md).
LOWER = np.array([-1.2, -0.6, -1.2, -2.8, -1.4, 0.6, -2.8973])
UPPER = np.array([1.2, 1.4, 1.2, -0.6, 1.4, 3.0, 2.8973])
FLOOR_Z = 0.05  # m: sampled configurations with the hand lower than this are dropped
# The pose task's nominal hand orientation: pointing down, fingers along the base y axis
# (the hand at the example configuration, yawed to the base axes).
HAND_DOWN = np.diag([1.0, -1.0, -1.0])


def panda_urdf() -> Path:
    """panda.urdf of the installed example-robot-data wheel."""
    return robot_file(URDF)


class PandaProblem(PostureArmProblem):
    """Task: panda_hand position in panda_link0; J = sum ((q_i - q_mid,i) / q_half,i)^2."""

    def __init__(self, urdf: Path | None = None,
                 limits: tuple[np.ndarray, np.ndarray] | None = (LOWER, UPPER),
                 name: str = 'panda', orientation: np.ndarray | None = None):
        """`limits` None keeps the URDF's; `orientation` makes it a pose task about it."""
        # The wheel's SRDF only fits the wheel's URDF; another URDF gets no collision model.
        srdf = robot_file(SRDF) if urdf is None else None
        super().__init__(urdf or panda_urdf(), 'panda_hand', 'xyz', name=name,
                         cost_name='posture', base_frame='panda_link0', locked_joints=FINGERS,
                         limits=limits, srdf=srdf, package_dirs=(mesh_root(),),
                         orientation=orientation)

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """`panda`: uniform within the limits, keeping the hand above the table
        (z >= FLOOR_Z); the URDF-limit variants: uniform without self-collision."""
        if self.name != 'panda':
            return self.sample_collision_free(count, rng)
        kept = np.empty((0, self.dim))
        while len(kept) < count:
            q = rng.uniform(self.lower, self.upper, size=(2 * (count - len(kept)) + 16, self.dim))
            kept = np.vstack([kept, q[self.task(q)[:, 2] >= FLOOR_Z]])
        return kept[:count]


class PandaFullProblem(PandaProblem):
    """The hand position on the URDF's limits: the start model of full-pose IK (docs/POSE.md)."""

    def __init__(self, urdf: Path | None = None):
        super().__init__(urdf, limits=None, name='panda_full')


class PandaPoseProblem(PandaProblem):
    """The hand's full pose (position, and orientation about HAND_DOWN) on the URDF's limits:
    the pose task a network did not learn (docs/POSE.md), kept to reproduce that."""

    def __init__(self, urdf: Path | None = None):
        super().__init__(urdf, limits=None, name='panda_pose', orientation=HAND_DOWN)
