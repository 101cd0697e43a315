"""A private rclpy context with a spinning executor, for calling services from threads."""

import threading
import time
from concurrent.futures import Future as ThreadFuture

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import SetParameters
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from loink_ros.node.spinning import spin_until


def client_executor(context: Context):
    """rclpy's EventsExecutor where there is one (Kilted and newer: the least overhead per
    call, so the clients are not what a bench measures), else a SingleThreadedExecutor."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


class RosCalls:
    """One client node spun in a background thread; call() blocks the calling thread only."""

    def __init__(self, name: str):
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = Node(name, context=self.context)
        self.executor = client_executor(self.context)
        self.executor.add_node(self.node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=spin_until, args=(self.executor, self.stop),
                                       daemon=True)
        self.thread.start()

    def call(self, client, request, timeout: float = 10.0):
        """The response, or TimeoutError when none comes."""
        done: ThreadFuture = ThreadFuture()
        future = client.call_async(request)
        future.add_done_callback(lambda f: done.set_result(f.result()))
        try:
            return done.result(timeout=timeout)
        except TimeoutError:
            client.remove_pending_request(future)
            raise

    def first_call(self, client, request, timeout: float = 10.0, resend: float = 0.5):
        """The first response from a just-discovered service: the request is resent every
        `resend` s, since DDS can match the request path before the reply path, and a reply
        sent in between is lost. TimeoutError when none comes within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.call(client, request, min(resend, max(deadline - time.monotonic(), 0.0)))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise

    def set_parameters(self, node: str, timeout: float = 10.0,
                       **values) -> list[SetParametersResult]:
        """Set parameters of the node named `node` (full name) one by one, as `ros2 param set`."""
        client = self.node.create_client(SetParameters, f'{node}/set_parameters')
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f'{node}/set_parameters did not appear')
            request = SetParameters.Request(parameters=[
                Parameter(name, value=value).to_parameter_msg() for name, value in values.items()])
            return list(self.call(client, request, timeout).results)
        finally:
            self.node.destroy_client(client)

    def close(self) -> None:
        """Stop spinning and release the context."""
        self.stop.set()
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
