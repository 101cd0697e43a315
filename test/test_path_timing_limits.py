"""The timing of a path as joint_trajectory_controller runs it (core/runtime/path_timing.py):
between two points that carry positions, velocities and accelerations the controller follows
the quintic matching all three at both ends. Each segment's quintic, sampled densely here by a
quintic solved independently, keeps the velocity, acceleration and jerk limits; a timing that
exceeds one only between its points is found and made longer."""
from pathlib import Path

import numpy as np
import pytest
from numpy.polynomial import polynomial

from loink_ros.core.motion.joint_limits import joint_limits
from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.path_timing import (
    Timing,
    hold_limits,
    quintics,
    segment_peaks,
    spline_timing,
    stretch_factors,
    time_path,
    toppra_times,
)
from loink_ros.tools.bench.stream_paths import paths

PANDA_LIMITS = Path(__file__).resolve().parents[1] / 'config' / 'joint_limits' / 'panda.yaml'
SAMPLES = 400   # per segment, both ends included
# Relative slack of a sampled extreme over its limit: rounding of the times and the solve.
SLACK = 1e-6


def controller_quintics(q: np.ndarray, timing: Timing) -> np.ndarray:
    """Per segment and joint (N - 1, n, 6), in time from the segment's start, the quintic with
    the points' positions, velocities and accelerations at both ends (a 6 x 6 solve each)."""
    duration = np.diff(timing.times)
    rows = []
    for T in duration:
        rows.append([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0],
                     [1, T, T ** 2, T ** 3, T ** 4, T ** 5],
                     [0, 1, 2 * T, 3 * T ** 2, 4 * T ** 3, 5 * T ** 4],
                     [0, 0, 2, 6 * T, 12 * T ** 2, 20 * T ** 3]])
    ends = np.stack([q[:-1], timing.velocities[:-1], timing.accelerations[:-1],
                     q[1:], timing.velocities[1:], timing.accelerations[1:]], axis=1)   # (N-1, 6, n)
    return np.linalg.solve(np.array(rows, float), ends).transpose(0, 2, 1)


def sampled_peaks(q: np.ndarray, timing: Timing) -> list[np.ndarray]:
    """The largest |velocity|, |acceleration| and |jerk| (N - 1, n) of each segment's quintic at
    SAMPLES times."""
    coefficients = controller_quintics(q, timing)
    out = []
    for order in (1, 2, 3):
        derived = polynomial.polyder(coefficients, order, axis=-1)
        largest = np.empty(coefficients.shape[:2])
        for i, T in enumerate(np.diff(timing.times)):
            values = polynomial.polyval(np.linspace(0.0, T, SAMPLES), derived[i].T, tensor=True)
            largest[i] = np.abs(values).max(axis=-1)
        out.append(largest)
    return out


def random_timing(rng: np.random.Generator, segments: int, joints: int) -> tuple[np.ndarray, Timing]:
    q = np.cumsum(rng.normal(0.0, 0.05, (segments + 1, joints)), axis=0)
    times = np.concatenate([[0.0], np.cumsum(rng.uniform(0.005, 0.1, segments))])
    return q, Timing(times, rng.normal(0.0, 1.0, q.shape), rng.normal(0.0, 10.0, q.shape))


def test_the_quintics_are_the_controllers():
    """quintics (in the segment's own time) against the 6 x 6 solve: the same polynomial."""
    q, timing = random_timing(np.random.default_rng(1), 50, 3)
    duration = np.diff(timing.times)[:, None, None]
    powers = duration ** np.arange(6)
    assert np.allclose(quintics(q, timing), controller_quintics(q, timing) * powers, rtol=1e-9, atol=1e-12)


def test_the_peaks_are_the_extremes_over_each_segment():
    """segment_peaks, exact, against dense samples: never below them, and above by no more
    than sampling misses."""
    q, timing = random_timing(np.random.default_rng(2), 200, 3)
    peaks = segment_peaks(q, timing)
    for exact, sampled in zip((peaks.velocity, peaks.acceleration, peaks.jerk), sampled_peaks(q, timing)):
        assert np.all(exact >= sampled * (1 - 1e-12))
        assert np.all(exact <= sampled * (1 + 1e-4))


def assert_within(q: np.ndarray, timing: Timing, velocity, acceleration, jerk) -> None:
    v, a, j = sampled_peaks(q, timing)
    assert np.all(v <= velocity * (1 + SLACK)), (v / velocity).max()
    assert np.all(a <= acceleration * (1 + SLACK)), (a / acceleration).max()
    assert np.all(j <= jerk * (1 + SLACK)), (j / jerk).max()


def test_a_velocity_beyond_the_limit_only_between_points_is_found_and_stretched():
    """From rest to 1 rad/s over 1 rad in 1 s: every point within 1 rad/s, but the quintic must
    go faster in between to cover the radian."""
    q = np.array([[0.0], [1.0], [2.0]])
    timing = Timing(np.array([0.0, 1.0, 2.0]), np.array([[0.0], [1.0], [0.0]]), np.zeros((3, 1)))
    velocity, acceleration, jerk = np.array([1.0]), np.array([100.0]), np.array([np.inf])
    assert stretch_factors(segment_peaks(q, timing), velocity, acceleration, jerk).max() > 1.1
    held = hold_limits(q, timing, velocity, acceleration, jerk)
    assert held.times[-1] > 2.0
    assert_within(q, held, velocity, acceleration, jerk)


def test_an_acceleration_switched_at_a_point_is_found_and_stretched():
    """TOPP-RA's kind of point data: +A throughout a segment (its end's position and velocity
    those of constant +A), then -A at its end. Both points are within A; the quintic joining
    them is not."""
    A, T = 5.0, 0.1
    q = np.array([[0.0], [0.5 * A * T ** 2], [A * T ** 2]])
    timing = Timing(np.array([0.0, T, 2 * T]), np.array([[0.0], [A * T], [0.0]]),
                    np.array([[A], [-A], [-A]]))
    velocity, acceleration, jerk = np.array([10.0]), np.array([A]), np.array([np.inf])
    assert segment_peaks(q, timing).acceleration.max() > 1.5 * A
    held = hold_limits(q, timing, velocity, acceleration, jerk)
    assert_within(q, held, velocity, acceleration, jerk)


def test_two_configurations_take_the_rest_to_rest_quintics_time():
    """A path of two configurations (once 4e10 s: TOPP-RA on two points cannot leave rest):
    exactly the time the rest-to-rest quintic needs for its most demanding joint and limit
    (peaks 15/8 h/T, 10/sqrt(3) h/T^2, 60 h/T^3)."""
    rise = np.array([0.3, -0.1])
    velocity, acceleration, jerk = np.array([2.0, 2.0]), np.array([5.0, 1.0]), np.array([500.0, 50.0])
    timing = time_path(np.array([[0.0, 0.0], rise]), velocity, acceleration, jerk)
    h = np.abs(rise)
    needed = np.max([15 / 8 * h / velocity, np.sqrt(10 / np.sqrt(3) * h / acceleration), np.cbrt(60 * h / jerk)])
    assert timing.times[-1] == pytest.approx(needed, rel=1e-6)


def test_a_grid_interval_toppra_would_crawl_across_takes_no_longer_than_from_rest_to_rest():
    """Five points on which TOPP-RA leaves a speed of nearly zero at both ends of one interval
    of its grid (crossed at that speed: 199 s). No slower than stopping at every point would
    be (the rest-to-rest quintics' times, 4.5 s), with some margin, and within the limits."""
    q = np.array([[-0.39, -0.26], [-0.17, -0.27], [-0.23, 0.06], [-0.48, -0.06], [-0.58, 0.06]])
    velocity, acceleration, jerk = np.ones(2), np.ones(2), np.full(2, np.inf)
    h = np.abs(np.diff(q, axis=0))
    stopping = np.max([15 / 8 * h / velocity, np.sqrt(10 / np.sqrt(3) * h / acceleration)], axis=(0, 2)).sum()
    timing = time_path(q, velocity, acceleration)
    assert timing.times[-1] <= 1.5 * stopping
    assert_within(q, timing, velocity, acceleration, jerk)


@pytest.fixture(scope='module')
def panda():
    return make_problem('panda_full')


@pytest.fixture(scope='module')
def limits(panda):
    """config/joint_limits/panda.yaml over the URDF."""
    return joint_limits(list(panda.joint_names), panda.lower, panda.upper, velocity_limits(panda), PANDA_LIMITS)


@pytest.mark.parametrize('kind', ['smooth', 'singular'])
@pytest.mark.parametrize('with_jerk', [True, False])
def test_a_panda_path_keeps_the_files_limits_between_points(panda, limits, kind, with_jerk):
    """The stream bench's joint paths (3 s at 100 Hz), timed from rest to rest with the
    Panda's limits file: TOPP-RA's timing at the points alone exceeds the acceleration limit
    between them; time_path's keeps every limit over every segment."""
    q = paths(panda, kind, 1, 3.0, 100.0, 20261205)[0].q
    jerk = limits.jerk if with_jerk else None
    at_points = spline_timing(q, toppra_times(q, limits.velocity, limits.acceleration))
    assert (sampled_peaks(q, at_points)[1] / limits.acceleration).max() > 1.0 + 1e-3
    timing = time_path(q, limits.velocity, limits.acceleration, jerk)
    assert np.all(np.diff(timing.times) > 0) and timing.times[-1] >= at_points.times[-1]
    assert np.allclose(timing.velocities[[0, -1]], 0.0) and np.allclose(timing.accelerations[[0, -1]], 0.0)
    assert_within(q, timing, limits.velocity, limits.acceleration, np.full(7, np.inf) if jerk is None else jerk)
