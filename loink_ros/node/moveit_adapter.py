"""moveit_msgs/GetPositionIK, as MoveIt's srv_kinematics_plugin calls it.

Models whose task holds the whole tip position (x, y, z; a pose model adds the orientation)
are answered by the PoseSolver: the full pose (position and orientation, to task_tolerance m
and rotation_tolerance rad), or the position alone with position_only_ik; the answer is the
robot_state's continuation where that state's pose lies beside the target (runtime/
continuation.py: on its branch, no jump), else the lowest-cost one found (plus
seed_consistency ||q - seed||^2 when that weight is > 0, in place of the continuation), inside
the joint limits narrowed by the request's joint constraints, checked by forward kinematics,
and free of self-collision when avoid_collisions is set and the robot has an SRDF.
ik_request.timeout (else ik_timeout) is the deadline of its random-restart fallback; a pose
beyond the arm's certified reach (core/problems/arms/reach.py) is NO_IK_SOLUTION at once.
Position, orientation and visibility constraints are refused (INVALID_GOAL_CONSTRAINTS).

Models whose task is only some axes of the tip position (planar3: x) are position-only: those
axes of pose.position count; ranked latent samples of growing spread are tried until one is
within task_tolerance or time is up; joint constraints are refused there.

A position-only answer serves any link fixed to the tip at the same position too (e.g. the
Panda's panda_link8 for a panda_hand model); a full pose is the tip's own.
"""

import time
from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import Pose
from moveit_msgs.msg import MoveItErrorCodes, PositionIKRequest, RobotState
from moveit_msgs.srv import GetPositionIK
from rclpy.impl.rcutils_logger import RcutilsLogger
from sensor_msgs.msg import JointState

from loink_ros.core.problems.arms.kinematic_problem import CHART_AXES, KinematicProblem
from loink_ros.core.runtime.errors import SolverError
from loink_ros.core.runtime.pose_solver import PoseAnswer, PoseRequest, PoseSolver
from loink_ros.core.runtime.requests import MAX_SPREAD
from loink_ros.core.runtime.solution import Solution
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.node.conversions import MAX_ARRAY_LENGTH, is_base_frame, joint_index
from loink_ros.node.measured_state import CurrentConfiguration, StaleState
from loink_ros.node.parameters import Settings
from loink_ros.node.pose_targets import PoseLinks, pose_problem
from loink_ros.node.request_stats import RequestStats

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
    """The tip position axes the task is made of (a pose task's chart names aside);
    ValueError when it is no such task."""
    axes = [name.removeprefix(f'{tip_frame}_') for name in task_names]
    axes = [axis for axis in axes if axis not in CHART_AXES]
    if not axes or not all(axis in AXES and len(axis) == 1 for axis in axes):
        raise ValueError(f'task {task_names} is not made of {tip_frame}_x/_y/_z')
    return axes


class MoveItIK:
    """The GetPositionIK handler; no state between calls."""

    def __init__(self, solver: LOInKSolver, pose_solver: PoseSolver | None,
                 settings: Callable[[], Settings], logger: RcutilsLogger,
                 robot: CurrentConfiguration, stats: RequestStats):
        """`pose_solver` (pose_targets.pose_solver_of) answers full poses; None: the model
        is position-only."""
        self.solver, self.settings, self.logger = solver, settings, logger
        self.robot, self.stats = robot, stats
        problem = solver.problem
        if not isinstance(problem, KinematicProblem):
            raise ValueError(f'problem {problem.name} has no URDF chain to a tip frame')
        self.joint_names = list(problem.joint_names)
        self.base, self.links = problem.base_frame, PoseLinks(problem)
        self.axes = position_axes(problem.task_names, problem.tip_frame)
        self.pose_solver = pose_solver
        self.said_no_collisions = False

    def compute_ik(self, request: GetPositionIK.Request,
                   response: GetPositionIK.Response) -> GetPositionIK.Response:
        """Solve, or answer the MoveIt error code that says why not."""
        began = time.monotonic()
        response.error_code = answered('compute_ik', lambda: self.answer(request.ik_request, response, began),
                                       self.logger, self.stats)
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
        self.check_pose(ik.pose_stamped.pose)
        bounds = self.joint_bounds(ik)
        index, seed = self.group_seed(ik.robot_state)
        if self.pose_solver is not None:
            answer = self.solve_pose(ik, seed, bounds, settings, began + timeout, avoid)
            q, reason = answer.q, answer.reason
            if reason is not None and answer.source == 'continuation':   # certain, at once
                response.solution = solved_state(ik.robot_state, index, self.joint_names, q)
                raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, reason)
        else:
            task = [getattr(ik.pose_stamped.pose.position, axis) for axis in self.axes]
            solution, reason = self.search(task, seed, settings, began + timeout, avoid)
            q = solution.q
        response.solution = solved_state(ik.robot_state, index, self.joint_names, q)
        if reason is not None:
            raise Refusal(MoveItErrorCodes.TIMED_OUT,
                          f'no solution within the {timeout:g} s timeout; the best: {reason}')

    def solve_pose(self, ik: PositionIKRequest, seed: np.ndarray | None,
                   bounds: tuple[np.ndarray, np.ndarray] | None, settings: Settings,
                   deadline: float, avoid_collisions: bool) -> PoseAnswer:
        """The PoseSolver's answer to the request's pose (or position); NO_IK_SOLUTION at
        once for one beyond the arm's reach."""
        target = self.links.target(ik.pose_stamped.pose, ik.ik_link_name,
                                   settings.position_only_ik)
        unreachable = self.links.beyond_reach(target, settings.task_tolerance, ik.ik_link_name)
        if unreachable is not None:
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, unreachable)
        weight = settings.seed_consistency if seed is not None else 0.0
        lower, upper = bounds if bounds is not None else (None, None)
        request = PoseRequest(target, seed, weight, lower, upper,
                              deadline, avoid_collisions,
                              (settings.task_tolerance, settings.rotation_tolerance))
        return self.pose_solver.solve(request)

    def joint_bounds(self, ik: PositionIKRequest) -> tuple[np.ndarray, np.ndarray] | None:
        """The limits narrowed by ik_request.constraints' joint constraints (None: none);
        other kinds of constraint are refused."""
        constraints = ik.constraints
        kinds = [name for name, items in (
            ('position', constraints.position_constraints),
            ('orientation', constraints.orientation_constraints),
            ('visibility', constraints.visibility_constraints)) if items]
        if kinds:
            raise Refusal(MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS,
                          f'{", ".join(kinds)} constraints are not supported; joint '
                          'constraints are (give the pose itself as the target)')
        if not constraints.joint_constraints:
            return None
        if self.pose_solver is None:
            raise Refusal(MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS,
                          'joint constraints need a model of the whole tip position')
        problem = self.solver.problem
        lower, upper = problem.lower.copy(), problem.upper.copy()
        for constraint in constraints.joint_constraints:
            name = constraint.joint_name
            if name not in self.joint_names:
                raise Refusal(MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS,
                              f'joint constraint on {name!r}, not a joint of the group '
                              f'{self.joint_names}')
            values = [constraint.position, constraint.tolerance_above, constraint.tolerance_below]
            if not np.all(np.isfinite(values)) or min(values[1:]) < 0.0:
                raise Refusal(MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS,
                              f'joint constraint on {name!r}: position and tolerances must be '
                              'finite, tolerances >= 0')
            i = self.joint_names.index(name)
            lower[i] = max(lower[i], constraint.position - constraint.tolerance_below)
            upper[i] = min(upper[i], constraint.position + constraint.tolerance_above)
        if np.any(lower > upper):
            i = int(np.flatnonzero(lower > upper)[0])
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION,
                          f'the joint constraint on {self.joint_names[i]!r} lies outside its '
                          f'limits [{problem.lower[i]:.6g}, {problem.upper[i]:.6g}]')
        return lower, upper

    def check_pose(self, pose: Pose) -> None:
        """NO_IK_SOLUTION for a pose that is no pose (a quaternion of any non-zero length is
        normalised)."""
        reason = pose_problem(pose)
        if reason is not None:
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, reason)

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

    def position_only(self, ik: PositionIKRequest) -> bool:
        """Whether this request is answered for the tip position alone."""
        return self.pose_solver is None or self.settings().position_only_ik

    def check_target(self, ik: PositionIKRequest, group_name: str) -> None:
        """Group, link and frame must be the ones this model serves."""
        if ik.group_name != group_name:
            raise Refusal(MoveItErrorCodes.INVALID_GROUP_NAME,
                          f'group {ik.group_name!r}: this solver serves {group_name!r}')
        if ik.ik_link_names or ik.pose_stamped_vector:
            raise Refusal(MoveItErrorCodes.INVALID_LINK_NAME,
                          f'multi-tip requests are not served; the tip is {self.links.tip!r}')
        tips = self.links.served(self.position_only(ik))
        if ik.ik_link_name not in ('', *tips):
            raise Refusal(MoveItErrorCodes.INVALID_LINK_NAME,
                          f'link {ik.ik_link_name!r}: this solver serves {tips}')
        frame = ik.pose_stamped.header.frame_id
        if not is_base_frame(frame, self.base):
            raise Refusal(MoveItErrorCodes.FRAME_TRANSFORM_FAILURE,
                          f'frame {frame!r}: no transforms here, send poses in {self.base!r}')

    def group_seed(self, state: RobotState) -> tuple[dict[str, int] | None, np.ndarray | None]:
        """Name -> index of the request's joint state (None when it is empty) and the seed:
        the group's joints of the request, else of /joint_states (ROBOT_STATE_STALE when
        that state is older than joint_states_max_age), else none (no state ever came)."""
        joints = state.joint_state
        sizes = [len(joints.name), len(joints.position), len(joints.velocity),
                 len(joints.effort), len(state.multi_dof_joint_state.joint_names)]
        if max(sizes) > MAX_ARRAY_LENGTH:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, f'robot_state has an array of '
                          f'{max(sizes)} entries; the limit is {MAX_ARRAY_LENGTH}')
        if not joints.name and not joints.position:
            return None, self.current_state()
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


    def current_state(self) -> np.ndarray | None:
        """The measured positions, None before any came; Refusal when they are stale."""
        if self.robot.measured is None:
            return None
        try:
            return self.robot.fresh(self.settings().joint_states_max_age).positions
        except StaleState as err:
            raise Refusal(MoveItErrorCodes.ROBOT_STATE_STALE,
                          f'robot_state is empty and {err}: send the robot state') from None


def answered(service: str, answer: Callable[[], None], logger: RcutilsLogger,
             stats: RequestStats) -> MoveItErrorCodes:
    """Run a MoveIt service's `answer`: SUCCESS, the code of the Refusal it raised, or
    FAILURE (logged) for a bug, which must not take the node down; the request counted."""
    began = time.monotonic()
    code, message = MoveItErrorCodes.SUCCESS, ''
    try:
        answer()
    except Refusal as refusal:
        code, message = refusal.code, refusal.message
    except Exception as err:  # noqa: BLE001 - a bug must not take the node down
        logger.error(f'{service} failed: {type(err).__name__}: {err}')
        code, message = MoveItErrorCodes.FAILURE, f'{type(err).__name__}: {err}'
    stats.record(service, None if code == MoveItErrorCodes.SUCCESS else CODE_NAMES.get(code, str(code)),
                 1e3 * (time.monotonic() - began))
    return MoveItErrorCodes(val=code, message=message, source='loink')


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
