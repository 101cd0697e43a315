"""The controller outputs' commands: every stream answer becomes the target of one
jerk-limited motion (core/motion/online_generator.py), and a timer sends that motion to the
controller at command_rate (command_output.py). So no command exceeds the position,
velocity, acceleration or jerk limits (URDF plus joint_limits_file), whatever the solver
answered; and the arm, not the command, is the reference:

- The motion keeps the stream's pace: each answer is a target to arrive at moving, with the
  stream's velocity there (the slope of a line fitted to its answers of the last
  PACE_WINDOW_S, over their stamps: the answers carry the solver's noise, which two of them
  a few milliseconds apart would turn into a velocity noisy by tenths of a rad/s), when the
  next answer is due: `due` = twice the gap and a tick's wait for it, after the moment the
  motion changes (command_lead ahead); the target is predicted to that time. The motion then
  goes on at that velocity for `due` more and, if no answer came, goes to rest at the answer
  (the predicted target was only a prediction).
  Answers more than PACE_GAP_S apart are targets to arrive at rest.
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

# Answers farther apart than this (s) are no stream's pace: the motion arrives at rest.
PACE_GAP_S = 0.1
# The stream's velocity is fitted to its answers of this long (s).
PACE_WINDOW_S = 0.05
# Unstamped answers: arrival gaps under this share of their mean are a burst, no pace.
BURST_SHARE = 0.25
# Seconds of sent commands the measured state is compared with (it trails them).
HISTORY_S = 0.5
LOG_THROTTLE = 1.0


@dataclass(frozen=True)
class Target:
    """A stream answer for the motion: where (to rest at), the stream's velocity there (None:
    to arrive at rest) and its fitted position when it was answered (monotonic s), and how
    soon the next answer is due (s)."""

    position: np.ndarray
    velocity: np.ndarray | None = None
    fitted: np.ndarray | None = None
    answered: float = 0.0
    due: float = 0.0

    def at(self, t: float) -> np.ndarray:
        """The position predicted for time t."""
        if self.velocity is None or self.fitted is None:
            return self.position
        return self.fitted + self.velocity * (t - self.answered)


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
                 settings: Callable[[], Settings], logger: RcutilsLogger, period: float):
        self.output, self.motion, self.robot, self.activity = output, motion, robot, activity
        self.period = period          # between ticks (s): an answer waits up to this long
        self.settings, self.logger = settings, logger
        self.running = False          # the motion is being sent
        self.activations = 0          # the controller's activations the motion started after
        self.last_target: float | None = None
        self.pending = False                      # an answer (or a brake) for the next tick
        self.pending_target: Target | None = None   # ... its target; None: a brake
        self.recent: deque[tuple[Slot, np.ndarray]] = deque()   # the stream's recent answers
        self.history: deque[tuple[float, np.ndarray]] = deque()
        self.counts, self.lock = MotionCounts(), threading.Lock()

    def start(self) -> np.ndarray:
        """A new stream: the motion from the measured state; returns its positions."""
        with self.lock:
            measured = self.usable_state()
            self.restart(time.monotonic(), measured)
            self.last_target, self.pending = None, False
            self.recent.clear()
            return measured.positions

    def slot(self, now: float, stamp: float = 0.0) -> Slot:
        """The time the stream's answer may move over (the pose stream's velocity budget)."""
        return Slot(now, FIRST_STEP_S if self.last_target is None else now - self.last_target, stamp)

    def command(self, answer: np.ndarray, solved: bool, slot: Slot,
                scale: float) -> tuple[np.ndarray, bool]:
        """Take a stream's answer as the motion's target (a brake where it is no solution);
        returns the motion's position now and whether it stopped."""
        with self.lock:
            now = time.monotonic()
            if not self.running or self.counts.stale or self.restarted_controller():
                self.restart(now, self.usable_state())
            self.motion.velocity_scale = scale
            if solved:
                self.schedule(self.at_pace(np.array(answer, float), slot))
            else:
                self.schedule(None)
                self.recent.clear()
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

    def at_pace(self, position: np.ndarray, slot: Slot) -> Target:
        """The answer as a target moving at the stream's pace (module docstring)."""
        recent = self.recent
        recent.append((slot, position))
        while slot.now - recent[0][0].now > PACE_WINDOW_S:
            recent.popleft()
        times = pace_times([s for s, _ in recent])
        if times is None:
            recent.clear()
            recent.append((slot, position))
            return Target(position)
        slope, fitted = np.polyfit(times - times[-1], np.array([q for _, q in recent]), 1)
        gap = (times[-1] - times[0]) / (len(times) - 1)
        return Target(position, slope, fitted, slot.now, 2.0 * (gap + self.period))

    def schedule(self, target: Target | None) -> None:
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
            self.motion.move_to(ahead, target.at(ahead + target.due), target.velocity, target.due,
                                target.position)

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
            self.schedule(Target(target))

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


def pace_times(slots: list[Slot]) -> np.ndarray | None:
    """The answers' times for their pace: their stamps, or their arrival where the stamps say
    nothing (zero, equal, or out of order); None for a single answer, answers too far apart
    (PACE_GAP_S), or unstamped ones that came in a burst (BURST_SHARE)."""
    if len(slots) < 2:
        return None
    stamps, arrivals = np.array([s.stamp for s in slots]), np.array([s.now for s in slots])
    gaps = np.diff(stamps)
    if np.all((gaps > 0.0) & (gaps <= PACE_GAP_S)):
        return stamps
    gaps = np.diff(arrivals)
    # Arrivals in a burst (a late delivery) say nothing of the pace.
    if np.all((gaps >= BURST_SHARE * gaps.mean()) & (gaps <= PACE_GAP_S)):
        return arrivals
    return None
