"""Requested poses -> the tip's PoseTarget: the links that may be asked for, their
conversion to the tip, and the checks of a pose (GetPositionIK and SolvePose share them)."""

import math

import numpy as np
from geometry_msgs.msg import Pose

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import quaternion_matrix
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver


def pose_solver_of(solver: LOInKSolver) -> PoseSolver | None:
    """The pose solver when the model's task is the whole tip position, else None."""
    problem = solver.problem
    if not isinstance(problem, KinematicProblem) or not problem.task_is_tip_position:
        return None
    return PoseSolver(solver)


class PoseLinks:
    """Which links a pose may be given for: any link moving rigidly with the tip for a full
    pose, one at the tip's position for a position-only one."""

    def __init__(self, problem: KinematicProblem):
        self.tip, self.base = problem.tip_frame, problem.base_frame
        self.same_position = problem.same_position_links()
        self.rigid = problem.rigid_links()
        # A target farther than this is refused at once rather than searched for.
        self.reach = problem.tip_reach

    def served(self, position_only: bool) -> list[str]:
        """The tip first, then the others, sorted."""
        links = self.same_position if position_only else self.rigid
        return [self.tip, *sorted(set(links) - {self.tip})]

    def target(self, pose: Pose, link: str, position_only: bool) -> PoseTarget:
        """The tip's target for a checked pose of `link` ('' = the tip); ValueError naming
        the served links for another."""
        if link not in ('', *self.served(position_only)):
            raise ValueError(f'link {link!r}: this solver serves {self.served(position_only)}')
        p, o = pose.position, pose.orientation
        position = np.array([p.x, p.y, p.z])
        quaternion = np.array([o.x, o.y, o.z, o.w])
        # Scaled first: the norm of a quaternion of 1e300 (or 1e-300) would overflow (or
        # vanish), and any non-zero length stands for the same rotation.
        rotation = quaternion_matrix(quaternion / np.abs(quaternion).max())
        if position_only:
            return PoseTarget(position, rotation, True)
        return self.tip_target(PoseTarget(position, rotation), link)

    def tip_target(self, target: PoseTarget, link: str) -> PoseTarget:
        """The tip's full pose where `link` ('' = the tip; one of served(False)) has `target`."""
        if not link or link == self.tip:
            return target
        offset = self.rigid[link]
        return PoseTarget(target.position + target.rotation @ offset.translation,
                          target.rotation @ offset.rotation)

    def link_target(self, tip: PoseTarget, link: str) -> PoseTarget:
        """The pose of `link` (fixed to the tip) where the tip has `tip`: tip_target's inverse."""
        if not link or link == self.tip:
            return tip
        back = self.rigid[link].inverse()
        return PoseTarget(tip.position + tip.rotation @ back.translation, tip.rotation @ back.rotation)

    def beyond_reach(self, target: PoseTarget, tolerance: float, link: str = '') -> str | None:
        """Why the tip's target is certainly unreachable: farther from the base origin than
        the tip's reach plus the position tolerance; None when it may be reachable."""
        distance = math.hypot(*target.position)  # no overflow for 1e300 coordinates
        if distance <= self.reach + tolerance:
            return None
        where = f'pose {distance:.3g} m' if link in ('', self.tip) else \
            f'pose of {link} puts {self.tip} {distance:.3g} m'
        return (f"{where} from {self.base}, beyond the arm's reach (at most {self.reach:.3g} m"
                f', position tolerance {tolerance:g} m)')


def pose_problem(pose: Pose) -> str | None:
    """Why a pose is no pose (NaN or inf, the zero quaternion), or None."""
    p, o = pose.position, pose.orientation
    if not np.all(np.isfinite([p.x, p.y, p.z, o.x, o.y, o.z, o.w])):
        return 'the pose has NaN or inf'
    if o.x == o.y == o.z == o.w == 0.0:
        return 'the orientation is the zero quaternion (identity is w = 1)'
    return None
