"""The online trajectory generator between the solver and a robot: every command is a state
of one jerk-limited motion (ruckig), so position, velocity, acceleration and jerk stay within
the joint limits whatever the targets do.

The motion is a function of time: `move_to` and `brake` replan from the motion's own state at
a given moment (position, velocity and acceleration continue), and `state(t)` samples it. A
replan may be given a moment ahead of now: the motion before it stays as it was, so a
controller that takes a command up late still finds the same past (what the command lead is
for). A `restart` begins anew from a measured state (the arm, not the command, is the
reference).
Time synchronisation makes every joint arrive together, so a move or a stop keeps to the
straight joint-space line where it starts at rest, and to the arm's branch in any case.

A move may arrive moving: at its target with a velocity (a stream's, so that the motion
keeps pace with it instead of stopping at every answer), when the next answer is due (all
joints together: a time-optimal arrival would be a race that a small difference in velocity
turns into a detour of a tenth of a second and more); it then goes on at that velocity as
long again and, if no answer came, settles at rest at a given position (the stream's last
answer: the target itself was a prediction) or brakes.

Joint ranges: ruckig's community version does not keep position limits, so each replan
bounds every joint's velocity towards its nearest position limit by what it can still brake
from (`braking_speed`); a state that rounding puts outside the range is clipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ruckig import ControlInterface, InputParameter, Result, Ruckig, RuckigError, Trajectory

from loink_ros.core.motion.joint_limits import JointLimits

# The least speed bound towards a position limit: ruckig needs a non-empty velocity range.
MIN_SPEED = 1e-6
# Seconds of superseded motion kept, for states sampled a little in the past.
KEEP_S = 1.0
# The least time between two states sent ahead (s): closer switches are one (rounding).
KNOT_GAP = 1e-5
# Positions (rad or m), velocities and accelerations this small count as there and at rest.
AT_REST = 1e-9


class MotionError(RuntimeError):
    """ruckig found no motion for these limits and states (its result code)."""


@dataclass(frozen=True)
class MotionState:
    """Positions, velocities and accelerations of every joint at one time."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


@dataclass(frozen=True)
class Samples:
    """States of a motion at times (s) after a reference time."""

    offsets: np.ndarray
    states: list[MotionState]


@dataclass(frozen=True)
class Segment:
    """The motion from `origin` on (until the next segment's origin): from `start` along
    `trajectory` (None: holding at start) towards `target` (None: a stop); where the
    trajectory ends moving, on at its velocity for `coast` s, then along `stop` to rest
    (at `target`, or braking where target is None)."""

    origin: float
    start: MotionState
    trajectory: Trajectory | None
    target: np.ndarray | None
    switches: np.ndarray = field(default_factory=lambda: np.array([]))   # absolute times
    coast: float = 0.0
    stop: Trajectory | None = None

    @property
    def duration(self) -> float:
        """From origin to rest (s)."""
        if self.trajectory is None:
            return 0.0
        return self.trajectory.duration + self.coast + (self.stop.duration if self.stop else 0.0)


class OnlineGenerator:
    """One jerk-limited motion through time (module docstring). Times are any monotonic
    clock's seconds, the same for every call."""

    def __init__(self, limits: JointLimits):
        limits.require('velocity', 'acceleration', 'jerk')
        self.limits = limits
        self.dofs = len(limits.names)
        self.ruckig = Ruckig(self.dofs)
        self.velocity_scale = 1.0
        self.segments: list[Segment] = []

    @property
    def target(self) -> np.ndarray | None:
        """Where the motion ends up at rest; None for a stop (or before a start)."""
        return self.segments[-1].target if self.segments else None

    def restart(self, t: float, position: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Begin anew at time t from a measured position (and velocity): holding there, or
        braking from that velocity. A measured velocity beyond the limits is clipped to them:
        no arm moves so (mock hardware differences positions over its update period, and an
        update right after a stalled one reads thousands of rad/s)."""
        position = np.clip(np.asarray(position, float), self.limits.lower, self.limits.upper)
        speed = (np.zeros(self.dofs) if velocity is None else
                 np.clip(np.asarray(velocity, float), -self.limits.velocity, self.limits.velocity))
        self.segments = [Segment(t, MotionState(position, speed, np.zeros(self.dofs)), None,
                                 position.copy())]
        if speed.any():
            self.brake(t)

    def segment(self, t: float) -> Segment:
        """The segment the motion is on at time t."""
        for segment in reversed(self.segments):
            if segment.origin <= t:
                return segment
        return self.segments[0]

    def state(self, t: float) -> MotionState:
        """The motion's state at time t (at rest after its end)."""
        segment = self.segment(t)
        if segment.trajectory is None:
            return segment.start
        elapsed, arrival = max(t - segment.origin, 0.0), segment.trajectory.duration
        if elapsed <= arrival or segment.stop is None:
            return self.clipped(*segment.trajectory.at_time(min(elapsed, arrival)))
        if elapsed <= arrival + segment.coast:
            return coasting(segment.trajectory, elapsed - arrival, self.limits)
        return self.clipped(*segment.stop.at_time(min(elapsed - arrival - segment.coast,
                                                      segment.stop.duration)))

    def clipped(self, p: list[float], v: list[float], a: list[float]) -> MotionState:
        """A state of ruckig's, its positions clipped into the joint ranges (rounding)."""
        position = np.asarray(p, float)
        np.clip(position, self.limits.lower, self.limits.upper, out=position)
        return MotionState(position, np.asarray(v, float), np.asarray(a, float))

    def finished(self, t: float) -> bool:
        """Whether the motion is at rest from time t on (no replan ahead of t)."""
        last = self.segments[-1]
        return last.origin <= t and t - last.origin >= last.duration

    def move_to(self, t: float, target: np.ndarray, velocity: np.ndarray | None = None,
                due: float = 0.0, settle: np.ndarray | None = None) -> None:
        """From the state at time t towards `target` (clipped into the joint ranges), to
        arrive at rest; or with `velocity` (bounded by the limits, and so that coasting for
        `due` s and braking stays within the joint ranges) `due` s after t (later only where
        the limits need longer), then on at that velocity for `due` s, then to rest at
        `settle` (None: brake where it is)."""
        target = np.clip(np.asarray(target, float), self.limits.lower, self.limits.upper)
        if velocity is None or np.abs(velocity).max() < MIN_SPEED:
            self.replan(t, target if settle is None else np.clip(settle, self.limits.lower, self.limits.upper))
            return
        limits, speed = self.limits, self.limits.velocity * self.velocity_scale
        reach = speed * due
        up = np.minimum(speed, braking_speed(limits.upper - target - reach, limits))
        down = np.minimum(speed, braking_speed(target - limits.lower - reach, limits))
        if settle is not None:
            settle = np.clip(np.asarray(settle, float), limits.lower, limits.upper)
        self.replan(t, target, np.clip(velocity, -down, up), due, settle)

    def brake(self, t: float) -> None:
        """From the state at time t to rest, as fast as the limits allow, on its way."""
        self.replan(t, None)

    def ahead(self, t: float, horizon: float, step: float) -> Samples:
        """The motion's states from t until t + horizon, then those of a stop begun there
        (not applied: the motion goes on), the last at rest: what a trajectory controller
        needs to go on, and to stop safely if nothing more comes. The states are every `step`
        and at every moment a joint's jerk changes (KNOT_GAP apart at least), so that the
        quintic a controller puts through two neighbours' states is the motion itself: between
        two such moments each joint moves by a cubic. The first is at t, before the controller
        takes the command up, so that it interpolates between these states from the start
        (not from its own last state, labelled with its own clock)."""
        end = t + horizon
        grid = t + step * np.arange(1, max(1, int(np.ceil(horizon / step - 1e-9))) + 1)
        switches = self.switches(t + KNOT_GAP, end - KNOT_GAP)
        times = np.concatenate([[t], spaced(np.concatenate([switches, grid[:-1]]), grid[-1])])
        states = [self.state(u) for u in times]
        stop = self.plan(states[-1], None)
        offsets = switch_offsets(stop)
        states += [self.clipped(*stop.at_time(offset)) for offset in offsets]
        return Samples(np.concatenate([times, times[-1] + offsets]) - t, states)

    def switches(self, t: float, end: float) -> np.ndarray:
        """The moments in (t, end) at which some joint's jerk changes: where a segment begins,
        and its phases' ends."""
        found = []
        for segment, after in zip(self.segments, [*self.segments[1:], None]):
            until = end if after is None else min(end, after.origin)
            if segment.origin >= until or until <= t:
                continue
            moments = np.concatenate([[segment.origin], segment.switches])
            found.append(moments[(moments > t) & (moments < until)])
        return np.sort(np.concatenate(found)) if found else np.array([])

    def replan(self, t: float, target: np.ndarray | None, velocity: np.ndarray | None = None,
               due: float = 0.0, settle: np.ndarray | None = None) -> None:
        """A new segment from time t; replans at or after t are dropped, and segments
        superseded more than KEEP_S before t forgotten."""
        now = self.state(t)
        kept = [s for s in self.segments if s.origin < t]
        while len(kept) > 1 and kept[1].origin < t - KEEP_S:
            kept.pop(0)
        if velocity is not None:
            try:
                self.segments = kept + [self.paced(t, now, target, velocity, due, settle)]
                return
            except MotionError:
                # No such arrival (ruckig's numerics near rest, rare): to rest at settle.
                target = now.position if settle is None else settle
        if at_rest(now, now.position if target is None else target):
            # There already: a hold (ruckig refuses a motion of rounding's size).
            self.segments = kept + [Segment(t, now, None, target)]
            return
        trajectory = self.plan(now, target)
        self.segments = kept + [Segment(t, now, trajectory, target, t + switch_offsets(trajectory))]

    def paced(self, t: float, now: MotionState, target: np.ndarray, velocity: np.ndarray,
              due: float, settle: np.ndarray | None) -> Segment:
        """The segment from `now` (at time t) that arrives moving, coasts, then stops
        (move_to)."""
        trajectory = self.plan(now, target, velocity, due)
        stop = self.plan(coasting(trajectory, due, self.limits), settle)
        braking = t + trajectory.duration + due
        switches = np.concatenate([t + switch_offsets(trajectory), [braking],
                                   braking + switch_offsets(stop)])
        return Segment(t, now, trajectory, settle, switches, due, stop)

    def plan(self, now: MotionState, target: np.ndarray | None,
             velocity: np.ndarray | None = None, due: float = 0.0) -> Trajectory:
        trajectory = Trajectory(self.dofs)
        try:
            result = self.ruckig.calculate(self.input(now, target, velocity, due), trajectory)
        except (RuckigError, ValueError) as err:   # ValueError: a code its Result lacks
            raise MotionError(f'ruckig: {err} from {now} to {target}') from None
        if result not in (Result.Working, Result.Finished):
            raise MotionError(f'ruckig: {result.name} from {now} to {target}')
        return trajectory

    def input(self, now: MotionState, target: np.ndarray | None,
              velocity: np.ndarray | None = None, due: float = 0.0) -> InputParameter:
        """ruckig's input from `now` towards `target` (None: to rest), arriving at `velocity`
        (None: at rest; kept within the velocity bounds of `now`) `due` s later at the
        soonest."""
        limits = self.limits
        speed = limits.velocity * self.velocity_scale
        up = np.minimum(speed, braking_speed(limits.upper - now.position, limits))
        down = np.minimum(speed, braking_speed(now.position - limits.lower, limits))
        inp = InputParameter(self.dofs)
        inp.current_position = now.position.tolist()
        inp.current_velocity = now.velocity.tolist()
        inp.current_acceleration = now.acceleration.tolist()
        inp.max_velocity = np.maximum(up, MIN_SPEED).tolist()
        inp.min_velocity = (-np.maximum(down, MIN_SPEED)).tolist()
        inp.max_acceleration = limits.acceleration.tolist()
        inp.max_jerk = limits.jerk.tolist()
        if target is None:
            inp.control_interface = ControlInterface.Velocity
            inp.target_velocity = [0.0] * self.dofs
        else:
            inp.target_position = target.tolist()
            if velocity is not None:
                inp.target_velocity = np.clip(velocity, inp.min_velocity, inp.max_velocity).tolist()
                inp.minimum_duration = due
        inp.target_acceleration = [0.0] * self.dofs
        return inp


def coasting(trajectory: Trajectory, elapsed: float, limits: JointLimits) -> MotionState:
    """The state `elapsed` s after a trajectory's end, going on at its final velocity."""
    p, v, _ = trajectory.at_time(trajectory.duration)
    velocity = np.asarray(v, float)
    position = np.clip(np.asarray(p, float) + velocity * elapsed, limits.lower, limits.upper)
    return MotionState(position, velocity, np.zeros(len(velocity)))


def at_rest(state: MotionState, target: np.ndarray) -> bool:
    """Whether `state` is at rest at `target`, within AT_REST."""
    return bool(max(np.abs(state.position - target).max(), np.abs(state.velocity).max(),
                    np.abs(state.acceleration).max()) < AT_REST)


def switch_offsets(trajectory: Trajectory) -> np.ndarray:
    """The times after a trajectory's start at which some joint's jerk changes, and its end:
    each joint's brake, seven main and acceleration phases, as ruckig lays them out."""
    if trajectory.duration <= KNOT_GAP:
        return np.array([])
    ends = []
    for profile in trajectory.profiles[0]:
        phases = [*profile.brake.t, *profile.t, *profile.accel.t]
        ends += list(np.cumsum(phases)[np.asarray(phases) > 0.0])
    return spaced(np.clip(ends, KNOT_GAP, trajectory.duration), trajectory.duration)


def spaced(times: np.ndarray, last: float) -> np.ndarray:
    """`times` sorted, each KNOT_GAP after the one kept before it, then `last` (earlier ones
    within KNOT_GAP of it dropped): a shorter segment would only amplify rounding."""
    kept: list[float] = []
    for u in np.sort(times):
        if u <= last - KNOT_GAP and (not kept or u >= kept[-1] + KNOT_GAP):
            kept.append(float(u))
    return np.array([*kept, last])


def braking_speed(distance: np.ndarray, limits: JointLimits) -> np.ndarray:
    """The largest speed from which a joint stops within `distance` (>= 0), braking at its
    acceleration limit after a jerk-limited ramp: the root v of
    v^2 / (2 a) + v a / (2 j) = distance."""
    a, j = limits.acceleration, limits.jerk
    d = np.maximum(distance, 0.0)
    ramp = a * a / (2.0 * j)
    return -ramp + np.sqrt(ramp * ramp + 2.0 * a * d)
