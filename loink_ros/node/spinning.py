"""Spinning until SIGINT or SIGTERM, with rclpy's own signal handlers off."""

import signal
import threading

import rclpy
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node

# How often a spin loop looks at the stop flag (s): the delay of a signal's effect.
POLL = 0.1


def stop_on_signals() -> threading.Event:
    """An event that SIGINT and SIGTERM set (rclpy's handlers would shut the context down
    under a spinning executor: init rclpy with SignalHandlerOptions.NO)."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    return stop


def spin_until(executor: Executor, stop: threading.Event) -> None:
    """Spin in the calling thread; the context stays valid until every callback is done."""
    while not stop.is_set():
        executor.spin_once(timeout_sec=POLL)
    executor.shutdown()


def serve_until(node: Node, stop: threading.Event, executor: Executor | None = None) -> None:
    """A standalone process's one node: spun on `executor` (a SingleThreadedExecutor unless
    given) until `stop`, then destroyed, and rclpy shut down."""
    executor = executor or SingleThreadedExecutor()
    executor.add_node(node)
    spin_until(executor, stop)
    node.destroy_node()
    rclpy.try_shutdown()
