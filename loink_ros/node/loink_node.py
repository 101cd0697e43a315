"""The LOInK node: parameters, IK services, streaming, diagnostics and the MoveIt IK service."""

import logging

from rclpy.callback_groups import CallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter

from loink_msgs.srv import GetModelInfo, Sample, Solve, SolvePose
from loink_ros.core.motion.joint_limits import JointLimits, JointLimitsError
from loink_ros.core.motion.online_generator import OnlineGenerator
from loink_ros.node import parameters
from loink_ros.node.command_output import CONTROLLERS, ForwardPositionOutput, TrajectoryOutput
from loink_ros.node.commander import Commander
from loink_ros.node.controller_joints import command_joints, controller_joints, update_rate
from loink_ros.node.diagnostics import Diagnostics
from loink_ros.node.failures import StartupError
from loink_ros.node.ik_services import IKServices
from loink_ros.node.limits_file import node_joint_limits
from loink_ros.node.measured_state import CurrentConfiguration
from loink_ros.node.motion_commander import MotionCommander
from loink_ros.node.parameters import Settings
from loink_ros.node.pose_service import PoseService
from loink_ros.node.pose_streaming import PoseStreamer
from loink_ros.node.pose_targets import PoseLinks, pose_solver_of
from loink_ros.node.request_stats import RequestStats
from loink_ros.node.robot_description import received_description
from loink_ros.node.startup import load_solver
from loink_ros.node.streaming import Streamer
from loink_ros.node.usage import usage_lines

# Seconds between checks for a stale target stream (commander.py).
STALE_CHECK_S = 0.02
# Commands per second to a joint_trajectory_controller when command_rate is 0.
TRAJECTORY_RATE = 100.0
FORWARD_CAVEAT = ('forward_position: the controller applies each command when it takes it up, '
                  'so the arm moves as evenly as the commands arrive; on a loaded machine they do '
                  'not, and the arm steps beyond its limits (docs/HARDWARE.md, Figures). On a '
                  'real arm use command_output:=joint_trajectory')


class LOInKNode(Node):
    """Serves one model; raises StartupError when the model or a parameter is unusable.

    The stream lives on `stream_node`, and the Cartesian path service on `paths_node`:
    helper nodes that main.py spins in executor threads of their own (rclpy executors take
    whole nodes, not callback groups), so that a long path neither delays a target nor the
    other services.
    """

    def __init__(self):
        super().__init__('loink_node')
        self.stream_node = self.helper_node('stream')
        self.paths_node = self.helper_node('paths')
        self.settings: Settings = parameters.declare(self)
        s = self.settings
        description = s.robot_description
        if not description and s.robot_description_topic:
            description = received_description(self, s.robot_description_topic,
                                               s.robot_description_timeout)
        # The solver's own warnings (core: Python logging) reach the ROS log once, below.
        quiet = logging.getLogger('loink_ros.runtime')
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        self.solver, said = load_solver(s, description)
        if said:
            self.get_logger().warning(f'while loading the model: {said}')
        if self.solver.runtime_note:
            log = self.get_logger().info if self.solver.kernel else self.get_logger().warning
            log(self.solver.runtime_note)
        self.add_post_set_parameters_callback(self.on_parameters_set)
        self.stats = RequestStats()
        self.robot = CurrentConfiguration(list(self.solver.problem.joint_names), self.get_clock())
        self.limits, self.limits_reason = self.joint_limits(s)
        # Reentrant: on a multi-threaded executor requests run in parallel; handlers keep no
        # state between calls.
        services = ReentrantCallbackGroup()
        ik = IKServices(self.solver, self.current, self.get_clock(), self.get_logger(),
                        self.stats)
        # One pose solver (None for models of some position axes) serves both services.
        self.pose_solver = pose_solver_of(self.solver)
        poses = PoseService(self.solver, self.pose_solver, self.current, self.get_clock(),
                            self.get_logger(), self.stats)
        names = self.stream_names(s)
        self.commander = self.add_commander(s, names['solution'])
        self.streamer = Streamer(self.stream_node, self.get_logger(), names, self.solver,
                                 self.current, self.robot, self.commander)
        self.pose_streamer = self.add_pose_stream(names, s)
        Diagnostics(self, self.solver.model, self.stats, self.streamer.snapshot,
                    s.diagnostics_period,
                    self.pose_streamer.snapshot if self.pose_streamer else None,
                    self.command_diagnostics)
        # Services last: a client that sees one advertised is answered without a wait.
        self.create_service(Solve, '~/solve', ik.solve, callback_group=services)
        self.create_service(Sample, '~/sample', ik.sample, callback_group=services)
        self.create_service(GetModelInfo, '~/get_model_info', ik.get_model_info,
                            callback_group=services)
        self.create_service(SolvePose, '~/solve_pose', poses.solve_pose, callback_group=services)
        self.add_moveit_service(services)
        paths = self.add_cartesian_path_service()
        self.get_logger().info(f'serving model {self.solver.model.name} '
                               f'({self.solver.model.version}) from {self.solver.model.path}; '
                               'call it with:\n  ' + '\n  '.join(
                                   usage_lines(self, self.solver, s.target_topic,
                                               self.pose_solver is not None,
                                               s.pose_target_topic if self.pose_streamer
                                               else None,
                                               s.cartesian_path_service if paths else None)))

    def joint_limits(self, s: Settings) -> tuple[JointLimits | None, str]:
        """The joint limits (limits_file.py), or None and why for a model without them;
        StartupError for an unusable joint_limits_file."""
        try:
            return node_joint_limits(self.solver.problem, s.joint_limits_file), ''
        except JointLimitsError as err:
            raise StartupError(f'bad parameter joint_limits_file: {err}') from None
        except (ValueError, AttributeError) as err:   # no URDF arm, no velocity limits
            return None, str(err)

    def helper_node(self, role: str) -> Node:
        """A node beside this one (`<name>_<role>`), in the same namespace, no remappings."""
        return Node(f'{self.get_name()}_{role}', namespace=self.get_namespace(),
                    use_global_arguments=False, start_parameter_services=False,
                    enable_rosout=False)

    def add_pose_stream(self, names: dict[str, str], s: Settings) -> PoseStreamer | None:
        """The pose stream, where a pose solver serves the model; StartupError for a
        pose_tip_link not fixed to the tip."""
        if self.pose_solver is None:
            return None
        served = PoseLinks(self.pose_solver.problem).served(False)
        if s.pose_tip_link and s.pose_tip_link not in served:
            raise StartupError(f'bad parameter pose_tip_link: {s.pose_tip_link!r} is not fixed '
                               f'to the tip; these are: {", ".join(served)}')
        try:
            return PoseStreamer(self.stream_node, self.get_logger(), names, self.pose_solver,
                                self.current, self.robot, self.streamer.publisher,
                                self.commander)
        except ValueError as err:    # e.g. a URDF without velocity limits
            self.get_logger().warning(f'the pose stream is off: {err}')
            return None

    def add_commander(self, s: Settings, solution_topic: str) -> Commander | MotionCommander:
        """The streams' commander: the joint_state output's (commander.py), or the motion layer
        and a controller's output (motion_commander.py, command_output.py), with their timers
        on the stream's thread; StartupError, one line, for a controller whose joints are not
        the model's, or limits a controller output cannot do without."""
        if s.command_output == 'joint_state':
            self.command_topic = solution_topic
            limits = None if self.limits is None else self.limits.velocity
            commander = Commander(limits, self.robot, lambda: self.settings.joint_states_max_age,
                                  self.get_logger())
        else:
            commander = self.motion_commander(s)
        self.stream_node.create_timer(STALE_CHECK_S,
                                      lambda: commander.check_stale(self.settings.stream_timeout))
        return commander

    def motion_commander(self, s: Settings) -> MotionCommander:
        if self.limits is None:
            raise StartupError(f'command_output {s.command_output} needs joint limits: '
                               f'{self.limits_reason}')
        try:
            motion = OnlineGenerator(self.limits)
        except JointLimitsError as err:
            raise StartupError(f'command_output {s.command_output} needs velocity, acceleration '
                               f'and jerk limits (parameter joint_limits_file): {err}') from None
        try:
            from loink_ros.node.controller_activity import ControllerActivity
        except ImportError as err:
            raise StartupError(f'command_output {s.command_output} needs controller_manager_msgs '
                               f'(ros2_control): {err}') from None
        default, suffix = CONTROLLERS[s.command_output]
        controller = '/' + (s.controller or default).lstrip('/')
        read = controller_joints(self.stream_node, controller, s.controller_timeout)
        model = list(self.solver.problem.joint_names)
        joints = command_joints(model, list(s.controller_joints), controller, read)
        topic = self.resolve_topic_name(s.command_topic or f'{controller}/{suffix}')
        rate = s.command_rate or self.default_command_rate(s)
        step = 1.0 / rate
        output = (ForwardPositionOutput(self.stream_node, topic, model, joints)
                  if s.command_output == 'forward_position' else
                  TrajectoryOutput(self.stream_node, topic, model, joints, s.command_horizon, step))
        activity = ControllerActivity(self.stream_node, s.controller_manager, controller,
                                      s.controller_check_period)
        commander = MotionCommander(output, motion, self.robot, activity, self.current,
                                    self.get_logger(), step)
        self.stream_node.create_timer(step, commander.tick)
        self.command_topic = topic
        self.get_logger().info(f'stream commands go to {topic} ({s.command_output}, joints '
                               f'{joints}, {rate:g} Hz, limits from {self.limits.source})')
        if s.command_output == 'forward_position':
            self.get_logger().warning(FORWARD_CAVEAT)
        return commander

    def default_command_rate(self, s: Settings) -> float:
        """command_rate 0: the controller manager's update rate for forward_position (its
        commands are applied as they come), TRAJECTORY_RATE for joint_trajectory (it
        interpolates)."""
        if s.command_output == 'joint_trajectory':
            return TRAJECTORY_RATE
        rate = update_rate(self.stream_node, s.controller_manager, s.controller_timeout)
        if rate is None:
            raise StartupError(f'{s.controller_manager} did not answer with its update_rate within '
                               'controller_timeout: give command_rate')
        return rate

    def command_diagnostics(self) -> tuple[dict[str, str], str | None]:
        values, error = self.commander.diagnostics()
        return {'command output': f'{self.settings.command_output} on {self.command_topic}',
                **values}, error

    def stream_names(self, s: Settings) -> dict[str, str]:
        """The streams' topic names, resolved by this node (its namespace and remappings)."""
        return {'target': self.resolve_topic_name(s.target_topic),
                'pose_target': self.resolve_topic_name(s.pose_target_topic),
                'pose_tracking': self.resolve_topic_name(s.pose_tracking_topic),
                'solution': self.resolve_topic_name(s.solution_topic),
                'joint_states': self.resolve_topic_name(s.joint_states_topic)
                if s.joint_states_topic else ''}

    def current(self) -> Settings:
        """The latest parameter snapshot."""
        return self.settings

    def on_parameters_set(self, _changed: list[Parameter]) -> None:
        """Take a new snapshot after a live change (validated by parameters.validate)."""
        self.settings = parameters.read(self)

    def add_moveit_service(self, group: CallbackGroup) -> None:
        """GetPositionIK, when moveit_msgs is installed and the task is a tip position."""
        try:
            from moveit_msgs.srv import GetPositionIK

            from loink_ros.node.moveit_adapter import MoveItIK
        except ImportError:
            self.get_logger().info('moveit_msgs is not installed: GetPositionIK is off')
            return
        try:
            handler = MoveItIK(self.solver, self.pose_solver, self.current, self.get_logger(),
                               self.robot, self.stats)
        except ValueError as err:
            self.get_logger().warning(f'GetPositionIK is off: {err}')
            return
        self.create_service(GetPositionIK, self.settings.moveit_service, handler.compute_ik,
                            callback_group=group)

    def add_cartesian_path_service(self) -> bool:
        """GetCartesianPath, for models that serve full poses, when moveit_msgs has it and the
        limits can time a path, on paths_node under this node's resolved name."""
        if self.pose_solver is None:
            return False
        try:
            from moveit_msgs.srv import GetCartesianPath

            from loink_ros.node.cartesian_service import CartesianPathService
        except ImportError:
            self.get_logger().info('moveit_msgs has no GetCartesianPath: the Cartesian path '
                                   'service is off')
            return False
        if self.limits is None:
            self.get_logger().warning(f'the Cartesian path service is off: {self.limits_reason}')
            return False
        handler = CartesianPathService(self.pose_solver, self.limits, self.current,
                                       self.get_logger(), self.stats, self.robot)
        self.paths_node.create_service(GetCartesianPath,
                                       self.resolve_service_name(self.settings.cartesian_path_service),
                                       handler.compute_cartesian_path)
        return True

    def destroy_node(self) -> None:
        """Destroy the helper nodes too."""
        self.stream_node.destroy_node()
        self.paths_node.destroy_node()
        super().destroy_node()
