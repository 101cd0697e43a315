"""moveit_msgs/GetCartesianPath at ~/compute_cartesian_path: the whole path planned at once
(core/runtime/cartesian_path.py) from the request's start state or the measured one, timed
within the joint limits as joint_trajectory_controller will run it (path_timing.py). The
type move_group serves, so its clients work with a remap; docs/CARTESIAN.md says what each
field does."""

import math
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Duration
from moveit_msgs.msg import MoveItErrorCodes, RobotState, RobotTrajectory
from moveit_msgs.srv import GetCartesianPath
from rclpy.impl.rcutils_logger import RcutilsLogger
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from loink_ros.core.motion.joint_limits import JointLimits, JointLimitsError
from loink_ros.core.runtime.cartesian_path import CartesianPlanner, PathRequest, interpolate
from loink_ros.core.runtime.path_timing import SAME_KNOT, CartesianSpeed, TimingError, time_path
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import PoseSolver
from loink_ros.node.conversions import MAX_ARRAY_LENGTH, is_base_frame, joint_index
from loink_ros.node.measured_state import CurrentConfiguration, StaleState
from loink_ros.node.moveit_adapter import Refusal, answered
from loink_ros.node.parameters import Settings
from loink_ros.node.pose_targets import PoseLinks, pose_problem
from loink_ros.node.request_stats import RequestStats

# Requests of more waypoints than this are refused before any work.
MAX_WAYPOINTS = 100_000
MAX_POSES = 200_000


class CartesianPathService:
    """The GetCartesianPath handler; no state between calls (`robot`: the measured state,
    which the node's /joint_states subscription keeps)."""

    def __init__(self, pose_solver: PoseSolver, limits: JointLimits, settings: Callable[[], Settings],
                 logger: RcutilsLogger, stats: RequestStats, robot: CurrentConfiguration):
        self.problem, self.settings, self.logger, self.stats = pose_solver.problem, settings, logger, stats
        self.planner = CartesianPlanner(pose_solver, limits.velocity)
        self.limits, self.robot = limits, robot
        self.links = PoseLinks(self.problem)
        self.joint_names = list(self.problem.joint_names)

    def compute_cartesian_path(self, request: GetCartesianPath.Request,
                               response: GetCartesianPath.Response) -> GetCartesianPath.Response:
        """Plan, or answer the MoveIt error code that says why not; a plan that stops short
        (fraction < 1) is SUCCESS with the reason as the code's message."""
        response.start_state = request.start_state
        stopped = []
        response.error_code = answered('compute_cartesian_path',
                                       lambda: stopped.append(self.answer(request, response)),
                                       self.logger, self.stats)
        if stopped and stopped[0] is not None:
            response.error_code.message = stopped[0]
        return response

    def answer(self, request: GetCartesianPath.Request, response: GetCartesianPath.Response) -> str | None:
        """Fill the response; returns why the plan stops short, or None."""
        settings = self.settings()
        self.check(request, settings)
        link = request.link_name or self.links.tip
        start = self.start(request.start_state, settings)
        waypoints = [self.waypoint(pose, link, i) for i, pose in enumerate(request.waypoints)]
        if start is not None:
            first = self.link_pose(start, link)
        else:
            first, waypoints = waypoints[0], waypoints[1:]
        link_poses, ends = interpolate(first, waypoints, request.max_step)
        if len(link_poses) > MAX_POSES:
            raise Refusal(MoveItErrorCodes.INVALID_MOTION_PLAN,
                          f'max_step {request.max_step:g} makes {len(link_poses)} poses; at most '
                          f'{MAX_POSES} are planned')
        poses = [self.links.tip_target(pose, link) for pose in link_poses]
        plan = self.planner.plan(PathRequest(
            poses, start, jump=self.jumps(request, settings.cartesian_path_max_joint_step),
            smoothing=settings.cartesian_path_smoothing,
            avoid_collisions=request.avoid_collisions and self.problem.has_collision_model))
        q, reached, reason = plan.q[:plan.reached], plan.reached, plan.reason
        if request.jump_threshold > 0.0 and len(q) > 1:
            q, reached, reason = self.relative_jumps(q, request.jump_threshold, reached, reason)
        response.fraction = fraction(reached, ends, start is None)
        if not len(q):
            raise Refusal(MoveItErrorCodes.NO_IK_SOLUTION, reason or 'no configuration')
        # The state the path starts at: the given, the measured or the chosen one.
        response.start_state = RobotState(joint_state=JointState(name=list(self.joint_names),
                                                                 position=q[0].tolist()))
        response.solution = self.trajectory(q, request)
        if reason is None:
            return None
        self.logger.info(f'compute_cartesian_path: fraction {response.fraction:.3f}: {reason}')
        return f'fraction {response.fraction:.3f}: {reason}'

    def check(self, request: GetCartesianPath.Request, settings: Settings) -> None:
        """Group, links, frame, numbers and constraints must be usable."""
        if request.group_name != settings.group_name:
            raise Refusal(MoveItErrorCodes.INVALID_GROUP_NAME,
                          f'group {request.group_name!r}: this solver serves {settings.group_name!r}')
        served = self.links.served(False)
        for name, link in (('link_name', request.link_name),
                           ('cartesian_speed_limited_link', request.cartesian_speed_limited_link)):
            if link not in ('', *served):
                raise Refusal(MoveItErrorCodes.INVALID_LINK_NAME,
                              f'{name} {link!r}: this solver serves {served}')
        if not is_base_frame(request.header.frame_id, self.problem.base_frame):
            raise Refusal(MoveItErrorCodes.FRAME_TRANSFORM_FAILURE,
                          f'frame {request.header.frame_id!r}: no transforms here, send waypoints '
                          f'in {self.problem.base_frame!r}')
        if not request.waypoints:
            raise Refusal(MoveItErrorCodes.INVALID_MOTION_PLAN, 'no waypoints')
        if len(request.waypoints) > MAX_WAYPOINTS:
            raise Refusal(MoveItErrorCodes.INVALID_MOTION_PLAN,
                          f'{len(request.waypoints)} waypoints; at most {MAX_WAYPOINTS}')
        numbers = {'max_step': request.max_step, 'jump_threshold': request.jump_threshold,
                   'prismatic_jump_threshold': request.prismatic_jump_threshold,
                   'revolute_jump_threshold': request.revolute_jump_threshold,
                   'max_cartesian_speed': request.max_cartesian_speed}
        for name, value in numbers.items():
            if not math.isfinite(value):
                raise Refusal(MoveItErrorCodes.INVALID_MOTION_PLAN, f'{name} = {value}')
        if not request.max_step > 0.0:
            raise Refusal(MoveItErrorCodes.INVALID_MOTION_PLAN,
                          f'max_step = {request.max_step}: it must be > 0')
        constraints = request.path_constraints
        if (constraints.joint_constraints or constraints.position_constraints
                or constraints.orientation_constraints or constraints.visibility_constraints):
            raise Refusal(MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS,
                          'path_constraints are not supported: give the path as waypoints')
        try:
            self.limits.require('acceleration')
        except JointLimitsError as err:
            raise Refusal(MoveItErrorCodes.FAILURE, f'no acceleration limits to time the path '
                          f'with: {err} (the parameter joint_limits_file, docs/CARTESIAN.md)') from None

    def start(self, state: RobotState, settings: Settings) -> np.ndarray | None:
        """Where the path starts, as MoveIt reads start_state: its group joints; a state that
        names none of them, or is_diff with some, is the measured state (with those joints
        set); None (a free start) when no state of every joint ever came on /joint_states."""
        given = self.given_joints(state)
        if len(given) == len(self.joint_names):
            q, source = np.array([given[name] for name in self.joint_names]), 'start_state'
        elif given and not state.is_diff:
            missing = [name for name in self.joint_names if name not in given]
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                          f'start_state lacks the group joints {missing}')
        elif self.robot.measured is None:
            if given:
                raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                              f'start_state is a diff and no state came on {settings.joint_states_topic} '
                              'to apply it to')
            return None
        else:
            q, source = self.measured(settings), f'the state on {settings.joint_states_topic}'
            for i, name in enumerate(self.joint_names):
                q[i] = given.get(name, q[i])
        outside = (q < self.problem.lower - 1e-9) | (q > self.problem.upper + 1e-9)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                          f'{source} puts {self.joint_names[i]} at {q[i]:.6g}, outside its '
                          f'limits [{self.problem.lower[i]:.6g}, {self.problem.upper[i]:.6g}]')
        return q

    def given_joints(self, state: RobotState) -> dict[str, float]:
        """The group joints start_state names, with their positions (finite)."""
        joints = state.joint_state
        if max(len(joints.name), len(joints.position)) > MAX_ARRAY_LENGTH:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE,
                          f'start_state has more than {MAX_ARRAY_LENGTH} joints')
        try:
            index = joint_index(joints.name, joints.position, 'start_state.joint_state')
        except ValueError as err:
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, str(err)) from None
        given = {name: joints.position[index[name]] for name in self.joint_names if name in index}
        if not all(math.isfinite(value) for value in given.values()):
            raise Refusal(MoveItErrorCodes.INVALID_ROBOT_STATE, 'start_state has NaN or inf')
        return given

    def measured(self, settings: Settings) -> np.ndarray:
        """The measured positions (a copy); ROBOT_STATE_STALE, saying how old, when older than
        joint_states_max_age."""
        try:
            measured = self.robot.fresh(settings.joint_states_max_age, settings.joint_states_topic)
        except StaleState as err:
            raise Refusal(MoveItErrorCodes.ROBOT_STATE_STALE,
                          f'the path starts at the measured state and {err}: send the group '
                          'joints in start_state, or publish the state') from None
        return measured.positions.copy()

    def waypoint(self, pose, link: str, index: int) -> PoseTarget:
        """A waypoint of `link` as a PoseTarget of that link (not yet the tip's)."""
        reason = pose_problem(pose)
        if reason is not None:
            raise Refusal(MoveItErrorCodes.INVALID_MOTION_PLAN, f'waypoint {index}: {reason}')
        target = self.links.target(pose, '', False)   # normalised, no offset: the link's own
        return PoseTarget(target.position, target.rotation)

    def link_pose(self, q: np.ndarray, link: str) -> PoseTarget:
        """The pose of `link` (fixed to the tip) at q."""
        return self.links.link_target(PoseTarget(*self.problem.tip_pose(q)), link)

    def jumps(self, request: GetCartesianPath.Request, default: float) -> np.ndarray | None:
        """Each joint's largest step: the revolute (else `default`, 0: none) or prismatic jump
        threshold (None: none)."""
        revolute = (request.revolute_jump_threshold if request.revolute_jump_threshold > 0 else
                    default if default > 0 else np.inf)
        prismatic = request.prismatic_jump_threshold if request.prismatic_jump_threshold > 0 else np.inf
        if math.isinf(revolute) and math.isinf(prismatic):
            return None
        return np.where(self.problem.revolute, revolute, prismatic)

    @staticmethod
    def relative_jumps(q: np.ndarray, factor: float, reached: int,
                       reason: str | None) -> tuple[np.ndarray, int, str | None]:
        """MoveIt's relative jump check: the path cut before the first step whose joint-space
        distance exceeds factor x the mean step."""
        steps = np.abs(np.diff(q, axis=0)).sum(axis=1)
        jumps = np.flatnonzero(steps > factor * steps.mean())
        if not len(jumps):
            return q, reached, reason
        cut = int(jumps[0]) + 1
        return q[:cut], cut, (f'a step of {steps[jumps[0]]:.3g} rad after pose {cut - 1} is more '
                              f'than jump_threshold {factor:g} x the mean step {steps.mean():.3g}')

    def trajectory(self, q: np.ndarray, request: GetCartesianPath.Request) -> RobotTrajectory:
        """q timed within the velocity and acceleration limits x the request's scaling factors
        (outside (0, 1]: 1, as MoveIt) and the jerk limits, between the points too, and within
        its Cartesian speed limit."""
        q = q[np.concatenate([[True], np.abs(np.diff(q, axis=0)).max(axis=1) > SAME_KNOT])]
        velocity = self.limits.velocity * scaling(request.max_velocity_scaling_factor)
        acceleration = self.limits.acceleration * scaling(request.max_acceleration_scaling_factor)
        speed = None
        if request.max_cartesian_speed > 0.0:
            link = request.cartesian_speed_limited_link or request.link_name or self.links.tip
            speed = CartesianSpeed(np.array([self.link_pose(row, link).position for row in q]),
                                   request.max_cartesian_speed)
        try:
            timing = time_path(q, velocity, acceleration, self.limits.jerk, speed)
        except TimingError as err:
            raise Refusal(MoveItErrorCodes.FAILURE, str(err)) from None
        trajectory = JointTrajectory(joint_names=list(self.joint_names))
        trajectory.header.frame_id = self.problem.base_frame
        for row, t, v, a in zip(q, timing.times, timing.velocities, timing.accelerations):
            seconds, nanoseconds = divmod(int(round(t * 1e9)), 1_000_000_000)
            trajectory.points.append(JointTrajectoryPoint(
                positions=row.tolist(), velocities=v.tolist(), accelerations=a.tolist(),
                time_from_start=Duration(sec=seconds, nanosec=nanoseconds)))
        return RobotTrajectory(joint_trajectory=trajectory)


def scaling(factor: float) -> float:
    """A velocity or acceleration scaling factor: itself in (0, 1], else 1 (MoveIt's rule)."""
    return factor if 0.0 < factor <= 1.0 else 1.0


def fraction(reached: int, ends: list[int], free: bool) -> float:
    """MoveIt's fraction: waypoints passed, plus the share of the next segment passed, over
    the number of waypoints. `ends`: the pose index of each waypoint after the first pose;
    a free start counts its first waypoint (pose 0) as passed."""
    count = len(ends) + (1 if free else 0)
    if reached >= (ends[-1] + 1 if ends else 1):
        return 1.0
    done = 1 if free else 0
    previous = 0
    for end in ends:
        if reached > end:
            done, previous = done + 1, end
            continue
        share = (reached - 1 - previous) / (end - previous)
        return (done + max(share, 0.0)) / count
    return done / count
