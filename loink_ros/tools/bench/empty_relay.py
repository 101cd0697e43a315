"""The floor of `loink bench hardware`: a real rclpy node that relays each pose target to a
trajectory command at once, with no IK.

It takes geometry_msgs/PoseStamped on ~/target_pose (the pose stream's QoS) and publishes a
one-point trajectory_msgs/JointTrajectory on ~/commands (the command output's QoS), the
target's stamp copied into it: what DDS and rclpy cost a target's way to a controller with
no work done. Run as `python -m loink_ros.tools.bench.empty_relay --ros-args -r __ns:=NS`;
SIGINT or SIGTERM stops it with exit 0.
"""

import sys

import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from loink_ros.node.command_output import COMMAND_QOS
from loink_ros.node.spinning import serve_until, stop_on_signals
from loink_ros.node.streaming import TARGET_QOS
from loink_ros.tools.node_process import NodeProcess

NODE_NAME = 'loink_relay'


class EmptyRelay(Node):
    def __init__(self):
        super().__init__(NODE_NAME)
        self.commands = self.create_publisher(JointTrajectory, '~/commands', COMMAND_QOS)
        self.create_subscription(PoseStamped, '~/target_pose', self.relay, TARGET_QOS)

    def relay(self, msg: PoseStamped) -> None:
        command = JointTrajectory(joint_names=['joint'], points=[JointTrajectoryPoint(positions=[0.0])])
        command.header.stamp = msg.header.stamp
        self.commands.publish(command)


def main(args: list[str] | None = None) -> int:
    stop = stop_on_signals()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    serve_until(EmptyRelay(), stop)
    return 0


def empty_relay_process(namespace: str) -> NodeProcess:
    """This module as a background process in `namespace`; its topics under `.prefix`."""
    return NodeProcess(namespace, command=[sys.executable, '-m', 'loink_ros.tools.bench.empty_relay'],
                       node_name=NODE_NAME)


if __name__ == '__main__':
    sys.exit(main())
