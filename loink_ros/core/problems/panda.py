"""Franka Panda (example-robot-data URDF): 7 arm joints, hand position task, posture cost."""

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import numpy as np

from loink_ros.core.problems.kinematic_problem import KinematicProblem

URDF_IN_WHEEL = 'cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf'
SRDF_IN_WHEEL = 'cmeel.prefix/share/example-robot-data/robots/panda_description/srdf/panda.srdf'
SHARE_IN_WHEEL = 'cmeel.prefix/share'   # where the URDF's package:// meshes resolve
FINGERS = ('panda_finger_joint1', 'panda_finger_joint2')
# Narrowed joint limits (rad) and posture weights, chosen so each target has one clear
# optimum (docs/PANDA.md).
LOWER = np.array([-1.2, -0.6, -1.2, -2.8, -1.4, 0.6, -2.8973])
UPPER = np.array([1.2, 1.4, 1.2, -0.6, 1.4, 3.0, 2.8973])
WEIGHTS = np.ones(7)
FLOOR_Z = 0.05  # m: sampled configurations with the hand lower than this are dropped


def panda_urdf() -> Path:
    """panda.urdf of the installed example-robot-data wheel."""
    return wheel_file(URDF_IN_WHEEL)


def wheel_file(relative: str) -> Path:
    """A file of the installed example-robot-data wheel."""
    try:
        path = Path(str(distribution('example-robot-data').locate_file(relative)))
    except PackageNotFoundError:
        raise FileNotFoundError('the Panda URDF comes from example-robot-data: '
                                'pip install example-robot-data==6.0.0') from None
    if not path.exists():
        raise FileNotFoundError(f'{path} missing from the example-robot-data install')
    return path


class PandaProblem(KinematicProblem):
    """Task: panda_hand position in panda_link0; J = sum w_i ((q_i - q_mid,i) / q_half,i)^2."""

    def __init__(self, urdf: Path | None = None,
                 limits: tuple[np.ndarray, np.ndarray] | None = (LOWER, UPPER)):
        """`limits` None keeps the URDF's (only to compare designs: loink design panda)."""
        # The wheel's SRDF only fits the wheel's URDF; another URDF gets no collision model.
        srdf = wheel_file(SRDF_IN_WHEEL) if urdf is None else None
        super().__init__(urdf or panda_urdf(), 'panda_hand', 'xyz', name='panda',
                         cost_name='posture', base_frame='panda_link0', locked_joints=FINGERS,
                         limits=limits, srdf=srdf,
                         package_dirs=(str(wheel_file(SHARE_IN_WHEEL)),))
        self.mid, self.half = 0.5 * (self.lower + self.upper), 0.5 * (self.upper - self.lower)

    def cost(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        return ((q - self.mid) / self.half) ** 2 @ WEIGHTS

    def symbolic_cost(self, q, chain):
        return sum(WEIGHTS[i] * ((q[i] - self.mid[i]) / self.half[i]) ** 2 for i in range(self.dim))

    def cost_gradient(self, q: np.ndarray) -> np.ndarray:
        """d cost / d q at one configuration, (n,) -> (n,)."""
        return 2.0 * WEIGHTS * (q - self.mid) / self.half ** 2

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """Uniform within the limits, keeping the hand above the table (z >= FLOOR_Z)."""
        kept = np.empty((0, self.dim))
        while len(kept) < count:
            q = rng.uniform(self.lower, self.upper, size=(2 * (count - len(kept)) + 16, self.dim))
            kept = np.vstack([kept, q[self.task(q)[:, 2] >= FLOOR_Z]])
        return kept[:count]
