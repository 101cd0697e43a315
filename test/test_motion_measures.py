"""The hardware measures without ROS (loink_ros/tools/motion_measures.py): divided differences
keep a jerk-limited motion within its limits however it is sampled, and catch what is not;
mock hardware's one-update delay, lost messages, trajectory commands and their seams, the
latency and the tracking."""
from pathlib import Path

import numpy as np
import pytest

from loink_ros.core.motion.joint_limits import joint_limits
from loink_ros.core.motion.online_generator import OnlineGenerator
from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import make_problem
from loink_ros.tools import motion_measures as mm

LIMITS_FILE = Path(__file__).resolve().parents[1] / 'config' / 'joint_limits' / 'panda.yaml'
PERIOD = 0.004
# Divided differences of exact samples: rounding only.
ROUNDING = 1 + 1e-6
READY = np.array([0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0])
FAR = np.array([1.5, 0.8, -1.2, -0.5, 1.5, 3.0, -1.5])


@pytest.fixture(scope='module')
def limits():
    problem = make_problem('panda_full')
    return joint_limits(list(problem.joint_names), problem.lower, problem.upper,
                        velocity_limits(problem), LIMITS_FILE)


def jittered_times(seconds: float, jitter: float, seed: int = 1) -> np.ndarray:
    """Update times every PERIOD, each late by up to `jitter` s."""
    rng = np.random.default_rng(seed)
    nominal = PERIOD * np.arange(int(seconds / PERIOD))
    return nominal + rng.uniform(0.0, jitter, len(nominal))


class Chase:
    """A motion from READY towards FAR, its target moved back and forth (replanned) every
    30 ms; `at(t)` advances it to t (times in order)."""

    def __init__(self, limits):
        self.motion = OnlineGenerator(limits)
        self.motion.restart(0.0, READY)
        self.replans = 0

    def at(self, t: float) -> OnlineGenerator:
        while 0.03 * self.replans <= t:
            self.motion.move_to(0.03 * self.replans, FAR if self.replans % 20 < 12 else READY)
            self.replans += 1
        return self.motion


def sampled(limits, times: np.ndarray) -> np.ndarray:
    """Positions of the chased motion at `times`."""
    chase = Chase(limits)
    return np.array([chase.at(t).state(t).position for t in times])


def test_divided_differences_give_a_cubics_jerk_exactly_at_uneven_times():
    times = np.array([0.0, 0.003, 0.0081, 0.0119, 0.016])
    q = (times ** 3)[:, None]
    v, a, j = mm.divided_differences(times, q)
    np.testing.assert_allclose(j, 6.0)
    np.testing.assert_allclose(a[:, 0], 2 * (times[:-2] + times[1:-1] + times[2:]))
    np.testing.assert_allclose(v[:, 0], np.diff(times ** 3) / np.diff(times))


def test_a_jerk_limited_motion_sampled_unevenly_measures_within_its_limits(limits):
    """Sampled late by up to 1 ms per update, replanned every 30 ms: within every limit, and
    at the velocity and acceleration limits somewhere (the measure is not blind)."""
    times = jittered_times(1.5, 0.001)
    peaks = mm.sampled_peaks([(times, sampled(limits, times))], limits)
    assert peaks.within(ROUNDING), peaks
    assert peaks.velocity > 0.95 and peaks.acceleration > 0.95, peaks
    assert peaks.samples == len(times)


def test_a_step_the_velocity_limit_cannot_explain_is_a_jump(limits):
    times = jittered_times(1.0, 0.0005)
    q = sampled(limits, times)
    q[100:, 3] += 0.02      # 0.02 rad in one update: 2.3 times what 2.175 rad/s allows in 4 ms
    peaks = mm.sampled_peaks([(times, q)], limits)
    assert peaks.jumps == 1 and peaks.velocity > mm.JUMP, peaks


def test_mock_hardware_positions_belong_to_the_previous_stamp(limits):
    """Message k carries the command of update k-1: timed by the previous stamp the samples
    keep the limits; timed by their own stamp, the loop's jitter breaks them."""
    stamps = jittered_times(1.5, 0.001, seed=2)
    commanded = sampled(limits, stamps)                  # each update's command, at its time
    reported = np.vstack([commanded[:1], commanded[:-1]])  # message k: update k-1's command
    peaks = mm.joint_state_peaks(stamps, reported, PERIOD, limits)
    assert peaks.within(ROUNDING), peaks
    naive = mm.sampled_peaks([(stamps, reported)], limits)
    assert naive.acceleration > 1.5, naive


def test_one_mistimed_stamp_is_a_spike_the_percentiles_leave_out(limits):
    """A stamp 50 us off (a loop preempted between sampling and stamping): the peak
    acceleration and jerk leap, their 99th percentiles do not; an arm accelerating 20 %
    beyond its limit throughout shows in both."""
    times = jittered_times(2.0, 0.0005, seed=8)
    q = sampled(limits, times)
    stamps = times.copy()
    stamps[200] += 5e-5
    peaks = mm.sampled_peaks([(stamps, q)], limits)
    assert peaks.acceleration > 1.05 and max(peaks.acceleration_p99, peaks.jerk_p99) <= ROUNDING, peaks
    over = READY + 0.5 * 1.2 * limits.acceleration * times[:, None] ** 2
    assert mm.sampled_peaks([(times, over)], limits).acceleration_p99 == pytest.approx(1.2)


def test_a_stride_shrinks_what_stamp_noise_does_to_the_acceleration(limits):
    """/joint_states stamped up to 50 us from their true times: differenced over 3 updates
    the acceleration is far nearer its true peak than over 1."""
    stamps = jittered_times(1.5, 0.0005, seed=9)
    reported = np.vstack([[READY], sampled(limits, stamps)[:-1]])
    noisy = stamps + np.random.default_rng(10).uniform(0.0, 5e-5, len(stamps))
    one = mm.joint_state_peaks(noisy, reported, PERIOD, limits)
    three = mm.joint_state_peaks(noisy, reported, PERIOD, limits, stride=3)
    assert one.acceleration_p99 > 1.2 and three.acceleration_p99 < 1.05, (one, three)
    assert three.samples == one.samples


def test_a_lost_message_splits_the_samples_instead_of_mistiming_them(limits):
    stamps = jittered_times(1.0, 0.0005, seed=3)
    reported = np.vstack([[READY], sampled(limits, stamps)[:-1]])
    keep = np.ones(len(stamps), bool)
    keep[120] = False
    segments = mm.joint_state_segments(stamps[keep], reported[keep], PERIOD)
    assert len(segments) == 2
    assert mm.sampled_peaks(segments, limits).within(ROUNDING)
    # The message after the lost one has no known time: two samples fewer than the messages.
    assert sum(len(t) for t, _ in segments) == keep.sum() - 2


def trajectory_commands(limits, ticks: np.ndarray, restart_at: float | None = None) -> list[mm.TrajectoryCommand]:
    """What the joint_trajectory output sends at `ticks`: the chased motion's `ahead`
    (command_output.py: 0.1 s of it, then a stop to rest); optionally restarted elsewhere
    (a jump) at `restart_at`."""
    chase, out = Chase(limits), []
    for t in ticks:
        motion = chase.at(t)
        if restart_at is not None and t >= restart_at:
            motion.restart(t, motion.state(t).position + 0.05)
            restart_at = None
        samples = motion.ahead(t, 0.1, PERIOD)
        out.append(mm.TrajectoryCommand(
            t, t, samples.offsets, np.array([s.position for s in samples.states]),
            np.array([s.velocity for s in samples.states]), np.array([s.acceleration for s in samples.states])))
    return out


def test_trajectory_commands_of_one_motion_are_within_limits_and_seamless(limits):
    """Sent at jittered ticks, replanned between them: every message within the limits, each
    message's first point on the previous message's trajectory (well under a cycle)."""
    commands = trajectory_commands(limits, jittered_times(1.0, 0.001, seed=4))
    peaks = mm.trajectory_peaks(commands, limits)
    assert peaks.within(ROUNDING) and peaks.velocity > 0.95, peaks
    steps = mm.trajectory_steps(commands, limits.velocity, PERIOD, 0.05)
    assert len(steps) == len(commands) - 1 and steps.max() < 0.1, steps.max()


def test_a_trajectory_restarted_elsewhere_shows_a_step_of_cycles(limits):
    commands = trajectory_commands(limits, jittered_times(0.5, 0.0005, seed=5), restart_at=0.2)
    steps = mm.trajectory_steps(commands, limits.velocity, PERIOD, 0.05)
    assert np.sum(steps > 1.0) == 1 and steps.max() > 0.05 / (2.61 * PERIOD), steps.max()


def test_the_quintic_reproduces_a_quintic():
    p = np.polynomial.Polynomial([0.3, -1.0, 2.0, 5.0, -7.0, 11.0])
    T = 0.004
    ends = [(np.array([p(t)]), np.array([p.deriv(1)(t)]), np.array([p.deriv(2)(t)])) for t in (0.0, T)]
    for s in (0.0, 0.001, 0.0025, T):
        np.testing.assert_allclose(mm.quintic(ends[0], ends[1], T, s), [p(s)], rtol=1e-12)


def test_forward_commands_are_split_where_nothing_was_sent(limits):
    times = jittered_times(1.0, 0.0005, seed=6)
    q = sampled(limits, times)
    sent = times + np.where(times > 0.5, 1.5, 0.0)   # 1.5 s without commands
    assert len(mm.split(sent, q, 0.1)) == 2
    assert mm.forward_peaks(sent, q, 0.1, limits).within(ROUNDING)


def test_a_window_forgives_timing_errors_but_not_speed(limits):
    """Samples timed up to 2 ms wrong: over one sample the velocity is off by far more than
    over 0.1 s, where a motion 10 % over its limit still shows."""
    times = PERIOD * np.arange(500)
    q = sampled(limits, times)
    wrong = times + np.random.default_rng(7).uniform(0.0, 0.002, len(times))
    assert mm.sampled_peaks([(wrong, q)], limits).velocity > 1.2
    assert mm.window_velocity([(wrong, q)], 0.1, limits.velocity) <= 1.03
    fast = q[0] + 1.1 * limits.velocity * times[:, None]
    assert mm.window_velocity([(times, fast)], 0.1, limits.velocity) == pytest.approx(1.1)


def test_each_answer_waits_for_the_next_command():
    stamps = np.array([0.0, 0.010, 0.020])
    answers = np.array([0.001, 0.0125, 0.0305])
    commands = np.array([0.004, 0.008, 0.012, 0.016, 0.028])
    np.testing.assert_allclose(mm.answer_latencies(stamps, answers, commands), [0.004, 0.006])


def test_the_trail_is_the_delay_that_fits_the_tip_best():
    stamps = np.arange(0.0, 2.0, 0.004)
    path = np.stack([np.sin(stamps), np.cos(stamps), stamps], axis=1)
    times = stamps[10:]
    tip = path[:-10] + 1e-5                     # the tip 40 ms behind the targets
    error, trail, at_trail = mm.tracking(times, tip, stamps, path)
    # Targets hold until the next: every delay within one target's period fits as well.
    assert 0.036 < trail <= 0.04 + 1e-9 and np.median(at_trail) < 1e-4 < np.median(error)


def test_peaks_combine_and_spread_reports():
    both = mm.Peaks(0.5, 0.9, 0.1, 0, 10) | mm.Peaks(0.7, 0.2, 0.3, 1, 5)
    assert both == mm.Peaks(0.7, 0.9, 0.3, 1, 15) and not both.within(1.0)
    assert mm.spread(np.array([0.001, 0.003]))['p50'] == pytest.approx(2.0)
    assert mm.spread(np.array([])) == {'count': 0}


def test_a_state_is_timed_from_the_first_sending_of_the_command_it_shows():
    sent = np.array([0.000, 0.002, 0.004, 0.006])
    commanded = np.array([[0.1, 0.2], [0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    stamps = np.array([0.007, 0.011, 0.015, 0.019])
    positions = np.array([[0.1, 0.2], [0.3, 0.4], [0.3, 0.4], [0.9, 0.9]])   # the last: no command
    delays = mm.command_to_state(sent, commanded, stamps, positions)
    assert delays == pytest.approx([0.007, 0.007, 0.011])
