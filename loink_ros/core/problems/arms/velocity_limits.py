"""Joint velocity limits of a KinematicProblem, from its URDF (Pinocchio's model.velocityLimit)."""

import numpy as np

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem


def velocity_limits(problem: KinematicProblem) -> np.ndarray:
    """Velocity limit (rad/s or m/s) of each joint of problem.joint_names, in that order.

    Raises a ValueError naming the first joint whose URDF gives no finite, positive limit
    (Pinocchio reads a missing one as 0, or as infinity on a continuous joint), or for a
    problem that is no URDF arm (magneto, hsa)."""
    model = getattr(problem, 'model', None)   # the reduced model: its joints are problem.joint_names
    if model is None:
        raise ValueError(f'{type(problem).__name__} is not a URDF arm: it has no velocity limits')
    limits = np.array([model.velocityLimit[joint.idx_v] for joint in model.joints[1:]], float)
    bad = ~(np.isfinite(limits) & (limits > 0.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f'{problem.urdf.name}: joint {problem.joint_names[i]!r} has no velocity '
                         f'limit (velocity="{limits[i]}"): give it one in the URDF')
    return limits
