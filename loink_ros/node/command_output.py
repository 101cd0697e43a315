"""Where a stream's commands go: the controller's message, in the controller's joint order.

- joint_state: sensor_msgs/JointState on solution_topic only (a relay's input, as before);
- forward_position: std_msgs/Float64MultiArray, for forward_command_controller /
  position_controllers/JointGroupPositionController (`<controller>/commands`);
- joint_trajectory: trajectory_msgs/JointTrajectory, for joint_trajectory_controller
  (`<controller>/joint_trajectory`): one point, the command, due a short lead from now
  (commander.py), positions only: the controller interpolates linearly from where it is, so
  the robot moves no faster than the commands do, and a stream that stops leaves it holding
  its last point (with velocities it fits cubic splines that overshoot the commands' speed,
  and takes them only with allow_nonzero_velocity_at_trajectory_end).
"""

import time

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.duration import Duration as RosDuration
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

OUTPUTS = ('joint_state', 'forward_position', 'joint_trajectory')
# The controller each output drives unless `controller` names another, and its input topic.
CONTROLLERS = {'forward_position': ('/forward_position_controller', 'commands'),
               'joint_trajectory': ('/joint_trajectory_controller', 'joint_trajectory')}
# Reliable, keep-last 1: the controller wants the newest command, never a backlog.
COMMAND_QOS = 1


class CommandOutput:
    """Publishes commands (model joint order in, the controller's order out). `interpolated`:
    the controller moves to each command by its due time (commander.py), rather than at once.
    A stale stream sends nothing more: the controller keeps its last command."""

    interpolated = False

    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str],
                 message_type):
        self.topic, self.joints = topic, list(joints)
        self.order = np.array([model_joints.index(j) for j in joints])
        self.publisher = node.create_publisher(message_type, topic, COMMAND_QOS)

    def send(self, q: np.ndarray, computed: float, due: float) -> None:
        """Command configuration q (model order), computed at `computed` and due at `due`
        (time.monotonic())."""
        raise NotImplementedError


class ForwardPositionOutput(CommandOutput):
    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str]):
        super().__init__(node, topic, model_joints, joints, Float64MultiArray)

    def send(self, q: np.ndarray, computed: float, due: float) -> None:
        self.publisher.publish(Float64MultiArray(data=q[self.order].tolist()))


class TrajectoryOutput(CommandOutput):
    interpolated = True

    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str]):
        super().__init__(node, topic, model_joints, joints, JointTrajectory)
        self.clock = node.get_clock()

    def send(self, q: np.ndarray, computed: float, due: float) -> None:
        # Stamped when it was computed, the point due after that: at `due` however late the
        # controller takes the message up (with a zero stamp it would count from then).
        stamp = self.clock.now() - RosDuration(seconds=time.monotonic() - computed)
        point = JointTrajectoryPoint(positions=q[self.order].tolist(),
                                     time_from_start=duration(due - computed))
        message = JointTrajectory(joint_names=self.joints, points=[point])
        message.header.stamp = stamp.to_msg()
        self.publisher.publish(message)


def duration(seconds: float) -> Duration:
    nanoseconds = max(0, round(seconds * 1e9))
    return Duration(sec=nanoseconds // 10**9, nanosec=nanoseconds % 10**9)
