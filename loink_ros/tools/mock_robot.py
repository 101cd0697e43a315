"""A robot on a desk for the hardware tests and bench: `ros2 launch loink_ros
loink_hardware.launch.py mock_hardware:=true` (ros2_control_node on mock hardware, the
spawner, loink_node streaming to the controller) in a process group of its own, and the
test's side of it (RobotClient): /joint_states and the controller's commands recorded in the
model's joint order, /diagnostics, controllers switched through the controller manager, the
robot moved by the test itself, targets streamed to loink_node."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from loink_ros.node.command_output import duration
from loink_ros.tools.background import REPO, Background
from loink_ros.tools.motion_measures import TrajectoryCommand
from loink_ros.tools.ros_calls import RosCalls

ENV = REPO / '.ros2_control' / 'env.sh'
SETUP_HINT = 'run `make ros2_control` (scripts/setup_ros2_control.sh) with ../shared/ros2_control'
JTC = '/joint_trajectory_controller'
FORWARD = '/forward_position_controller'
BROADCASTER = 'joint_state_broadcaster'
# Each command output's controller and the topic it takes commands on.
CONTROLLERS = {'joint_trajectory': (JTC, f'{JTC}/joint_trajectory'),
               'forward_position': (FORWARD, f'{FORWARD}/commands')}
OUTPUTS = tuple(CONTROLLERS)
# The controller manager's update period (config/ros2_control/panda.yaml: 250 Hz), s.
PERIOD = 0.004
# Times here are seconds since EPOCH: float64 keeps nanoseconds there, not at 1.8e9 s (where
# its step, 0.24 us, would show in differences over a few ms).
EPOCH = int(time.time())
# The fastest a joint moves when the client moves the robot itself (rad/s; the Panda's
# limits are 2.175 and 2.61).
MOVE_SPEED = 2.0


def available() -> bool:
    """Whether set-up built ros2_control here."""
    return ENV.is_file()


def launch_line(namespace: str, output: str = 'joint_trajectory', model: str = 'panda_full',
                **arguments: str) -> str:
    """The hardware launch line, as docs/HARDWARE.md prints it."""
    extra = ''.join(f' {k}:={v}' for k, v in arguments.items())
    return (f'ros2 launch loink_ros loink_hardware.launch.py model:={model} mock_hardware:=true '
            f'command_output:={output} namespace:={namespace}{extra}')


class Shell(Background):
    """A bash command run as Background runs it, after sourcing .ros2_control/env.sh."""

    def __init__(self, command: str, log: Path):
        if not available():
            raise FileNotFoundError(f'{ENV} missing: {SETUP_HINT}')
        super().__init__(f'source {shlex.quote(str(ENV))} && exec {command}', log)

    def stop(self) -> int:
        """Background.stop, then SIGKILL to what is left of the group: the launched nodes,
        where the launch itself died first (they would go on commanding the robot)."""
        code = super().stop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        return code


def stamp_seconds(stamp) -> float:
    """A header stamp in seconds since EPOCH."""
    return (stamp.sec - EPOCH) + 1e-9 * stamp.nanosec


def duration_seconds(duration) -> float:
    return duration.sec + 1e-9 * duration.nanosec


def info_seconds(info, key: str) -> float:
    """A message's DDS timestamp (`source_timestamp`: when its publisher sent it;
    `received_timestamp`: when it reached this reader, before any callback ran) in seconds
    since EPOCH."""
    return 1e-9 * (info[key] - EPOCH * 10**9)


@dataclass
class JointRecord:
    """/joint_states as received: header stamps (s) and positions in the model's order."""

    joints: list[str]
    times: list[float] = field(default_factory=list)
    positions: list[np.ndarray] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, msg: JointState) -> None:
        index = {name: i for i, name in enumerate(msg.name)}
        if not all(j in index for j in self.joints):
            return
        q = np.array([msg.position[index[j]] for j in self.joints])
        with self.lock:
            self.times.append(stamp_seconds(msg.header.stamp))
            self.positions.append(q)

    def latest(self) -> np.ndarray | None:
        with self.lock:
            return self.positions[-1].copy() if self.positions else None

    def before(self, t: float) -> np.ndarray:
        """The last positions stamped before t."""
        with self.lock:
            i = int(np.searchsorted(self.times, t)) - 1
            if i < 0:
                raise ValueError(f'no /joint_states before {t}')
            return self.positions[i].copy()

    def since(self, start: float, end: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
        """Stamps and positions received with a stamp in [start, end]."""
        with self.lock:
            keep = [i for i, t in enumerate(self.times) if start <= t <= end]
            return (np.array([self.times[i] for i in keep]),
                    np.array([self.positions[i] for i in keep]).reshape(len(keep), len(self.joints)))


@dataclass(frozen=True)
class Diagnosis:
    """One /diagnostics status as received: when, its level and its values."""

    received: float
    level: int
    message: str
    values: dict[str, str]


class RobotClient:
    """The test's side of the robot of one command output (module docstring). Commands are
    recorded as the controller receives them: the node's trajectory commands (stamped, several
    points: motion_measures.TrajectoryCommand) or forward commands, with their DDS timestamps:
    when the node sent each (a forward command's only time: the node samples its motion just
    before) and when it arrived (this client's callbacks run later, and unevenly)."""

    def __init__(self, name: str, joints: list[str], output: str = 'joint_trajectory'):
        self.calls = RosCalls(name)
        self.node = self.calls.node
        self.timed = TimedNode(f'{name}_timed', self.calls.context)
        self.joints, self.output = joints, output
        self.controller, topic = CONTROLLERS[output]
        self.record = JointRecord(joints)
        self.lock = threading.Lock()
        self.trajectories: list[TrajectoryCommand] = []
        self.forwards: list[tuple[float, float, np.ndarray]] = []   # (sent, received, positions)
        self.moves: list[tuple[float, float]] = []   # when this client itself sent forward commands
        self.diagnoses: dict[str, list[Diagnosis]] = {}       # by status name
        # Reliable: every sample the broadcaster sends (it publishes reliable).
        self.node.create_subscription(JointState, '/joint_states', self.record.add, 100)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self.on_diagnostics, 100)
        if output == 'joint_trajectory':
            self.commands = self.node.create_publisher(JointTrajectory, topic, 10)
            self.timed.node.create_subscription(JointTrajectory, topic, self.on_trajectory, 100)
        else:
            self.commands = self.node.create_publisher(Float64MultiArray, topic, 10)
            self.timed.node.create_subscription(Float64MultiArray, topic, self.on_forward, 100)
        from controller_manager_msgs.srv import SwitchController
        self.switch = self.node.create_client(SwitchController, '/controller_manager/switch_controller')
        self.entities: dict[tuple, object] = {}

    def kept(self, kind: str, message_type, name: str):
        """This client's publisher ('publisher') or action client ('action', on the
        SingleThreadedExecutor's node) of `message_type` on `name`, made once and kept: rclpy
        9.1 crashed (a segfault in RosCalls' EventsExecutor) after an ActionClient's destroy()
        while it spun."""
        key = (kind, message_type, name)
        if key not in self.entities:
            if kind == 'publisher':
                self.entities[key] = self.node.create_publisher(message_type, name, 1)
            else:
                from rclpy.action import ActionClient
                self.entities[key] = ActionClient(self.timed.node, message_type, name)
        return self.entities[key]

    def on_trajectory(self, msg: JointTrajectory, info) -> None:
        """A stream's command (stamped; the test's own moves and planned paths are not)."""
        received = info_seconds(info, 'received_timestamp')
        points = msg.points
        if not msg.header.stamp.sec or not points or any(not p.accelerations for p in points):
            return
        order = [list(msg.joint_names).index(j) for j in self.joints]

        def column(name: str) -> np.ndarray:
            return np.array([np.array(getattr(p, name))[order] for p in points])
        command = TrajectoryCommand(stamp_seconds(msg.header.stamp), received,
                                    np.array([duration_seconds(p.time_from_start) for p in points]),
                                    column('positions'), column('velocities'), column('accelerations'))
        with self.lock:
            self.trajectories.append(command)

    def on_forward(self, msg: Float64MultiArray, info) -> None:
        entry = (info_seconds(info, 'source_timestamp'), info_seconds(info, 'received_timestamp'),
                 np.array(msg.data))
        with self.lock:   # the controller's joints are the model's, in its order (checked at start-up)
            self.forwards.append(entry)

    def on_diagnostics(self, msg: DiagnosticArray) -> None:
        received = self.now()
        with self.lock:
            for s in msg.status:
                self.diagnoses.setdefault(s.name, []).append(Diagnosis(
                    received, ord(s.level), s.message, {kv.key: kv.value for kv in s.values}))

    def trajectory_commands(self, start: float, end: float = np.inf) -> list[TrajectoryCommand]:
        """The stream's trajectory commands stamped in [start, end]."""
        with self.lock:
            return [c for c in self.trajectories if start <= c.stamp <= end]

    def forward_commands(self, start: float, end: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
        """When the forward commands sent in [start, end] were sent, and their positions."""
        with self.lock:
            chosen = [(t, q) for t, _, q in self.forwards if start <= t <= end
                      and not any(a <= t <= b for a, b in self.moves)]
        return (np.array([t for t, _ in chosen]),
                np.array([q for _, q in chosen]).reshape(len(chosen), len(self.joints)))

    def command_times(self, start: float, end: float = np.inf) -> np.ndarray:
        """When each command sent in [start, end] was sent (a trajectory's stamp: when the
        node computed it; a forward command's DDS source timestamp)."""
        if self.output == 'joint_trajectory':
            return np.array([c.stamp for c in self.trajectory_commands(start, end)])
        return self.forward_commands(start, end)[0]

    def command_receipts(self, start: float) -> np.ndarray:
        """When the commands that arrived after `start` arrived."""
        with self.lock:
            if self.output == 'joint_trajectory':
                return np.array([c.received for c in self.trajectories if c.received >= start])
            return np.array([r for _, r, _ in self.forwards if r >= start])

    def first_command_after(self, t: float) -> tuple[float, np.ndarray]:
        """The first command sent after t (a trajectory: its first point, at its time): its
        time and positions."""
        if self.output == 'joint_trajectory':
            commands = self.trajectory_commands(t)
            if commands:
                return commands[0].first_time, commands[0].positions[0]
        else:
            times, q = self.forward_commands(t)
            if len(times):
                return float(times[0]), q[0]
        raise ValueError(f'no command sent to {self.controller} after {t:.3f} s')

    def diagnosed(self, name: str, start: float, end: float = np.inf) -> list[Diagnosis]:
        with self.lock:
            return [d for d in self.diagnoses.get(name, []) if start <= d.received <= end]

    def now(self) -> float:
        """The ROS clock, in seconds since EPOCH."""
        return 1e-9 * (self.node.get_clock().now().nanoseconds - EPOCH * 10**9)

    def switch_controllers(self, activate: list[str], deactivate: list[str],
                           timeout: float = 10.0) -> tuple[float, float]:
        """Switch through the controller manager (STRICT, as the spawner does); when the
        request left and when it was answered. RuntimeError where it was refused."""
        from controller_manager_msgs.srv import SwitchController
        if not self.switch.wait_for_service(timeout_sec=timeout):
            raise TimeoutError('/controller_manager/switch_controller did not appear')
        request = SwitchController.Request(activate_controllers=activate, deactivate_controllers=deactivate,
                                           strictness=SwitchController.Request.STRICT)
        sent = self.now()
        if not self.calls.call(self.switch, request, timeout).ok:
            raise RuntimeError(f'switch_controller refused: activate {activate}, deactivate {deactivate}')
        return sent, self.now()

    def wait_for_state(self, timeout: float = 30.0) -> np.ndarray:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            q = self.record.latest()
            if q is not None:
                return q
            time.sleep(0.05)
        raise TimeoutError('no /joint_states')

    def wait_for_subscriber(self, publisher, timeout: float = 10.0) -> None:
        """A message published before discovery matched is lost."""
        deadline = time.monotonic() + timeout
        own = 1 if publisher is self.commands else 0   # this client's own recorder
        while publisher.get_subscription_count() <= own:
            if time.monotonic() > deadline:
                raise TimeoutError(f'nobody subscribes to {publisher.topic_name}')
            time.sleep(0.05)

    def wait_quiet(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Until no command came for `quiet` s: the node's motion at rest, or a path done."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            receipts = self.command_receipts(self.now() - quiet)
            if not len(receipts):
                return
            time.sleep(0.05)
        raise TimeoutError(f'commands still coming after {timeout} s')

    def move_to(self, q: np.ndarray, seconds: float, tolerance: float = 1e-4) -> np.ndarray:
        """Drive the robot to q through its controller in `seconds` or more (no joint beyond
        MOVE_SPEED), once the node's commands stopped; its state there."""
        self.wait_quiet()
        self.wait_for_subscriber(self.commands)
        seconds = max(seconds, 0.5 * np.pi * float(np.abs(q - self.wait_for_state()).max()) / MOVE_SPEED)
        if self.output == 'joint_trajectory':
            point = JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=duration(seconds))
            self.commands.publish(JointTrajectory(joint_names=self.joints, points=[point]))
        else:
            self.forward_line(self.wait_for_state(), q, seconds)
        deadline = time.monotonic() + seconds + 5.0
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.record.latest()
            if now is not None and np.abs(now - q).max() <= tolerance:
                time.sleep(0.2)
                return self.record.latest()
        raise TimeoutError(f'the robot did not reach {q}: it is at {self.record.latest()}')

    def forward_line(self, start: np.ndarray, end: np.ndarray, seconds: float) -> None:
        """Forward commands along a smooth (cosine-timed) line at the controller's rate;
        recorded in `moves`, so that they are not taken for the node's."""
        sent, began = self.now(), time.monotonic()
        while (s := (time.monotonic() - began) / seconds) < 1.0:
            blend = 0.5 - 0.5 * np.cos(np.pi * s)
            self.commands.publish(Float64MultiArray(data=[float(v) for v in start + blend * (end - start)]))
            time.sleep(PERIOD)
        for _ in range(3):
            self.commands.publish(Float64MultiArray(data=[float(v) for v in end]))
            time.sleep(PERIOD)
        with self.lock:
            self.moves.append((sent, self.now()))

    def close(self) -> None:
        self.timed.close()
        self.calls.close()


class TimedNode:
    """A node beside RosCalls' for subscriptions that read their messages' DDS timestamps
    (MessageInfo), spun by a SingleThreadedExecutor in a thread of its own: rclpy 9.1's
    EventsExecutor, RosCalls' choice, fails on such callbacks (SystemError: null argument to
    internal routine)."""

    def __init__(self, name: str, context):
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node

        from loink_ros.node.spinning import spin_until
        self.node = Node(name, context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=spin_until, args=(self.executor, self.stop), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.node.destroy_node()


def stream(client: RobotClient, publisher, messages: list, rate: float,
           events: list[tuple[float, Callable[[], None]]] = ()) -> np.ndarray:
    """Publish `messages` (each with a header) at `rate`, each stamped as it leaves, while
    `events` run in a thread of their own at their times (s after the first); the stamps."""
    client.wait_for_subscriber(publisher)
    began, failures = time.monotonic(), []
    thread = threading.Thread(target=run_events, args=(began, events, failures), daemon=True)
    thread.start()
    stamps, next_time = [], began
    for msg in messages:
        msg.header.stamp = client.node.get_clock().now().to_msg()
        publisher.publish(msg)
        stamps.append(stamp_seconds(msg.header.stamp))
        next_time += 1.0 / rate
        time.sleep(max(0.0, next_time - time.monotonic()))
    thread.join()
    if failures:
        raise failures[0]
    return np.array(stamps)


def run_events(began: float, events: list[tuple[float, Callable[[], None]]], failures: list) -> None:
    """Each event at its time; the first that fails ends them, its exception in `failures`."""
    try:
        for at, event in sorted(events, key=lambda e: e[0]):
            time.sleep(max(0.0, began + at - time.monotonic()))
            event()
    except Exception as err:  # noqa: BLE001 - raised again in the streaming thread
        failures.append(err)
