"""A private rclpy context with a spinning executor, for calling services from threads."""

import threading
import time
from concurrent.futures import Future as ThreadFuture

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import SetParameters
from rclpy.client import Client
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
        self.clients: dict[str, Client] = {}
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

    def first_call(self, client, request, timeout: float = 10.0, resend: float = 0.5,
                   resends: int = 3):
        """The first response from a just-discovered service. DDS can match the request path
        before the reply path, and a reply sent in between is lost, so the request is resent
        `resends` times, `resend` s after the first and twice as long after each; the first reply
        to any send is the answer. TimeoutError when none comes within `timeout`."""
        done: ThreadFuture = ThreadFuture()

        def answered(future) -> None:
            if not done.done():
                done.set_result(future.result())
        deadline = time.monotonic() + timeout
        sent = []
        try:
            for attempt in range(resends + 1):
                sent.append(client.call_async(request))
                sent[-1].add_done_callback(answered)
                wait = resend * 2 ** attempt if attempt < resends else timeout
                try:
                    return done.result(timeout=min(wait, max(deadline - time.monotonic(), 0.0)))
                except TimeoutError:
                    if time.monotonic() >= deadline:
                        raise
        finally:
            for future in sent:
                if not future.done():
                    client.remove_pending_request(future)

    def request(self, srv_type, service: str, request, timeout: float = 10.0):
        """Call `service` through one client kept per name. A new client waits for the service
        and resends its first request (first_call), so only idempotent requests belong here."""
        client = self.clients.get(service)
        if client is not None:
            return self.call(client, request, timeout)
        client = self.node.create_client(srv_type, service)
        if not client.wait_for_service(timeout_sec=timeout):
            self.node.destroy_client(client)
            raise TimeoutError(f'{service} did not appear')
        try:
            response = self.first_call(client, request, timeout)
        except TimeoutError:
            self.node.destroy_client(client)
            raise
        self.clients[service] = client
        return response

    def set_parameters(self, node: str, timeout: float = 10.0,
                       **values) -> list[SetParametersResult]:
        """Set parameters of the node named `node` (full name) one by one, as `ros2 param set`."""
        request = SetParameters.Request(parameters=[
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()])
        return list(self.request(SetParameters, f'{node}/set_parameters', request, timeout).results)

    def close(self) -> None:
        """Stop spinning and release the context."""
        self.stop.set()
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
