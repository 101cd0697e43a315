"""Where the motion's commands go: the controller's message, in the controller's joint order.

- forward_position: std_msgs/Float64MultiArray, for forward_command_controller /
  position_controllers/JointGroupPositionController (`<controller>/commands`): the motion's
  position now, at command_rate (the controller's update rate);
- joint_trajectory: trajectory_msgs/JointTrajectory, for joint_trajectory_controller
  (`<controller>/joint_trajectory`): the motion's states (positions, velocities,
  accelerations) every 1 / command_rate for command_horizon ahead, then a stop to rest
  within the limits. With all three given, the controller interpolates each segment with a
  quintic polynomial through both ends' states, which follows the jerk-limited motion
  closely; the last point is at rest, so the controller takes it without
  allow_nonzero_velocity_at_trajectory_end, and a stream that stops (or a node that dies)
  leaves the arm braking within the limits instead of halting at a point.

The joint_state output (solution_topic only) sends no controller message.
"""

import time

from builtin_interfaces.msg import Duration
from rclpy.duration import Duration as RosDuration
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from loink_ros.core.motion.online_generator import OnlineGenerator

OUTPUTS = ('joint_state', 'forward_position', 'joint_trajectory')
# The controller each output drives unless `controller` names another, and its input topic.
CONTROLLERS = {'forward_position': ('/forward_position_controller', 'commands'),
               'joint_trajectory': ('/joint_trajectory_controller', 'joint_trajectory')}
# Reliable, keep-last 1: the controller wants the newest command, never a backlog.
COMMAND_QOS = 1
# Points of a joint_trajectory command's stop to rest.
STOP_POINTS = 8


class CommandOutput:
    """Publishes the motion (model joint order in, the controller's order out)."""

    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str],
                 message_type):
        self.topic, self.joints = topic, list(joints)
        self.order = [model_joints.index(j) for j in joints]
        self.publisher = node.create_publisher(message_type, topic, COMMAND_QOS)

    def send(self, motion: OnlineGenerator, now: float) -> None:
        """Command the motion as of `now` (time.monotonic())."""
        raise NotImplementedError


class ForwardPositionOutput(CommandOutput):
    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str]):
        super().__init__(node, topic, model_joints, joints, Float64MultiArray)

    def send(self, motion: OnlineGenerator, now: float) -> None:
        self.publisher.publish(Float64MultiArray(data=motion.state(now).position[self.order].tolist()))


class TrajectoryOutput(CommandOutput):
    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str],
                 horizon: float, step: float):
        super().__init__(node, topic, model_joints, joints, JointTrajectory)
        self.clock, self.horizon, self.step = node.get_clock(), horizon, step

    def send(self, motion: OnlineGenerator, now: float) -> None:
        samples = motion.ahead(now, self.horizon, self.step, STOP_POINTS)
        # Stamped at `now` on the ROS clock: each point is due at its time on the motion,
        # however late the controller takes the message up.
        stamp = self.clock.now() - RosDuration(seconds=time.monotonic() - now)
        message = JointTrajectory(joint_names=self.joints)
        message.header.stamp = stamp.to_msg()
        order = self.order
        message.points = [JointTrajectoryPoint(positions=s.position[order].tolist(),
                                               velocities=s.velocity[order].tolist(),
                                               accelerations=s.acceleration[order].tolist(),
                                               time_from_start=duration(offset))
                          for offset, s in zip(samples.offsets, samples.states)]
        self.publisher.publish(message)


def duration(seconds: float) -> Duration:
    nanoseconds = max(0, round(seconds * 1e9))
    return Duration(sec=nanoseconds // 10**9, nanosec=nanoseconds % 10**9)
