"""Where the motion's commands go: the controller's message, in the controller's joint order.

- forward_position: std_msgs/Float64MultiArray, for forward_command_controller /
  position_controllers/JointGroupPositionController (`<controller>/commands`): the motion's
  position as the command leaves, at command_rate (the controller's update rate);
- joint_trajectory: trajectory_msgs/JointTrajectory, for joint_trajectory_controller
  (`<controller>/joint_trajectory`): the motion's states (positions, velocities,
  accelerations) every 1 / command_rate and at every change of a joint's jerk for
  command_horizon ahead, then a stop to rest within the limits. With all three given, the
  controller interpolates each segment with the quintic through both ends' states, which
  between two jerk changes is the motion itself (each joint moves by a cubic there), so the
  controller's own interpolation keeps the limits; the last point is at rest, so the
  controller takes it without
  allow_nonzero_velocity_at_trajectory_end, and a stream that stops (or a node that dies)
  leaves the arm braking within the limits instead of halting at a point.

The joint_state output (solution_topic only) sends no controller message.
"""

import time
from collections import deque

from builtin_interfaces.msg import Duration
from rclpy.node import Node
from rclpy.time import Time
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from loink_ros.core.motion.online_generator import OnlineGenerator

OUTPUTS = ('joint_state', 'forward_position', 'joint_trajectory')
# The controller each output drives unless `controller` names another, and its input topic.
CONTROLLERS = {'forward_position': ('/forward_position_controller', 'commands'),
               'joint_trajectory': ('/joint_trajectory_controller', 'joint_trajectory')}
# Reliable, keep-last 1: the controller wants the newest command, never a backlog.
COMMAND_QOS = 1
# Readings of the ROS clock against the monotonic one kept (one per command).
CLOCK_READINGS = 100


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
        # Sampled as it leaves: a forward command carries no time, and the tick may have waited
        # for the interpreter since `now` (its change of motion lies command_lead ahead).
        message = Float64MultiArray()
        message.data = motion.state(max(now, time.monotonic())).position[self.order].tolist()
        self.publisher.publish(message)


class TrajectoryOutput(CommandOutput):
    def __init__(self, node: Node, topic: str, model_joints: list[str], joints: list[str],
                 horizon: float, step: float):
        super().__init__(node, topic, model_joints, joints, JointTrajectory)
        self.clock, self.horizon, self.step = node.get_clock(), horizon, step
        self.offsets: deque[int] = deque(maxlen=CLOCK_READINGS)

    def send(self, motion: OnlineGenerator, now: float) -> None:
        samples = motion.ahead(now, self.horizon, self.step)
        # Stamped at `now` on the ROS clock: each point is due at its time on the motion,
        # however late the controller takes the message up.
        message = JointTrajectory(joint_names=self.joints)
        message.header.stamp = Time(nanoseconds=round(now * 1e9) + self.clock_offset(),
                                    clock_type=self.clock.clock_type).to_msg()
        order = self.order
        message.points = [JointTrajectoryPoint(positions=s.position[order].tolist(),
                                               velocities=s.velocity[order].tolist(),
                                               accelerations=s.acceleration[order].tolist(),
                                               time_from_start=duration(offset))
                          for offset, s in zip(samples.offsets, samples.states)]
        self.publisher.publish(message)


    def clock_offset(self) -> int:
        """The ROS clock minus time.monotonic(), in ns. Read in that order, a reading falls
        short of it by the time between the two reads (another thread may hold the
        interpreter meanwhile): the largest of the recent readings is the closest."""
        ros = self.clock.now().nanoseconds
        self.offsets.append(ros - time.monotonic_ns())
        return max(self.offsets)


def duration(seconds: float) -> Duration:
    nanoseconds = max(0, round(seconds * 1e9))
    return Duration(sec=nanoseconds // 10**9, nanosec=nanoseconds % 10**9)
