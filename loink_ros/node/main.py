"""Entry point of `ros2 run loink_ros loink_node`."""

import sys
from contextlib import suppress

import rclpy
from rclpy.exceptions import NameValidationException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from threadpoolctl import threadpool_limits

from loink_ros.node.loink_node import LOInKNode
from loink_ros.node.startup import StartupError


def main(args: list[str] | None = None) -> int:
    """Run the node until shutdown; a start-up failure is one line on stderr and exit 1."""
    rclpy.init(args=args)
    # One BLAS thread: the matrices are tiny, and the executor's threads are the parallelism.
    with threadpool_limits(1):
        try:
            node = LOInKNode()
        except (StartupError, NameValidationException) as err:
            # A bad name's message is three lines: the reason, the name, a caret under it.
            reason = ' '.join(line.strip() for line in str(err).splitlines()[:2])
            print(f'loink_node: {reason}', file=sys.stderr)
            rclpy.try_shutdown()
            return 1
        executor = MultiThreadedExecutor(num_threads=node.settings.executor_threads)
        executor.add_node(node)
        try:
            executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            with suppress(KeyboardInterrupt):   # a second Ctrl-C during the clean-up
                executor.shutdown()
                node.destroy_node()
            rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
