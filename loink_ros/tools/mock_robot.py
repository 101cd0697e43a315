"""A robot on a desk for the hardware tests and bench: `ros2 launch loink_ros
loink_hardware.launch.py mock_hardware:=true` (ros2_control_node on mock hardware, the
spawner, loink_node streaming to the controller) in a process group of its own, and the
test's side of it: /joint_states recorded in the model's joint order, commands to the
trajectory controller, targets to loink_node's streams."""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from loink_ros.node.command_output import duration
from loink_ros.tools.background import REPO, Background
from loink_ros.tools.ros_calls import RosCalls

ENV = REPO / '.ros2_control' / 'env.sh'
SETUP_HINT = 'run `make ros2_control` (scripts/setup_ros2_control.sh) with ../shared/ros2_control'
JTC = '/joint_trajectory_controller'


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
            self.times.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
            self.positions.append(q)

    def latest(self) -> np.ndarray | None:
        with self.lock:
            return self.positions[-1].copy() if self.positions else None

    def since(self, start: float) -> tuple[np.ndarray, np.ndarray]:
        """Stamps and positions received with a stamp at or after `start`."""
        with self.lock:
            keep = [i for i, t in enumerate(self.times) if t >= start]
            return (np.array([self.times[i] for i in keep]),
                    np.array([self.positions[i] for i in keep]).reshape(len(keep), len(self.joints)))


class RobotClient:
    """The test's side: /joint_states recorded, the trajectory controller commanded."""

    def __init__(self, name: str, joints: list[str]):
        self.calls = RosCalls(name)
        self.node = self.calls.node
        self.joints = joints
        self.record = JointRecord(joints)
        # Reliable: every sample the broadcaster sends (it publishes reliable).
        self.node.create_subscription(JointState, '/joint_states', self.record.add, 100)
        self.trajectory = self.node.create_publisher(JointTrajectory, f'{JTC}/joint_trajectory', 10)
        self.commands: list[tuple[float, float, np.ndarray]] = []   # (sent, due, q) in model order
        self.received: list[float] = []                              # ... and when it came
        self.node.create_subscription(JointTrajectory, f'{JTC}/joint_trajectory',
                                      self.on_command, 100)

    def on_command(self, msg: JointTrajectory) -> None:
        """A single-point command (a stream's): when it was sent and is due, by its stamp."""
        received = self.now()
        if len(msg.points) != 1 or not msg.header.stamp.sec:
            return
        index = {name: i for i, name in enumerate(msg.joint_names)}
        point = msg.points[0]
        sent = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        due = sent + point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        self.commands.append((sent, due, np.array([point.positions[index[j]] for j in self.joints])))
        self.received.append(received)

    def command_speeds(self, start: float, lead: float) -> np.ndarray:
        """Each joint's speed between consecutive stream commands sent after `start`: the move
        over the time from the previous command's due time, or from when it can be taken up
        (sent + `lead`, command_lead) where that is later, to its own (commander.py)."""
        chosen = [c for c in self.commands if c[0] >= start]
        out = [np.abs(b[2] - a[2]) / (b[1] - max(a[1], b[0] + lead)) for a, b in zip(chosen, chosen[1:])]
        return np.array(out).reshape(-1, len(self.joints))

    def now(self) -> float:
        stamp = self.node.get_clock().now().nanoseconds
        return 1e-9 * stamp

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
        own = 1 if publisher is self.trajectory else 0   # this client's own recorder
        while publisher.get_subscription_count() <= own:
            if time.monotonic() > deadline:
                raise TimeoutError(f'nobody subscribes to {publisher.topic_name}')
            time.sleep(0.05)

    def move_to(self, q: np.ndarray, seconds: float, tolerance: float = 1e-4) -> np.ndarray:
        """Drive the robot to q through the trajectory controller; its state there."""
        self.wait_for_subscriber(self.trajectory)
        point = JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=duration(seconds))
        self.trajectory.publish(JointTrajectory(joint_names=self.joints, points=[point]))
        deadline = time.monotonic() + seconds + 5.0
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.record.latest()
            if now is not None and np.abs(now - q).max() <= tolerance:
                time.sleep(0.2)
                return self.record.latest()
        raise TimeoutError(f'the robot did not reach {q}: it is at {self.record.latest()}')

    def close(self) -> None:
        self.calls.close()


# The time a speed is measured over on /joint_states (s). Mock hardware reports at each update
# the command of the update before, the controller manager's updates jitter on a loaded
# machine and a best-effort subscriber may miss a sample: a speed between two neighbouring
# samples (4 ms at 250 Hz) carries a timing error of the order of itself, one over 20 ms a
# few per cent.
SPEED_WINDOW_S = 0.02


def speeds(times: np.ndarray, q: np.ndarray, window: float = SPEED_WINDOW_S) -> np.ndarray:
    """Each joint's speed from each sample to the first one at least `window` s later, (M, n)."""
    later = np.searchsorted(times, times + window)
    keep = later < len(times)
    start, end = np.flatnonzero(keep), later[keep]
    return np.abs(q[end] - q[start]) / (times[end] - times[start])[:, None]
