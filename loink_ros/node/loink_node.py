"""The LOInK node: parameters, IK services, streaming, diagnostics and the MoveIt IK service."""

import logging

from rclpy.callback_groups import CallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter

from loink_msgs.srv import GetModelInfo, Sample, Solve, SolvePose
from loink_ros.node import parameters
from loink_ros.node.diagnostics import Diagnostics
from loink_ros.node.failures import StartupError
from loink_ros.node.ik_services import IKServices
from loink_ros.node.parameters import Settings
from loink_ros.node.pose_service import PoseService
from loink_ros.node.pose_streaming import PoseStreamer
from loink_ros.node.pose_targets import PoseLinks, pose_solver_of
from loink_ros.node.request_stats import RequestStats
from loink_ros.node.robot_description import received_description
from loink_ros.node.startup import load_solver
from loink_ros.node.streaming import CurrentConfiguration, Streamer
from loink_ros.node.usage import usage_lines


class LOInKNode(Node):
    """Serves one model; raises StartupError when the model or a parameter is unusable.

    The stream lives on `stream_node`, a helper node that main.py spins in its own
    executor thread (rclpy executors take whole nodes, not callback groups).
    """

    def __init__(self):
        super().__init__('loink_node')
        self.stream_node = self.helper_node()
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
        self.robot = CurrentConfiguration(list(self.solver.problem.joint_names))
        # Reentrant: on a multi-threaded executor requests run in parallel; handlers keep no
        # state between calls.
        services = ReentrantCallbackGroup()
        ik = IKServices(self.solver, self.current, self.get_clock(), self.get_logger(),
                        self.stats)
        self.create_service(Solve, '~/solve', ik.solve, callback_group=services)
        self.create_service(Sample, '~/sample', ik.sample, callback_group=services)
        self.create_service(GetModelInfo, '~/get_model_info', ik.get_model_info,
                            callback_group=services)
        # One pose solver (None for models of some position axes) serves both services.
        self.pose_solver = pose_solver_of(self.solver)
        poses = PoseService(self.solver, self.pose_solver, self.current, self.get_clock(),
                            self.get_logger(), self.stats)
        self.create_service(SolvePose, '~/solve_pose', poses.solve_pose, callback_group=services)
        names = self.stream_names(s)
        self.streamer = Streamer(self.stream_node, self.get_logger(), names, self.solver,
                                 self.current, self.robot)
        self.pose_streamer = self.add_pose_stream(names, s)
        Diagnostics(self, self.solver.model, self.stats, self.streamer.snapshot,
                    s.diagnostics_period,
                    self.pose_streamer.snapshot if self.pose_streamer else None)
        self.add_moveit_service(services)
        self.get_logger().info(f'serving model {self.solver.model.name} '
                               f'({self.solver.model.version}) from {self.solver.model.path}; '
                               'call it with:\n  ' + '\n  '.join(
                                   usage_lines(self, self.solver, s.target_topic,
                                               self.pose_solver is not None,
                                               s.pose_target_topic if self.pose_streamer
                                               else None)))

    def helper_node(self) -> Node:
        """A node beside this one for the stream, in the same namespace, no remappings."""
        return Node(f'{self.get_name()}_stream', namespace=self.get_namespace(),
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
                                self.current, self.robot, self.streamer.publisher)
        except ValueError as err:    # e.g. a URDF without velocity limits
            self.get_logger().warning(f'the pose stream is off: {err}')
            return None

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

    def destroy_node(self) -> None:
        """Destroy the stream's helper node too."""
        self.stream_node.destroy_node()
        super().destroy_node()
