"""moveit_msgs/GetPositionIK, as MoveIt's srv_kinematics_plugin calls it.

Position-only IK: the model's task components are axes of the tip position (`<tip>_x`,
...), read from pose_stamped.pose.position; the orientation (once finite and non-zero) and
the request's constraints are ignored, and no collision checking is done (avoid_collisions
is accepted, not honoured). ik_request.timeout is a deadline: when the optimum is no
solution, ranked latent samples of growing spread are tried until one is or time is up.
Any link fixed to the tip at the same position is served too (a position-only answer is
the same for it), e.g. the Panda's panda_link8 for a panda_hand model.
"""

import time
from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import Pose
from moveit_msgs.msg import MoveItErrorCodes, PositionIKRequest, RobotState
from moveit_msgs.srv import GetPositionIK
from rclpy.impl.rcutils_logger import RcutilsLogger
from sensor_msgs.msg import JointState

from loink_ros.core.problems.kinematic_problem import KinematicProblem
from loink_ros.core.runtime.errors import SolverError
from loink_ros.core.runtime.requests import MAX_SPREAD
from loink_ros.core.runtime.solution import Solution
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.node.conversions import MAX_ARRAY_LENGTH, is_base_frame, joint_index
from loink_ros.node.parameters import Settings
from loink_ros.node.request_stats import RequestStats
from loink_ros.node.streaming import CurrentConfiguration

AXES = 'xyz'
# The deadline search: latent samples per round, and the first round's spread (a variance,
# doubled each round up to MAX_SPREAD); round k draws with random seed k (reproducible).
SEARCH_BATCH = 8
SEARCH_SPREAD = 0.25
CODE_NAMES = {value: name for name, value in vars(MoveItErrorCodes).items()
              if name.isupper() and isinstance(value, int)}


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


class MoveItIK:
    """The GetPositionIK handler; no state between calls."""

    def __init__(self, solver: LOInKSolver, settings: Callable[[], Settings],
                 logger: RcutilsLogger, robot: CurrentConfiguration, stats: RequestStats):
        self.solver, self.settings, self.logger = solver, settings, logger
        self.robot, self.stats = robot, stats
        problem = solver.problem
        if not isinstance(problem, KinematicProblem):
            raise ValueError(f'problem {problem.name} has no tip frame')
        self.joint_names = list(problem.joint_names)
        self.base, self.tips = problem.base_frame, problem.same_position_links()
        self.axes = position_axes(problem.task_names, problem.tip_frame)
        self.said_no_collisions = False

    def compute_ik(self, request: GetPositionIK.Request,
                   response: GetPositionIK.Response) -> GetPositionIK.Response:
        """Solve, or answer the MoveIt error code that says why not."""
        began = time.monotonic()
        code, message = MoveItErrorCodes.SUCCESS, ''
        try:
            self.answer(request.ik_request, response, began)
        except Refusal as refusal:
            code, message = refusal.code, refusal.message
        except Exception as err:  # noqa: BLE001 - a bug must not take the node down
            self.logger.error(f'compute_ik failed: {type(err).__name__}: {err}')
            code, message = MoveItErrorCodes.FAILURE, f'{type(err).__name__}: {err}'
        response.error_code = MoveItErrorCodes(val=code, message=message, source='loink')
        self.stats.record('compute_ik', None if code == MoveItErrorCodes.SUCCESS
                          else CODE_NAMES.get(code, str(code)), 1e3 * (time.monotonic() - began))
        return response

    def answer(self, ik: PositionIKRequest, response: GetPositionIK.Response,
               began: float) -> None:
        """Fill response.solution: the request's state with the group's joints solved."""
        settings = self.settings()
        timeout = ik.timeout.sec + 1e-9 * ik.timeout.nanosec or settings.ik_timeout
        self.check_target(ik, settings.group_name)
        avoid = ik.avoid_collisions and self.solver.problem.has_collision_model
        if ik.avoid_collisions and not avoid and not self.said_no_collisions:
            # Our own flag: rclpy's once=True inspects the caller's frame on every call
            # (~0.2 ms), and MoveIt sets avoid_collisions on every request.
            self.said_no_collisions = True
            self.logger.info('GetPositionIK: avoid_collisions is not honoured for this robot: '
                             'its problem has no self-collision model (no SRDF)')
        task = self.task(ik.pose_stamped.pose)
        index, seed = self.group_seed(ik.robot_state)
        solution, reason = self.search(task, seed, settings, began + timeout, avoid)
        response.solution = solved_state(ik.robot_state, index, self.joint_names, solution.q)
        if reason is not None:
            raise Refusal(MoveItErrorCodes.TIMED_OUT,
                          f'no solution within the {timeout:g} s timeout; the best: {reason}')

    def task(self, pose: Pose) -> list[float]:
        """The task components of the pose; NO_IK_SOLUTION for a pose that is no pose."""
        p, o = pose.position, pose.orientation
        if not np.all(np.isfinite([p.x, p.y, p.z, o.x, o.y, o.z, o.w])):
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, 'the pose has NaN or inf')
        if o.x == o.y == o.z == o.w == 0.0:
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, 'the orientation is the zero '
                          'quaternion (identity is w = 1)')
        return [getattr(p, axis) for axis in self.axes]

    def search(self, task: list[float], seed: np.ndarray | None, settings: Settings,
               deadline: float, avoid_collisions: bool) -> tuple[Solution, str | None]:
        """The optimum, else ranked latent samples, best first, until one is a solution (and,
        with `avoid_collisions`, free of self-collision) or the deadline passes; (best
        answer, why it is no solution or None)."""
        tolerance = settings.task_tolerance
        try:
            best = self.solver.solve(task, None, settings.refine, seed)
            reason = self.failure(best, tolerance, avoid_collisions)
            spread, attempt = SEARCH_SPREAD, 0
            while reason is not None and time.monotonic() < deadline:
                for candidate in self.solver.sample(task, SEARCH_BATCH, spread, settings.refine,
                                                    attempt, tolerance):
                    why = self.failure(candidate, tolerance, avoid_collisions)
                    if why is None or candidate.task_error < best.task_error:
                        best, reason = candidate, why
                    if why is None:
                        break
                spread, attempt = min(MAX_SPREAD, 2 * spread), attempt + 1
        except SolverError as err:
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, err.message) from None
        return best, reason

    def failure(self, solution: Solution, tolerance: float,
                avoid_collisions: bool) -> str | None:
        """Solution.failure, then, when asked, the robot's self-collisions."""
        reason = solution.failure(tolerance)
        if reason is None and avoid_collisions:
            touching = self.solver.problem.self_collisions(solution.q)
            if touching:
                reason = f'self-collision: {", ".join(touching)}'
        return reason

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

    def group_seed(self, state: RobotState) -> tuple[dict[str, int] | None, np.ndarray | None]:
        """Name -> index of the request's joint state (None when it is empty) and the seed:
        the group's joints of the request, else of /joint_states, else none."""
        joints = state.joint_state
        sizes = [len(joints.name), len(joints.position), len(joints.velocity),
                 len(joints.effort), len(state.multi_dof_joint_state.joint_names)]
        if max(sizes) > MAX_ARRAY_LENGTH:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, f'robot_state has an array of '
                          f'{max(sizes)} entries; the limit is {MAX_ARRAY_LENGTH}')
        if not joints.name and not joints.position:
            return None, self.robot.positions
        try:
            index = joint_index(joints.name, joints.position, 'robot_state.joint_state')
        except ValueError as err:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, str(err)) from None
        missing = [name for name in self.joint_names if name not in index]
        if missing:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                          f'robot_state lacks the group joints {missing}')
        seed = np.array([joints.position[index[name]] for name in self.joint_names])
        if not np.all(np.isfinite(seed)):
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                          'robot_state has NaN or inf in a group joint')
        return index, seed


def solved_state(state: RobotState, index: dict[str, int] | None, names: list[str],
                 q: np.ndarray) -> RobotState:
    """The request's robot state with the group's joints set to q (others unchanged);
    for an empty request state, the group's joints alone."""
    joints = state.joint_state
    if index is None:
        solved = JointState(header=joints.header, name=list(names), position=q.tolist())
        return RobotState(joint_state=solved, multi_dof_joint_state=state.multi_dof_joint_state)
    positions = list(joints.position)
    for name, value in zip(names, q.tolist()):
        positions[index[name]] = value
    solved = JointState(header=joints.header, name=list(joints.name), position=positions,
                        velocity=joints.velocity, effort=joints.effort)
    return RobotState(joint_state=solved, multi_dof_joint_state=state.multi_dof_joint_state)
