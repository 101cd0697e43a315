"""UFACTORY xArm7 (example-robot-data URDF and SRDF): 7 revolute joints, four of them turning
+/-2 pi; the tip link_eef's position on the URDF's limits, posture cost: the start model of
full-pose IK for a second maker's arm (docs/POSE.md)."""

from pathlib import Path

from loink_ros.core.problems.arms.example_robots import mesh_root, robot_file
from loink_ros.core.problems.arms.posture_arm import PostureArmProblem

URDF = 'xarm_description/urdf/xarm7.urdf'
SRDF = 'xarm_description/srdf/xarm7.srdf'


class XArm7Problem(PostureArmProblem):
    """Task: link_eef position in link_base; J = sum ((q_i - q_mid,i) / q_half,i)^2."""

    def __init__(self, urdf: Path | None = None):
        srdf = robot_file(SRDF) if urdf is None else None
        super().__init__(urdf or robot_file(URDF), 'link_eef', 'xyz', name='xarm7_full',
                         cost_name='posture', base_frame='link_base', srdf=srdf,
                         package_dirs=(mesh_root(),))
