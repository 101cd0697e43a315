"""moveit_msgs/GetPositionIK, as MoveIt's srv_kinematics_plugin calls it.

Position-only IK: the model's task components are axes of the tip position (`<tip>_x`,
...), read from pose_stamped.pose.position; the orientation and the request's constraints
are ignored, and no collision checking is done (avoid_collisions is accepted, not honoured).
Any link fixed to the tip at the same position is served too (a position-only answer is
the same for it), e.g. the Panda's panda_link8 for a panda_hand model.
"""

from collections.abc import Callable

import numpy as np
import pinocchio as pin
from moveit_msgs.msg import MoveItErrorCodes, PositionIKRequest, RobotState
from moveit_msgs.srv import GetPositionIK
from rclpy.impl.rcutils_logger import RcutilsLogger
from sensor_msgs.msg import JointState

from loink_ros.core.problems.kinematic_problem import KinematicProblem
from loink_ros.core.runtime.errors import SolverError
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.node.conversions import is_base_frame, joint_index
from loink_ros.node.parameters import Settings

AXES = 'xyz'


class Refusal(Exception):
    """A request answered with a MoveIt error code."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def position_axes(task_names: list[str], tip_frame: str) -> list[str]:
    """The tip position axes the task is made of; ValueError when it is no such task."""
    axes = [name.removeprefix(f'{tip_frame}_') for name in task_names]
    if not all(axis in AXES and len(axis) == 1 for axis in axes):
        raise ValueError(f'task {task_names} is not made of {tip_frame}_x/_y/_z')
    return axes


def same_position_links(problem: KinematicProblem) -> list[str]:
    """The tip and every link fixed to it at the same position, tip first."""
    tip = problem.model.frames[problem.tip_id]
    links = [frame.name for frame in problem.model.frames
             if frame.type == pin.FrameType.BODY and frame.parentJoint == tip.parentJoint
             and np.allclose(frame.placement.translation, tip.placement.translation,
                             rtol=0.0, atol=1e-9)]
    return [problem.tip_frame] + sorted(set(links) - {problem.tip_frame})


class MoveItIK:
    """The GetPositionIK handler; no state between calls."""

    def __init__(self, solver: LOInKSolver, settings: Callable[[], Settings],
                 logger: RcutilsLogger):
        self.solver, self.settings, self.logger = solver, settings, logger
        robot = solver.problem
        if not isinstance(robot, KinematicProblem):
            raise ValueError(f'problem {robot.name} has no tip frame')
        self.joint_names = list(robot.joint_names)
        self.base, self.tips = robot.base_frame, same_position_links(robot)
        self.axes = position_axes(robot.task_names, robot.tip_frame)

    def compute_ik(self, request: GetPositionIK.Request,
                   response: GetPositionIK.Response) -> GetPositionIK.Response:
        """Solve, or answer the MoveIt error code that says why not."""
        code, message = MoveItErrorCodes.SUCCESS, ''
        try:
            self.answer(request.ik_request, response)
        except Refusal as refusal:
            code, message = refusal.code, refusal.message
        except Exception as err:  # noqa: BLE001 - a bug must not take the node down
            self.logger.error(f'compute_ik failed: {type(err).__name__}: {err}')
            code, message = MoveItErrorCodes.FAILURE, f'{type(err).__name__}: {err}'
        response.error_code = MoveItErrorCodes(val=code, message=message, source='loink')
        return response

    def answer(self, ik: PositionIKRequest, response: GetPositionIK.Response) -> None:
        """Fill response.solution: the request's state with the group's joints solved."""
        settings = self.settings()
        self.check_target(ik, settings.group_name)
        if ik.avoid_collisions:
            self.logger.info('GetPositionIK: avoid_collisions is not honoured, this solver '
                             'does no collision checking', once=True)
        index, seed = self.group_seed(ik.robot_state)
        position = ik.pose_stamped.pose.position
        try:
            solution = self.solver.solve([getattr(position, axis) for axis in self.axes],
                                         None, settings.refine, seed)
        except SolverError as err:
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, err.message) from None
        response.solution = solved_state(ik.robot_state, index, self.joint_names, solution.q)
        if solution.task_error > settings.task_tolerance:
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION,
                          f'task error {solution.task_error:.3g} is above task_tolerance '
                          f'{settings.task_tolerance:g}')

    def check_target(self, ik: PositionIKRequest, group_name: str) -> None:
        """Group, link and frame must be the ones this model serves."""
        if ik.group_name != group_name:
            raise Refusal(MoveItErrorCodes.INVALID_GROUP_NAME,
                          f'group {ik.group_name!r}: this solver serves {group_name!r}')
        if ik.ik_link_names or ik.pose_stamped_vector:
            raise Refusal(MoveItErrorCodes.INVALID_LINK_NAME,
                          f'multi-tip requests are not served; the tip is {self.tips[0]!r}')
        if ik.ik_link_name not in ('', *self.tips):
            raise Refusal(MoveItErrorCodes.INVALID_LINK_NAME,
                          f'link {ik.ik_link_name!r}: this solver serves {self.tips}')
        frame = ik.pose_stamped.header.frame_id
        if not is_base_frame(frame, self.base):
            raise Refusal(MoveItErrorCodes.FRAME_TRANSFORM_FAILURE,
                          f'frame {frame!r}: no transforms here, send poses in {self.base!r}')

    def group_seed(self, state: RobotState) -> tuple[dict[str, int], np.ndarray]:
        """Name -> index of the request's joint state, and the group's joints as the seed."""
        joints = state.joint_state
        try:
            index = joint_index(joints.name, joints.position, 'robot_state.joint_state')
        except ValueError as err:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, str(err)) from None
        missing = [name for name in self.joint_names if name not in index]
        if missing:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                          f'robot_state lacks the group joints {missing}')
        if not np.all(np.isfinite(joints.position)):
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, 'robot_state has NaN or inf')
        return index, np.array([joints.position[index[name]] for name in self.joint_names])


def solved_state(state: RobotState, index: dict[str, int], names: list[str],
                 q: np.ndarray) -> RobotState:
    """The request's robot state with the group's joints set to q (others unchanged)."""
    joints = state.joint_state
    positions = list(joints.position)
    for name, value in zip(names, q.tolist()):
        positions[index[name]] = value
    solved = JointState(header=joints.header, name=list(joints.name), position=positions,
                        velocity=joints.velocity, effort=joints.effort)
    return RobotState(joint_state=solved, multi_dof_joint_state=state.multi_dof_joint_state)
