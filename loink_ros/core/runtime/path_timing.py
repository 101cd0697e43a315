"""Timing a planned path: TOPP-RA (toppra) on the configurations as knots of a cubic spline,
within the joint velocity and acceleration limits, starting and ending at rest; then, where
asked, the segments a link would cross faster than a Cartesian speed stretched in time (as
MoveIt's limitMaxCartesianLinkSpeed does), their velocities and accelerations taken anew from
the timed positions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class TimingError(RuntimeError):
    """The path cannot be timed within the limits (toppra's reason)."""


@dataclass
class Timing:
    """Times (N,) from 0, velocities and accelerations (N, n) at the path's configurations."""

    times: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray


def time_path(q: np.ndarray, velocity: np.ndarray, acceleration: np.ndarray) -> Timing:
    """The time-optimal timing of the configurations q (N, n) within the velocity and
    acceleration limits (n,), from rest to rest."""
    import toppra
    from toppra import algorithm, constraint
    q = np.asarray(q, float)
    if len(q) < 2:
        return Timing(np.zeros(len(q)), np.zeros_like(q), np.zeros_like(q))
    steps = np.abs(np.diff(q, axis=0)).max(axis=1)
    moving = np.concatenate([[True], steps > 1e-12])   # a knot repeated adds no time
    s = np.concatenate([[0.0], np.cumsum(steps)])
    knots_s, knots_q = s[moving], q[moving]
    if len(knots_s) < 2:
        return Timing(np.zeros(len(q)), np.zeros_like(q), np.zeros_like(q))
    path = toppra.SplineInterpolator(knots_s, knots_q)
    instance = algorithm.TOPPRA([constraint.JointVelocityConstraint(velocity),
                                 constraint.JointAccelerationConstraint(acceleration)],
                                path, gridpoints=knots_s)
    sdd, sd, _ = instance.compute_parameterization(0.0, 0.0)
    if sd is None:
        raise TimingError(f'TOPP-RA found no timing within the limits '
                          f'({instance.problem_data.return_code})')
    sd = np.maximum(sd, 0.0)
    dt = 2.0 * np.diff(knots_s) / np.maximum(sd[1:] + sd[:-1], 1e-12)
    times = np.concatenate([[0.0], np.cumsum(dt)])
    first, second = path(knots_s, 1), path(knots_s, 2)
    sdd_at = np.concatenate([sdd, sdd[-1:]])
    velocities = first * sd[:, None]
    accelerations = first * sdd_at[:, None] + second * (sd ** 2)[:, None]
    index = np.cumsum(moving) - 1   # each configuration's knot
    return Timing(times[index], velocities[index], accelerations[index])


def limit_cartesian_speed(timing: Timing, q: np.ndarray, positions: np.ndarray,
                          max_speed: float) -> Timing:
    """`timing` with each segment along which `positions` (N, 3: a link's, m) would move faster
    than max_speed (m/s) made longer to match it; velocities and accelerations by finite
    differences of the new timing, at rest at both ends."""
    dt = np.diff(timing.times)
    distance = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    slower = np.maximum(dt, distance / max_speed)
    if np.all(slower <= dt):
        return timing
    times = np.concatenate([[0.0], np.cumsum(slower)])
    velocities = _derivative(q, times)
    return Timing(times, velocities, _derivative(velocities, times))


def _derivative(values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """d values / dt at each time (second-order finite differences), zero at both ends."""
    out = np.gradient(values, times, axis=0) if len(times) > 2 else np.zeros_like(values)
    out[0] = out[-1] = 0.0
    return out
