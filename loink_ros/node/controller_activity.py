"""Whether the controller the node commands is active, from the controller manager's
list_controllers, polled: nothing is sent to a controller that is not, and the motion starts
again from the measured state when it becomes active (a spawner, switch_controller, or
another tool switching controllers while a stream runs)."""

import threading
import time

from rclpy.node import Node

# A list_controllers call unanswered this long leaves the state unknown (nothing is sent).
REPLY_TIMEOUT_S = 1.0


class ControllerActivity:
    """The controller's state as list_controllers last said it ('active', 'inactive', ...,
    'not loaded', or 'unknown: why'), and how many times it has become active."""

    def __init__(self, node: Node, controller_manager: str, controller: str, period: float):
        from controller_manager_msgs.srv import ListControllers
        self.request = ListControllers.Request()
        self.service = f'{controller_manager.rstrip("/")}/list_controllers'
        self.client = node.create_client(ListControllers, self.service)
        self.name = controller.rstrip('/').rsplit('/', 1)[-1]
        self.state = f'unknown: no answer from {self.service} yet'
        self.activations = 0
        self.pending, self.sent = None, 0.0
        self.lock = threading.Lock()
        node.create_timer(period, self.poll)

    @property
    def active(self) -> bool:
        return self.state == 'active'

    def poll(self) -> None:
        """Ask again, unless a call is on its way (then time it out)."""
        if self.pending is not None:
            if time.monotonic() - self.sent > REPLY_TIMEOUT_S:
                self.client.remove_pending_request(self.pending)
                self.pending = None
                self.set(f'unknown: {self.service} did not answer within {REPLY_TIMEOUT_S:g} s')
            return
        if not self.client.service_is_ready():
            self.set(f'unknown: {self.service} is not available')
            return
        self.sent = time.monotonic()
        self.pending = self.client.call_async(self.request)
        self.pending.add_done_callback(self.on_reply)

    def on_reply(self, future) -> None:
        self.pending = None
        reply = future.result()
        if reply is None:
            self.set(f'unknown: {self.service} failed')
            return
        states = {c.name: c.state for c in reply.controller}
        self.set(states.get(self.name, 'not loaded'))

    def set(self, state: str) -> None:
        with self.lock:
            if state == 'active' and self.state != 'active':
                self.activations += 1
            self.state = state
