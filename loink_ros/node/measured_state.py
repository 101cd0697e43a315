"""The robot's measured state from /joint_states, with its age: what streams start from,
what a request without a robot state is seeded from, and what the motion layer is checked
against (docs/HARDWARE.md). A state older than `max_age` (by its arrival, and by its stamp
where it has one) is stale: nothing starts from it."""

import threading
import time
from dataclasses import dataclass

import numpy as np
from rclpy.clock import Clock
from sensor_msgs.msg import JointState


class StaleState(ValueError):
    """No measured state fresh enough to act on: why, in one line."""


@dataclass(frozen=True)
class Measured:
    """Positions and velocities (model order; velocities zero where none are published), and
    when they were measured (monotonic s): their arrival less their stamp's age then, for
    the oldest joint."""

    positions: np.ndarray
    velocities: np.ndarray
    time: float

    def age(self, now: float) -> float:
        """Seconds since the state was measured."""
        return now - self.time


class CurrentConfiguration:
    """The latest state of the model's joints from /joint_states, once all are known.
    Robots may split their joints over several publishers: messages are merged, and the
    state is as old as its oldest part."""

    def __init__(self, joint_names: list[str], clock: Clock | None = None):
        self.index = {name: i for i, name in enumerate(joint_names)}
        self.known = np.zeros(len(joint_names), dtype=bool)
        self.values, self.speeds = np.zeros(len(joint_names)), np.zeros(len(joint_names))
        self.arrivals = np.full(len(joint_names), -np.inf)
        self.clock, self.lock = clock, threading.Lock()
        self.measured: Measured | None = None

    @property
    def positions(self) -> np.ndarray | None:
        """The latest positions, however old (None before every joint was seen)."""
        measured = self.measured
        return None if measured is None else measured.positions

    def update(self, msg: JointState) -> None:
        """Merge one message."""
        if len(msg.name) != len(msg.position):
            return
        now = time.monotonic()
        velocities = msg.velocity if len(msg.velocity) == len(msg.name) else None
        with self.lock:
            values, speeds, arrivals = self.values.copy(), self.speeds.copy(), self.arrivals.copy()
            for k, (name, position) in enumerate(zip(msg.name, msg.position)):
                i = self.index.get(name)
                if i is None or not np.isfinite(position):
                    continue
                values[i], self.known[i] = position, True
                speed = velocities[k] if velocities is not None else 0.0
                speeds[i] = speed if np.isfinite(speed) else 0.0
                arrivals[i] = now - self.stamp_age(msg)
            self.values, self.speeds, self.arrivals = values, speeds, arrivals
            if self.known.all():   # one assignment: readers see a whole state
                self.measured = Measured(values, speeds, float(arrivals.min()))

    def stamp_age(self, msg: JointState) -> float:
        """How old the message's stamp is on this node's clock (0 without a stamp or clock,
        or for a stamp ahead of the clock)."""
        stamp = msg.header.stamp
        if self.clock is None or (stamp.sec == 0 and stamp.nanosec == 0):
            return 0.0
        age = self.clock.now().nanoseconds * 1e-9 - (stamp.sec + stamp.nanosec * 1e-9)
        return max(0.0, age)

    def fresh(self, max_age: float, topic: str = '/joint_states') -> Measured:
        """The measured state, or StaleState saying why it cannot be used."""
        measured = self.measured
        if measured is None:
            raise StaleState(f'no state of every joint on {topic} yet')
        age = measured.age(time.monotonic())
        if age > max_age:
            raise StaleState(f'the last state on {topic} is {age:.3g} s old (joint_states_max_age '
                             f'{max_age:g} s)')
        return measured
