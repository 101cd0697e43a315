"""The controller outputs' commands: every stream answer becomes the target of one
jerk-limited motion (core/motion/online_generator.py), and a timer sends that motion to the
controller at command_rate (command_output.py). So no command exceeds the position,
velocity, acceleration or jerk limits (URDF plus joint_limits_file), whatever the solver
answered; and the arm, not the command, is the reference:

- A stream starts from the measured state (/joint_states: position and velocity), only
  while it is fresh (joint_states_max_age) and the controller is active (list_controllers);
  otherwise its targets are dropped, saying why.
- An answer that is no solution, a stale target stream (stream_timeout) and a stale
  /joint_states stop the motion: it brakes to rest within the limits, on its way. A stale
  state is an ERROR in /diagnostics; once states are fresh again, the motion starts again
  from them and the stream goes on.
- Nothing is sent to a controller that is not active; when it is active again, or when the
  measured state is farther than resync_tolerance from every recent command (the arm held
  by something else), the motion starts again from the measured state.
"""

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rclpy.impl.rcutils_logger import RcutilsLogger

from loink_ros.core.motion.online_generator import OnlineGenerator
from loink_ros.node.command_output import CommandOutput
from loink_ros.node.commander import FIRST_STEP_S, NotCommanded, Slot
from loink_ros.node.controller_activity import ControllerActivity
from loink_ros.node.measured_state import CurrentConfiguration, Measured, StaleState
from loink_ros.node.parameters import Settings

# Seconds of sent commands the measured state is compared with (it trails them).
HISTORY_S = 0.5
LOG_THROTTLE = 1.0


@dataclass
class MotionCounts:
    """The commands so far, for /diagnostics."""

    sent: int = 0          # commands sent to the controller
    targets: int = 0       # stream answers taken as the motion's target
    stopped: int = 0       # answers that were no solution: the motion braked
    holds: int = 0         # stale target streams: the motion braked
    resyncs: int = 0       # starts again from the measured state
    holding: bool = False
    stale: str = ''        # why the measured state cannot be used, while it cannot


class MotionCommander:
    """Stream answers in, controller commands out (module docstring)."""

    def __init__(self, output: CommandOutput, motion: OnlineGenerator,
                 robot: CurrentConfiguration, activity: ControllerActivity,
                 settings: Callable[[], Settings], logger: RcutilsLogger):
        self.output, self.motion, self.robot, self.activity = output, motion, robot, activity
        self.settings, self.logger = settings, logger
        self.running = False          # the motion is being sent
        self.activations = 0          # the controller's activations the motion started after
        self.last_target: float | None = None
        self.pending = False                      # an answer (or a brake) for the next tick
        self.pending_target: np.ndarray | None = None   # ... its target; None: a brake
        self.history: deque[tuple[float, np.ndarray]] = deque()
        self.counts, self.lock = MotionCounts(), threading.Lock()

    def start(self) -> np.ndarray:
        """A new stream: the motion from the measured state; returns its positions."""
        with self.lock:
            measured = self.usable_state()
            self.restart(time.monotonic(), measured)
            self.last_target, self.pending = None, False
            return measured.positions

    def slot(self, now: float) -> Slot:
        """The time the stream's answer may move over (the pose stream's velocity budget)."""
        return Slot(now, FIRST_STEP_S if self.last_target is None else now - self.last_target)

    def command(self, answer: np.ndarray, solved: bool, slot: Slot,
                scale: float) -> tuple[np.ndarray, bool]:
        """Take a stream's answer as the motion's target (a brake where it is no solution);
        returns the motion's position now and whether it stopped."""
        with self.lock:
            now = time.monotonic()
            if not self.running or self.counts.stale or self.restarted_controller():
                self.restart(now, self.usable_state())
            self.motion.velocity_scale = scale
            self.schedule(np.array(answer, float) if solved else None)
            c = self.counts
            c.targets += 1
            c.stopped += not solved
            c.holding = False
            self.last_target = slot.now
            return self.motion.state(now).position, not solved

    def tick(self) -> None:
        """Send the motion (command_rate's timer), after checking the controller and the
        measured state."""
        with self.lock:
            if not self.running:
                return
            now = time.monotonic()
            if not self.activity.active or self.restarted_controller():
                self.running = False
                self.logger.warning(f'controller {self.activity.name} is {self.activity.state}: '
                                    'commands stop; the next target starts from the measured state')
                return
            try:
                self.check_state(now)
                self.apply(now)
                self.output.send(self.motion, now)
            except Exception as err:  # noqa: BLE001 - a bug must not end the commands' thread
                self.running = False
                self.logger.error(f'commands stop: {type(err).__name__}: {err}; the next target '
                                  'starts from the measured state', throttle_duration_sec=LOG_THROTTLE)
                return
            self.counts.sent += 1
            self.history.append((now, self.motion.state(now).position))
            while self.history and self.history[0][0] < now - HISTORY_S:
                self.history.popleft()
            if (self.counts.holding or self.counts.stale) and self.motion.finished(now):
                self.running = False   # at rest: the controller holds the last command

    def schedule(self, target: np.ndarray | None) -> None:
        """The motion's next target (None: a brake), applied at the next tick."""
        self.pending, self.pending_target = True, target

    def apply(self, now: float) -> None:
        """The latest answer (or brake) changes the motion command_lead from now: every command
        sent before this one holds the same motion until then, so a controller that takes a
        command up late, within the lead, finds no step."""
        if not self.pending:
            return
        target, self.pending = self.pending_target, False
        ahead = now + self.settings().command_lead
        if target is None:
            self.motion.brake(ahead)
        else:
            self.motion.move_to(ahead, target)

    def check_state(self, now: float) -> None:
        """Brake on a stale state; start again from the measured state when the arm is not
        where the commands are."""
        s = self.settings()
        try:
            measured = self.robot.fresh(s.joint_states_max_age, s.joint_states_topic)
        except StaleState as err:
            if not self.counts.stale:
                self.counts.stale = str(err)
                self.schedule(None)
                self.logger.error(f'{err}: the motion brakes to rest and holds')
            return
        if self.counts.stale:
            self.logger.info('joint states are fresh again: the motion goes on from them')
            self.counts.stale = ''
        elif (drift := self.drift(measured)) > s.resync_tolerance:
            self.logger.warning(f'the arm is {drift:.3g} rad from every command of '
                                f'the last {HISTORY_S:g} s (resync_tolerance '
                                f'{s.resync_tolerance:g}): the motion starts again from it',
                                throttle_duration_sec=LOG_THROTTLE)
        else:
            return
        target = None if self.counts.holding else self.motion.target
        self.restart(now, measured)
        if target is not None and not self.pending:
            self.schedule(target)

    def drift(self, measured: Measured) -> float:
        """How far the measured positions are from the nearest recent command."""
        if not self.history:
            return 0.0
        return min(float(np.abs(q - measured.positions).max()) for _, q in self.history)

    def usable_state(self) -> Measured:
        """The fresh measured state of an active controller's arm, or NotCommanded."""
        s = self.settings()
        if not self.activity.active:
            raise NotCommanded(f'controller {self.activity.name} is {self.activity.state}: '
                               'nothing is sent to it')
        try:
            return self.robot.fresh(s.joint_states_max_age, s.joint_states_topic)
        except StaleState as err:
            raise NotCommanded(f'{err}: commands start from the measured state') from None

    def restart(self, now: float, measured: Measured) -> None:
        self.motion.restart(now, measured.positions, measured.velocities)
        self.history.clear()
        self.activations = self.activity.activations
        self.counts.resyncs += self.running
        self.counts.stale = ''
        self.running = True

    def restarted_controller(self) -> bool:
        """Whether the controller became active again since the motion started."""
        return self.activity.activations != self.activations

    def check_stale(self, timeout: float) -> None:
        """No target for `timeout` s (a timer's): the motion brakes to rest and holds."""
        with self.lock:
            if not self.running or self.counts.holding or self.last_target is None:
                return
            now = time.monotonic()
            if now - self.last_target <= timeout:
                return
            self.counts.holding = True
            self.counts.holds += 1
            self.schedule(None)
        self.logger.info(f'no target for {timeout:g} s (stream_timeout): braking to rest, holding')

    def diagnostics(self) -> tuple[dict[str, str], str | None]:
        """The /diagnostics entries, and the error to report (a stale state while streaming)."""
        with self.lock:
            c = MotionCounts(**vars(self.counts))
            state = self.activity.state
        values = {'controller state': state,
                  'commands sent': str(c.sent),
                  'targets commanded': str(c.targets),
                  'commands stopped (no solution)': str(c.stopped),
                  'holds (stale targets)': str(c.holds),
                  'motion restarts from the measured state': str(c.resyncs),
                  'joint states': c.stale or 'fresh',
                  'holding': ('yes: stale joint states' if c.stale else
                              'yes: no target for stream_timeout' if c.holding else 'no')}
        return values, c.stale or None
