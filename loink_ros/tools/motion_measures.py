"""How a robot's commands and its /joint_states move, against the joint limits (ROS-free):
the largest |velocity|, |acceleration| and |jerk|, each as a fraction of its joint's limit,
the jumps (steps no velocity limit explains), and the stream's latency and tracking, for
test/test_hardware.py and `loink bench hardware`.

Derivatives are divided differences of samples at their own times: velocity q[t0,t1],
acceleration 2 q[t0,t1,t2], jerk 6 q[t0,..,t3]. Each is a weighted mean of the true
derivative over its samples' span (the mean value theorem for divided differences; the
weights, a B-spline's, are positive), so a motion within its limits measures within them
however unevenly it is sampled, and a measure beyond a limit is the motion's, provided the
times are those the positions belong to:

- /joint_states of ros2_control's mock hardware (mock_components/GenericSystem): message k
  reports the command written in update k-1, and joint_trajectory_controller commands in each
  update its trajectory one period ahead; so message k's positions are timed by message
  k-1's stamp (plus one period, a constant no difference sees). Where stamps lie more than
  GAP_PERIODS periods apart (a message lost, the loop late, the broadcaster off) the pairing
  is unknown: the samples are split there and nothing is differenced across. The stamp is
  the controller manager's clock read for the update, the controller's sampling time its
  own running sum of the loop's periods: they differ by tens of microseconds, varying
  (measured: the node's motion sampled at the stamps keeps its limits to 1e-5 where the
  positions reported at them show 1.3 to 1.8 times the acceleration limit), which is why
  `joint_state_peaks` also differences over several updates and Peaks has percentiles.
- joint_trajectory commands: each message is one jerk-limited motion, sampled at its points
  (header stamp plus time_from_start): its peaks are the points' velocities and
  accelerations and the divided differences between neighbouring points (positions,
  velocities, accelerations), so the jerk is a mean over at most one point's spacing.
  Consecutive messages must be one motion: a message's first point is compared with the
  previous message's trajectory at its time (quintic through both points' states, as the
  controller interpolates), in cycles of motion at the velocity limit (`trajectory_steps`).
- forward_position commands carry no time: they are timed by their DDS source timestamp,
  when the node published each after sampling its motion at that cycle (command_output.py);
  the time between the two is not seen from outside and varies by milliseconds on a loaded
  machine (a Python node's threads), which differences over one cycle magnify: their
  velocity is also measured over a longer window (`window_velocity`), where it weighs
  little.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loink_ros.core.motion.joint_limits import JointLimits

# A jump: a step between neighbouring samples more than this many times what the velocity
# limit allows over their time apart.
JUMP = 1.5
# Samples farther apart than this many periods are not neighbours (module docstring).
GAP_PERIODS = 1.5

Segment = tuple[np.ndarray, np.ndarray]   # times (m,), positions (m, n)


@dataclass(frozen=True)
class Peaks:
    """The largest |velocity|, |acceleration| and |jerk| as fractions of their limits (over
    joints and samples), the jumps among the steps, and how many samples were measured; and
    the 99th percentiles over samples of the acceleration's and jerk's fractions (each
    sample's largest joint): /joint_states' stamps can be off by tens of microseconds from the
    time the controller sampled its trajectory (a loop preempted between the two, 2 cores),
    which a second or third difference over 4 ms turns into an isolated spike."""

    velocity: float = 0.0
    acceleration: float = 0.0
    jerk: float = 0.0
    jumps: int = 0
    samples: int = 0
    acceleration_p99: float = 0.0
    jerk_p99: float = 0.0

    def __or__(self, other: Peaks) -> Peaks:
        """Both measures together: the larger peaks and percentiles, the jumps and samples added."""
        return Peaks(max(self.velocity, other.velocity), max(self.acceleration, other.acceleration),
                     max(self.jerk, other.jerk), self.jumps + other.jumps, self.samples + other.samples,
                     max(self.acceleration_p99, other.acceleration_p99), max(self.jerk_p99, other.jerk_p99))

    def within(self, factor: float) -> bool:
        """Every peak at most `factor` of its limit, and no jump."""
        return max(self.velocity, self.acceleration, self.jerk) <= factor and not self.jumps

    def as_dict(self) -> dict:
        return {'velocity': self.velocity, 'acceleration': self.acceleration, 'jerk': self.jerk,
                'jumps': self.jumps, 'samples': self.samples, 'acceleration_p99': self.acceleration_p99,
                'jerk_p99': self.jerk_p99}


def divided_differences(times: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Velocities, accelerations and jerks of samples q (m, n) at `times` (module docstring)."""
    t = np.asarray(times, float)
    v = np.diff(q, axis=0) / np.diff(t)[:, None]
    a = 2.0 * np.diff(v, axis=0) / (t[2:] - t[:-2])[:, None]
    j = 3.0 * np.diff(a, axis=0) / (t[3:] - t[:-3])[:, None]
    return v, a, j


def share(values: np.ndarray, limit: np.ndarray) -> float:
    """The largest |value| / limit; 0 for no values."""
    values = np.asarray(values, float)
    return float((np.abs(values) / limit).max()) if values.size else 0.0


def sampled_peaks(segments: list[Segment], limits: JointLimits, jump: float = JUMP) -> Peaks:
    """Peaks of sampled positions, each segment differenced on its own."""
    v, a, j = [], [], []
    for times, q in segments:
        for out, values in zip((v, a, j), divided_differences(times, q)):
            out.append(values)
    v, a, j = (np.concatenate(x) if x else np.zeros((0, len(limits.velocity))) for x in (v, a, j))
    steps = (np.abs(v) / limits.velocity).max(axis=1) if len(v) else np.zeros(0)
    return Peaks(share(v, limits.velocity), share(a, limits.acceleration), share(j, limits.jerk),
                 int(np.sum(steps > jump)), sum(len(t) for t, _ in segments),
                 percentile_share(a, limits.acceleration), percentile_share(j, limits.jerk))


def percentile_share(values: np.ndarray, limit: np.ndarray, percent: float = 99.0) -> float:
    """The `percent`th percentile over samples of each sample's largest |value| / limit."""
    return float(np.percentile((np.abs(values) / limit).max(axis=1), percent)) if len(values) else 0.0


def window_velocity(segments: list[Segment], window: float, velocity: np.ndarray) -> float:
    """The largest |velocity| / limit between each sample and the first at least `window` s
    later in its segment: a timing error d at either end changes it by at most d / window."""
    out = 0.0
    for times, q in segments:
        later = np.searchsorted(times, times + window)
        start, end = np.flatnonzero(later < len(times)), later[later < len(times)]
        if len(start):
            out = max(out, share((q[end] - q[start]) / (times[end] - times[start])[:, None], velocity))
    return out


def split(times: np.ndarray, q: np.ndarray, gap: float) -> list[Segment]:
    """Runs of samples no more than `gap` s apart."""
    cuts = np.flatnonzero(np.diff(times) > gap) + 1
    return [(t, p) for t, p in zip(np.split(times, cuts), np.split(q, cuts)) if len(t)]


def joint_state_segments(stamps: np.ndarray, positions: np.ndarray, period: float) -> list[Segment]:
    """Mock hardware's /joint_states as positions at their times: message k's positions at
    message k-1's stamp, in runs of messages whose stamps lie within GAP_PERIODS periods."""
    stamps = np.asarray(stamps, float)
    if len(stamps) < 2:
        return []
    gap = GAP_PERIODS * period
    paired = np.diff(stamps) <= gap            # message k+1 follows message k: its time is known
    times, q = stamps[:-1][paired], np.asarray(positions)[1:][paired]
    # Neighbouring kept samples are one update apart only where no pair between them was dropped.
    index = np.flatnonzero(paired)
    cuts = np.flatnonzero(np.diff(index) > 1) + 1
    return [(t, p) for t, p in zip(np.split(times, cuts), np.split(q, cuts)) if len(t)]


def joint_state_peaks(stamps: np.ndarray, positions: np.ndarray, period: float, limits: JointLimits,
                      stride: int = 1) -> Peaks:
    """Peaks of mock hardware's /joint_states, differenced over `stride` updates (every phase):
    the trajectory controller samples its trajectory a few tens of microseconds from the
    broadcaster's stamp, varying, which a difference over one update (4 ms) magnifies by
    1 / period^2 for the acceleration, a longer stride by 1 / stride^2 less."""
    segments = joint_state_segments(stamps, positions, period)
    return sampled_peaks([(t[s::stride], q[s::stride]) for t, q in segments for s in range(stride)], limits)


def forward_peaks(sent: np.ndarray, positions: np.ndarray, gap: float, limits: JointLimits) -> Peaks:
    """Peaks of forward_position commands timed by when they were sent, split where they lie
    more than `gap` s apart (the node sent nothing: at rest, or the controller inactive)."""
    return sampled_peaks(split(np.asarray(sent, float), np.asarray(positions), gap), limits)


@dataclass(frozen=True)
class TrajectoryCommand:
    """One joint_trajectory command in the model's joint order: its stamp (s), when it was
    received, and its points: offsets (s after the stamp), positions, velocities and
    accelerations (m, n)."""

    stamp: float
    received: float
    offsets: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray

    @property
    def first_time(self) -> float:
        return self.stamp + float(self.offsets[0])

    def at(self, t: float) -> np.ndarray:
        """Positions at time t: the quintic through the bracketing points' states (the
        trajectory controller's interpolation); the first or last point outside them."""
        times = self.stamp + self.offsets
        if t <= times[0]:
            return self.positions[0].copy()
        if t >= times[-1]:
            return self.positions[-1].copy()
        i = int(np.searchsorted(times, t, side='right')) - 1
        return quintic(self.state(i), self.state(i + 1), times[i + 1] - times[i], t - times[i])

    def state(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.positions[i], self.velocities[i], self.accelerations[i]


def quintic(start: tuple, end: tuple, duration: float, s: float) -> np.ndarray:
    """Position at s of the quintic from `start` to `end` (position, velocity, acceleration
    each) over `duration`."""
    (p0, v0, a0), (p1, v1, a1), T = start, end, duration
    c3 = (20 * (p1 - p0) - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T * T) / (2 * T ** 3)
    c4 = (30 * (p0 - p1) + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T * T) / (2 * T ** 4)
    c5 = (12 * (p1 - p0) - 6 * (v1 + v0) * T - (a0 - a1) * T * T) / (2 * T ** 5)
    return p0 + v0 * s + 0.5 * a0 * s * s + c3 * s ** 3 + c4 * s ** 4 + c5 * s ** 5


def refused(commands: list[TrajectoryCommand]) -> list[TrajectoryCommand]:
    """Commands whose points' times do not strictly increase: joint_trajectory_controller
    refuses them ("Time between points ... is not strictly increasing") and goes on with the
    trajectory it had."""
    return [c for c in commands if np.any(np.diff(c.offsets) <= 0.0)]


def trajectory_peaks(commands: list[TrajectoryCommand], limits: JointLimits) -> Peaks:
    """Peaks along the points of each command the controller takes (module docstring; the
    refused ones are `refused`'s); jumps are trajectory_steps'."""
    out = Peaks()
    for c in commands:
        if np.any(np.diff(c.offsets) <= 0.0):
            continue
        dt = np.diff(c.offsets)[:, None]     # offsets, not stamp + offsets: no stamp's rounding
        out = out | Peaks(
            max(share(c.velocities, limits.velocity), share(np.diff(c.positions, axis=0) / dt, limits.velocity)),
            max(share(c.accelerations, limits.acceleration),
                share(np.diff(c.velocities, axis=0) / dt, limits.acceleration)),
            share(np.diff(c.accelerations, axis=0) / dt, limits.jerk), 0, len(c.offsets))
    return out


def trajectory_steps(commands: list[TrajectoryCommand], velocity: np.ndarray, period: float,
                     gap: float) -> np.ndarray:
    """For each command stamped within `gap` s of the one before: how far its first point lies
    from the previous command's trajectory at that time, in cycles of motion at the velocity
    limit (largest over joints). One motion measures near 0; over 1 is a jump."""
    return np.array([cycles_from(b.positions[0], a.at(b.first_time), velocity, period)
                     for a, b in zip(commands, commands[1:]) if b.stamp - a.stamp <= gap])


def cycles_from(q: np.ndarray, measured: np.ndarray, velocity: np.ndarray, period: float) -> float:
    """How far q lies from a measured state, in cycles of motion at the velocity limit."""
    return float((np.abs(np.asarray(q) - measured) / (velocity * period)).max())


def answer_latencies(target_stamps: np.ndarray, answer_receipts: np.ndarray,
                     command_receipts: np.ndarray) -> np.ndarray:
    """Each answered target's time from its publication (its stamp) to the receipt of the first
    controller command received after its answer (the node commands it at its next cycle);
    targets answered after the last command are left out."""
    commands = np.sort(np.asarray(command_receipts, float))
    index = np.searchsorted(commands, answer_receipts, side='right')
    keep = index < len(commands)
    return commands[index[keep]] - np.asarray(target_stamps, float)[keep]


def command_to_state(sent: np.ndarray, commanded: np.ndarray, stamps: np.ndarray,
                     positions: np.ndarray) -> np.ndarray:
    """For each /joint_states sample that shows a forward command's positions exactly (mock
    hardware copies them), the time from that command's first sending to the sample's stamp:
    a forward controller applies whatever arrived last, so the spread of these delays, not
    their size, is what steps the arm (one update's worth of spread is one step missed)."""
    first: dict[bytes, float] = {}
    for t, q in zip(sent, commanded):
        first.setdefault(np.asarray(q, float).tobytes(), float(t))
    delays = [stamp - first[key] for stamp, q in zip(stamps, positions)
              if (key := np.asarray(q, float).tobytes()) in first and first[key] < stamp]
    return np.array(delays)


# Delays tried for the tip's trail behind the targets (s).
TRAILS = np.arange(0.0, 0.3001, 0.002)


def tracking(times: np.ndarray, tip: np.ndarray, stamps: np.ndarray,
             positions: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """The tip's distance from the target of the moment while the path lasts; the delay
    (`TRAILS`) after which the targets fit the tip best, and the distances from the target
    that much earlier."""
    def distances(delay: float) -> np.ndarray:
        index = np.searchsorted(stamps, times - delay, side='right') - 1
        keep = (index >= 0) & (times <= stamps[-1])
        return np.linalg.norm(tip[keep] - positions[index[keep]], axis=1)
    trail = min(TRAILS, key=lambda d: float(np.median(distances(d))))
    return distances(0.0), float(trail), distances(trail)


def spread(values: np.ndarray, scale: float = 1e3) -> dict:
    """p50, p99, mean and max, times `scale` (s to ms, m to mm)."""
    v = scale * np.asarray(values, float)
    if not len(v):
        return {'count': 0}
    return {'count': int(len(v)), 'p50': float(np.median(v)), 'p99': float(np.percentile(v, 99)),
            'mean': float(v.mean()), 'max': float(v.max())}
