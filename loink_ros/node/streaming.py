"""Streaming IK: TaskTarget in, JointState out, one per target, through the core Tracker.

QoS: targets arrive reliable, keep-last 10 (the default of rclpy/rclcpp publishers and of
`ros2 topic pub`): no target of a default publisher is lost and a short solver stall is
absorbed; best-effort publishers do not match it. Solutions go out reliable, keep-last 10,
which both reliable and best-effort subscribers accept. Joint states are read best-effort
(sensor data QoS), which matches every publisher; only the latest one matters.
"""

import time
from collections.abc import Callable

import numpy as np
from loink_msgs.msg import TaskTarget
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState

from loink_ros.core.runtime.errors import SolverError
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.core.runtime.tracking import Tracker
from loink_ros.node.conversions import bounded, is_base_frame, joint_state
from loink_ros.node.parameters import Settings

STREAM_QOS = QoSProfile(depth=10)
# Seconds between repeats of the same log line of a noisy stream.
LOG_THROTTLE = 1.0


class Streamer:
    """Follows a target stream; a gap over stream_timeout restarts from the robot's state."""

    def __init__(self, node: Node, solver: LOInKSolver, settings: Callable[[], Settings]):
        self.logger, self.settings = node.get_logger(), settings
        self.joint_names = list(solver.problem.joint_names)
        self.base_frame = solver.model.problem['base_frame']
        self.tracker = Tracker(solver)
        self.last_target: float | None = None   # monotonic time of the last solved target
        self.robot = CurrentConfiguration(self.joint_names)
        current = settings()
        group = MutuallyExclusiveCallbackGroup()  # one stream: targets are solved in order
        self.publisher = node.create_publisher(JointState, current.solution_topic, STREAM_QOS)
        node.create_subscription(TaskTarget, current.target_topic, self.on_target, STREAM_QOS,
                                 callback_group=group)
        if current.joint_states_topic:
            node.create_subscription(JointState, current.joint_states_topic, self.robot.update,
                                     qos_profile_sensor_data,
                                     callback_group=MutuallyExclusiveCallbackGroup())

    def on_target(self, target: TaskTarget) -> None:
        """Solve one target and publish it with the target's stamp; drop bad targets."""
        frame = target.header.frame_id
        if not is_base_frame(frame, self.base_frame):
            self.logger.warning(f'dropped target in frame {frame!r}: no transforms here, '
                                f'send targets in {self.base_frame!r}',
                                throttle_duration_sec=LOG_THROTTLE)
            return
        try:
            self.publisher.publish(self.step(target))
        except SolverError as err:
            self.logger.warning(f'dropped target: {err}', throttle_duration_sec=LOG_THROTTLE)
        except Exception as err:  # noqa: BLE001 - a bug must not end the stream
            self.last_target = None   # the tracker's state is suspect: restart
            self.logger.error(f'dropped target: {type(err).__name__}: {err}',
                              throttle_duration_sec=LOG_THROTTLE)

    def step(self, target: TaskTarget) -> JointState:
        """The next solution of the stream."""
        settings, now = self.settings(), time.monotonic()
        if self.last_target is None or now - self.last_target > settings.stream_timeout:
            self.tracker.reset(self.robot.positions)
        self.tracker.smoothing, self.tracker.refine_answer = settings.smoothing, settings.refine
        solution = self.tracker.step(bounded(target.task, 'task'))
        self.last_target = now
        if solution.task_error > settings.task_tolerance:
            self.logger.warning(f'streamed solution misses its target by {solution.task_error:.3g}'
                                f' (task_tolerance {settings.task_tolerance:g})',
                                throttle_duration_sec=LOG_THROTTLE)
        return joint_state(self.joint_names, solution.q, target.header.stamp)


class CurrentConfiguration:
    """The latest positions of the model's joints from /joint_states, once all are known."""

    def __init__(self, joint_names: list[str]):
        self.index = {name: i for i, name in enumerate(joint_names)}
        self.known = np.zeros(len(joint_names), dtype=bool)
        self.values = np.zeros(len(joint_names))
        self.positions: np.ndarray | None = None

    def update(self, msg: JointState) -> None:
        """Merge one message (robots may split their joints over several publishers)."""
        if len(msg.name) != len(msg.position):
            return
        values = self.values.copy()
        for name, position in zip(msg.name, msg.position):
            i = self.index.get(name)
            if i is not None and np.isfinite(position):
                values[i], self.known[i] = position, True
        self.values = values
        if self.known.all():
            self.positions = values  # one assignment: readers see a whole configuration
