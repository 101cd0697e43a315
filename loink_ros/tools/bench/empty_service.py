"""The floor of `loink bench node`: a real rclpy node whose services answer at once.

It serves ~/solve (loink_msgs/srv/Solve) and, where moveit_msgs imports, ~/get_position_ik
(GetPositionIK), with handlers that return the empty response, on the executor loink_node
would use (parameters executor and executor_threads: node/executors.py) with a reentrant
group as loink_node serves its own: a round trip to it is what DDS and rclpy cost with no
work done. Run as `python -m loink_ros.tools.bench.empty_service --ros-args -r __ns:=NS
[-p executor:=KIND] [-p executor_threads:=N]`; SIGINT or SIGTERM stops it with exit 0.
"""

import sys

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from loink_msgs.srv import Solve
from loink_ros.node.executors import make_executor
from loink_ros.node.spinning import serve_until, stop_on_signals
from loink_ros.tools.node_process import NodeProcess

NODE_NAME = 'loink_floor'


def answer_empty(_request, response):
    """The response as constructed: no work."""
    return response


class EmptyServices(Node):
    """~/solve and ~/get_position_ik with empty answers."""

    def __init__(self):
        super().__init__(NODE_NAME)
        self.kind = self.declare_parameter('executor', 'single_threaded').value
        self.threads = self.declare_parameter('executor_threads', 4).value
        group = ReentrantCallbackGroup()
        self.create_service(Solve, '~/solve', answer_empty, callback_group=group)
        try:
            from moveit_msgs.srv import GetPositionIK
        except ImportError:
            return
        self.create_service(GetPositionIK, '~/get_position_ik', answer_empty,
                            callback_group=group)


def main(args: list[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM, then shut down; exit 0."""
    stop = stop_on_signals()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = EmptyServices()
    serve_until(node, stop, make_executor(node.kind, node.threads))
    return 0


def empty_service_process(namespace: str, executor: str = 'single_threaded',
                          executor_threads: int = 4) -> NodeProcess:
    """This module as a background process in `namespace`; its services at `.prefix`."""
    return NodeProcess(namespace, {'executor': executor, 'executor_threads': executor_threads},
                       command=[sys.executable, '-m', 'loink_ros.tools.bench.empty_service'],
                       node_name=NODE_NAME)


if __name__ == '__main__':
    sys.exit(main())
