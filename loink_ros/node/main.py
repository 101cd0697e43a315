"""Entry point of `ros2 run loink_ros loink_node`."""

import sys
import threading

import rclpy
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from threadpoolctl import threadpool_limits

from loink_ros.node.executors import make_executor
from loink_ros.node.failures import captured_stderr, init_error, startup_error
from loink_ros.node.loink_node import LOInKNode
from loink_ros.node.spinning import StopFlag, ignore_signals, spin_until, stop_on_signals


def main(args: list[str] | None = None) -> int:
    """Run the node until SIGINT or SIGTERM (exit 0); a start-up failure is one line, exit 1."""
    stop = stop_on_signals()
    try:
        with captured_stderr() as said:
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as err:  # noqa: BLE001 - rclpy raises several types here
        return fail(init_error(err, said.text))
    # One BLAS thread: the matrices are tiny, and the executor's threads are the parallelism.
    with threadpool_limits(1):
        try:
            node = LOInKNode()
            services = make_executor(node.settings.executor, node.settings.executor_threads)
        except Exception as err:  # noqa: BLE001 - every start-up failure is one line
            rclpy.try_shutdown()
            return fail(startup_error(err))
        serve(node, services, stop)
    return 0


def fail(reason: str) -> int:
    """Print the one line and give the exit status of a failed start."""
    print(f'loink_node: {reason}', file=sys.stderr)
    return 1


def serve(node: LOInKNode, services: Executor, stop: StopFlag) -> None:
    """Spin until `stop` is set, then finish the callbacks in flight and shut down.

    Services run on `services` (parameter executor) in this thread; the stream's and the
    Cartesian paths' helper nodes each on a single-threaded executor of its own thread, so a
    busy service executor never delays a target, nor a long path the other services
    (docs/NODE.md, Threading: the layout was chosen by measurement).
    """
    services.add_node(node)
    threads = []
    for helper in (node.stream_node, node.paths_node):
        executor = SingleThreadedExecutor()
        executor.add_node(helper)
        threads.append(threading.Thread(target=spin_until, args=(executor, stop), daemon=True))
        threads[-1].start()
    spin_until(services, stop)
    for thread in threads:
        thread.join()
    node.destroy_node()
    rclpy.try_shutdown()
    ignore_signals()


if __name__ == '__main__':
    sys.exit(main())
