"""The LOInK node: parameters, IK services, streaming and the MoveIt IK service."""

from loink_msgs.srv import GetModelInfo, Sample, Solve
from rclpy.callback_groups import CallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter

from loink_ros.node import parameters
from loink_ros.node.ik_services import IKServices
from loink_ros.node.parameters import Settings
from loink_ros.node.startup import load_solver
from loink_ros.node.streaming import Streamer
from loink_ros.node.usage import usage_lines


class LOInKNode(Node):
    """Serves one model; raises StartupError when the model or a parameter is unusable."""

    def __init__(self, **kwargs):
        super().__init__('loink_node', **kwargs)
        self.settings: Settings = parameters.declare(self)
        s = self.settings
        self.solver = load_solver(s.model, s.urdf, s.inverse_tolerance,
                                  s.inverse_max_iterations, s.bounds_margin)
        self.add_post_set_parameters_callback(self.on_parameters_set)
        # Reentrant: requests are served in parallel; handlers keep no state between calls.
        services = ReentrantCallbackGroup()
        ik = IKServices(self.solver, self.current, self.get_clock(), self.get_logger())
        self.create_service(Solve, '~/solve', ik.solve, callback_group=services)
        self.create_service(Sample, '~/sample', ik.sample, callback_group=services)
        self.create_service(GetModelInfo, '~/get_model_info', ik.get_model_info,
                            callback_group=services)
        self.streamer = Streamer(self, self.solver, self.current)
        self.add_moveit_service(services)
        self.get_logger().info(f'serving model {self.solver.model.name} '
                               f'({self.solver.model.version}) from {self.solver.model.path}; '
                               'call it with:\n  ' + '\n  '.join(
                                   usage_lines(self, self.solver, s.target_topic)))

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
            handler = MoveItIK(self.solver, self.current, self.get_logger())
        except ValueError as err:
            self.get_logger().warning(f'GetPositionIK is off: {err}')
            return
        self.create_service(GetPositionIK, self.settings.moveit_service, handler.compute_ik,
                            callback_group=group)
