"""The executors the node can serve its services on (parameter `executor`, docs/NODE.md)."""

from rclpy.executors import Executor, MultiThreadedExecutor, SingleThreadedExecutor

from loink_ros.node.failures import StartupError

EXECUTORS = ('single_threaded', 'multi_threaded', 'events')


def make_executor(kind: str, threads: int) -> Executor:
    """An executor of `kind` (EXECUTORS); `threads` counts for multi_threaded only."""
    if kind == 'multi_threaded':
        return MultiThreadedExecutor(num_threads=threads)
    if kind == 'single_threaded':
        return SingleThreadedExecutor()
    if kind != 'events':
        raise ValueError(f'unknown executor {kind!r}; use one of {", ".join(EXECUTORS)}')
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        raise StartupError(
            'executor events needs rclpy.experimental.EventsExecutor (ROS 2 Kilted and '
            'newer); this rclpy has none: use multi_threaded or single_threaded') from None
    return EventsExecutor()
