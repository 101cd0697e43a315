"""Spinning until SIGINT or SIGTERM, with rclpy's own signal handlers off."""

import signal
import sys
from collections.abc import Callable

import rclpy
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node

# How often a spin loop looks at the stop flag (s): the delay of a signal's effect.
POLL = 0.1


class StopFlag:
    """Set once to stop: a plain attribute, no lock. A signal handler that takes a lock
    (threading.Event.set) deadlocks when a second signal runs it again inside the first one
    (SIGINT then SIGTERM, as ros2 launch or a dying parent sends them): a node hung so."""

    def __init__(self):
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


def stop_on_signals() -> StopFlag:
    """A flag that SIGINT and SIGTERM set (rclpy's handlers would shut the context down
    under a spinning executor: init rclpy with SignalHandlerOptions.NO)."""
    stop = StopFlag()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    return stop


def ignore_signals() -> None:
    """Once stopped, from the main thread: further SIGINT and SIGTERM are ignored. Python
    restores the default action of a signal it handled as it exits, and a second signal
    then ended a clean stop with -15."""
    sys.unraisablehook = _without_ignored_signal_reports(sys.unraisablehook)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)


def _without_ignored_signal_reports(hook: Callable) -> Callable:
    """`hook`, silent on the report of a signal caught just before it was ignored: Python
    prints it as 'OSError: Signal 2 ignored due to race condition' with a traceback
    (seen under a burst of signals), and ignoring it is what was asked."""
    ignored = {f'Signal {int(number)} ignored due to race condition'
               for number in (signal.SIGINT, signal.SIGTERM)}

    def report(unraisable) -> None:
        if not (isinstance(unraisable.exc_value, OSError) and str(unraisable.exc_value) in ignored):
            hook(unraisable)
    return report


def spin_until(executor: Executor, stop: StopFlag) -> None:
    """Spin in the calling thread; the context stays valid until every callback is done."""
    while not stop.is_set():
        executor.spin_once(timeout_sec=POLL)
    executor.shutdown()


def serve_until(node: Node, stop: StopFlag, executor: Executor | None = None) -> None:
    """A standalone process's one node: spun on `executor` (a SingleThreadedExecutor unless
    given) until `stop`, then destroyed, and rclpy shut down."""
    executor = executor or SingleThreadedExecutor()
    executor.add_node(node)
    spin_until(executor, stop)
    node.destroy_node()
    rclpy.try_shutdown()
    ignore_signals()
