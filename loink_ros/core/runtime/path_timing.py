"""Timing a planned path for ros2_control's joint_trajectory_controller: TOPP-RA (toppra) on the
configurations as knots of a cubic spline, within the joint velocity and acceleration limits,
from rest to rest; where asked, the segments a link would cross faster than a Cartesian speed
made longer (as MoveIt's limitMaxCartesianLinkSpeed does); then the velocities and
accelerations of the knots made those of the C2 cubic spline through them in time, at rest
(zero velocity and acceleration) at both ends.

TOPP-RA keeps the limits at its grid's points only, and the controller does not follow its
path spline: it joins two points that carry positions, velocities and accelerations by the
quintic matching all three at both ends (ros2_controllers' trajectory.cpp). So each segment's
quintic is checked over the whole segment, its extremes found exactly (the roots of its next
derivative, in the pieces where that one is monotone), against the velocity, acceleration and
jerk limits, and the segments that exceed one are made longer (`hold_limits`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

# A step no larger (the largest joint's, rad or m) repeats a knot: it adds no time.
SAME_KNOT = 1e-12
# A segment holds its limits when it needs no stretch beyond this share (rounding).
HOLD_TOLERANCE = 1e-9
# Bisection steps to a root in a piece of a segment's [0, 1]: to 2^-30; an extreme sits where
# the next derivative is zero, so its value moves by the square of that, below rounding.
BISECTIONS = 30
# Rounds of stretching the segments that exceed a limit (their neighbours may then exceed one)
# before the whole path is slowed uniformly instead.
STRETCH_ROUNDS = 20


class TimingError(RuntimeError):
    """The path cannot be timed within the limits (toppra's reason)."""


@dataclass
class Timing:
    """Times (N,) from 0, velocities and accelerations (N, n) at the path's configurations."""

    times: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray


@dataclass
class CartesianSpeed:
    """A link's positions (N, 3; m) at the path's configurations, and its largest speed (m/s)."""

    positions: np.ndarray
    max_speed: float


@dataclass
class Peaks:
    """The largest |velocity|, |acceleration| and |jerk| (N - 1, n) over each segment's quintic."""

    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray


def time_path(q: np.ndarray, velocity: np.ndarray, acceleration: np.ndarray,
              jerk: np.ndarray | None = None, speed: CartesianSpeed | None = None) -> Timing:
    """The timing of the configurations q (N, n) from rest to rest (module docstring), within
    the velocity, acceleration and jerk limits (n; jerk None: none) over every segment as the
    controller interpolates it, and within `speed` where given. A configuration repeating the
    one before shares its time."""
    q = np.asarray(q, float)
    at_rest = Timing(np.zeros(len(q)), np.zeros_like(q), np.zeros_like(q))
    if len(q) < 2:
        return at_rest
    moving = np.concatenate([[True], np.abs(np.diff(q, axis=0)).max(axis=1) > SAME_KNOT])
    knots = q[moving]
    if len(knots) < 2:
        return at_rest
    times = toppra_times(knots, velocity, acceleration)
    if speed is not None:
        times = within_speed(times, np.asarray(speed.positions, float)[moving], speed.max_speed)
    jerk = np.full(q.shape[1], np.inf) if jerk is None else np.asarray(jerk, float)
    timing = hold_limits(knots, spline_timing(knots, times), velocity, acceleration, jerk)
    index = np.cumsum(moving) - 1   # each configuration's knot
    return Timing(timing.times[index], timing.velocities[index], timing.accelerations[index])


def toppra_times(knots: np.ndarray, velocity: np.ndarray, acceleration: np.ndarray) -> np.ndarray:
    """TOPP-RA's times of the knots (distinct), from rest to rest, on the cubic spline through
    them over the largest joint's path length. Its grid is the knots and the midpoints between
    them. A grid interval never takes longer than its rest-to-rest quintic would: TOPP-RA's
    discretisation can leave a speed of nearly zero at both ends of one (at the path's end, or
    the only interval of a path of two knots), which would take minutes to cross."""
    import toppra
    from toppra import algorithm, constraint
    s = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(knots, axis=0)).max(axis=1))])
    grid = np.sort(np.concatenate([s, 0.5 * (s[1:] + s[:-1])]))
    path = toppra.SplineInterpolator(s, knots)
    instance = algorithm.TOPPRA([constraint.JointVelocityConstraint(velocity),
                                 constraint.JointAccelerationConstraint(acceleration)],
                                path, gridpoints=grid)
    _, sd, _ = instance.compute_parameterization(0.0, 0.0)
    if sd is None:
        raise TimingError(f'TOPP-RA found no timing within the limits '
                          f'({instance.problem_data.return_code})')
    sd = np.maximum(sd, 0.0)
    dt = 2.0 * np.diff(grid) / np.maximum(sd[1:] + sd[:-1], 1e-12)   # sd^2 is linear in s
    dt = np.minimum(dt, rest_to_rest(np.diff(path(grid), axis=0), velocity, acceleration))
    return np.concatenate([[0.0], np.cumsum(dt)])[::2]


def rest_to_rest(steps: np.ndarray, velocity: np.ndarray, acceleration: np.ndarray) -> np.ndarray:
    """Per step (M, n), the time of the quintic from rest to rest over it at the limits: its
    peaks are 15/8 step / T and 10 / sqrt(3) step / T^2."""
    steps = np.abs(steps)
    return np.maximum(15.0 / 8.0 * steps / velocity, np.sqrt(10.0 / np.sqrt(3.0) * steps / acceleration)).max(axis=1)


def within_speed(times: np.ndarray, positions: np.ndarray, max_speed: float) -> np.ndarray:
    """`times` with each segment along which `positions` (a link's, m) would move faster than
    max_speed (m/s) made long enough to match it."""
    distance = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(np.maximum(np.diff(times), distance / max_speed))])


def spline_timing(knots: np.ndarray, times: np.ndarray) -> Timing:
    """The velocities and accelerations at the knots of the C2 cubic spline through them at
    `times`, at rest at both ends: the controller's quintics follow that spline, so the
    acceleration changes smoothly between knots; zero acceleration at the ends, where the
    robot holds still before and after."""
    spline = CubicSpline(times, knots, bc_type='clamped')
    accelerations = spline(times, 2)
    accelerations[[0, -1]] = 0.0
    return Timing(times, spline(times, 1), accelerations)


def hold_limits(q: np.ndarray, timing: Timing, velocity: np.ndarray, acceleration: np.ndarray,
                jerk: np.ndarray) -> Timing:
    """`timing` of the knots q (N, n) made long enough that every segment's quintic keeps the
    limits (n; inf: none): the segments that exceed one stretched by what each needs
    (`stretched`), round after round while that makes a neighbour exceed one, as long as the
    path stays shorter than the whole path slowed by the largest stretch (the fallback after
    STRETCH_ROUNDS; dense knots on a joint path that wiggles come to it)."""
    factors = stretch_factors(segment_peaks(q, timing), velocity, acceleration, jerk)
    if factors.max() <= 1.0 + HOLD_TOLERANCE:
        return timing
    uniform = stretched(timing, np.full_like(factors, factors.max()))
    local = timing
    for _ in range(STRETCH_ROUNDS):
        local = stretched(local, factors)
        if local.times[-1] >= uniform.times[-1]:
            break
        factors = stretch_factors(segment_peaks(q, local), velocity, acceleration, jerk)
        if factors.max() <= 1.0 + HOLD_TOLERANCE:
            return local
    return uniform


def stretch_factors(peaks: Peaks, velocity: np.ndarray, acceleration: np.ndarray,
                    jerk: np.ndarray) -> np.ndarray:
    """Per segment (N - 1,), the least time scaling (>= 1) that brings its quintic within the
    limits: scaling time by k divides velocity by k, acceleration by k^2 and jerk by k^3."""
    needed = np.maximum.reduce([peaks.velocity / velocity, np.sqrt(peaks.acceleration / acceleration),
                                np.cbrt(peaks.jerk / jerk)])
    return np.maximum(needed.max(axis=1), 1.0)


def stretched(timing: Timing, factors: np.ndarray) -> Timing:
    """`timing` slowed down by `factors` (N - 1,): each knot by the larger factor of its two
    segments (its velocities divided by it, its accelerations by its square), each segment by
    the mean of its knots' factors, so that its duration follows the speeds at its ends. A
    segment and its neighbours slowed alike are the same quintic in scaled time."""
    knots = np.maximum(np.concatenate([factors[:1], factors]), np.concatenate([factors, factors[-1:]]))
    durations = np.diff(timing.times) * 0.5 * (knots[1:] + knots[:-1])
    return Timing(np.concatenate([[0.0], np.cumsum(durations)]), timing.velocities / knots[:, None],
                  timing.accelerations / (knots ** 2)[:, None])


def segment_peaks(q: np.ndarray, timing: Timing) -> Peaks:
    """The extremes over each segment of its quintic's velocity, acceleration and jerk. Those of
    a derivative lie at the segment's ends and at the roots of the next derivative, found in the
    pieces of [0, 1] where that one is monotone, which the roots of the one after it bound (the
    fourth derivative is linear: monotone on all of [0, 1])."""
    derivatives = [quintics(q, timing)]
    for _ in range(4):
        derivatives.append(derivative(derivatives[-1]))
    breaks = np.zeros(derivatives[0].shape[:-1] + (2,))
    breaks[..., 1] = 1.0
    largest = {}
    for order in (4, 3, 2):   # breaks: where derivative `order` is monotone in between
        roots = monotone_roots(derivatives[order], breaks)
        breaks = np.sort(np.concatenate([breaks, roots], axis=-1), axis=-1)
        largest[order - 1] = np.abs(evaluate(derivatives[order - 1], breaks)).max(axis=-1)
    duration = np.diff(timing.times)[:, None]
    return Peaks(largest[1] / duration, largest[2] / duration ** 2, largest[3] / duration ** 3)


def quintics(q: np.ndarray, timing: Timing) -> np.ndarray:
    """The quintic joint_trajectory_controller runs between consecutive points (ros2_controllers'
    trajectory.cpp, interpolate_between_points): per segment and joint (N - 1, n, 6), its
    coefficients, lowest order first, in the segment's own time s = t / T in [0, 1]."""
    duration = np.diff(timing.times)[:, None]
    p0, rise = q[:-1], np.diff(q, axis=0)
    v0, v1 = timing.velocities[:-1] * duration, timing.velocities[1:] * duration
    a0, a1 = timing.accelerations[:-1] * duration ** 2, timing.accelerations[1:] * duration ** 2
    return np.stack([p0, v0, 0.5 * a0,
                     0.5 * (20.0 * rise - 12.0 * v0 - 8.0 * v1 - 3.0 * a0 + a1),
                     0.5 * (-30.0 * rise + 16.0 * v0 + 14.0 * v1 + 3.0 * a0 - 2.0 * a1),
                     0.5 * (12.0 * rise - 6.0 * v0 - 6.0 * v1 - a0 + a1)], axis=-1)


def derivative(coefficients: np.ndarray) -> np.ndarray:
    """The derivatives of polynomials (..., k), lowest order first."""
    return coefficients[..., 1:] * np.arange(1, coefficients.shape[-1])


def evaluate(coefficients: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Polynomials (..., k) at points (..., m), by Horner's rule."""
    out = np.broadcast_to(coefficients[..., -1:], s.shape)
    for k in range(coefficients.shape[-1] - 2, -1, -1):
        out = out * s + coefficients[..., k:k + 1]
    return out


def monotone_roots(coefficients: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """In each piece between consecutive breaks (..., m), where the polynomials (..., k) are
    monotone, their root there, by bisection; where there is none, a point of the piece (a
    harmless extra point to look for an extreme at)."""
    low, high = breaks[..., :-1], breaks[..., 1:]
    sign = np.sign(evaluate(coefficients, low))
    for _ in range(BISECTIONS):
        middle = 0.5 * (low + high)
        same = np.sign(evaluate(coefficients, middle)) == sign
        low, high = np.where(same, middle, low), np.where(same, high, middle)
    return 0.5 * (low + high)
