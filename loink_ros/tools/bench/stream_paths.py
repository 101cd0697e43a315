"""Trajectories of the pose-streaming bench (`loink bench stream`): tip-pose targets at a fixed
rate along joint-space paths, deterministic from a seed.

Each path is a shape-preserving cubic spline (PCHIP) through collision-free knots, uniform
within the joint limits: PCHIP stays between consecutive knot values joint by joint, so it
never leaves the limits. Its knot times are stretched together until no joint exceeds a
share of its velocity limit (VELOCITY_SHARE by default), rounded onto the sample grid (so
each knot is a sample), and knots are added until the duration is filled. Every sample is checked for
self-collision; a knot ending a colliding segment is drawn again.

Kinds:
- 'smooth': the targets are the tip poses along the path (reachable everywhere);
- 'singular': every other knot is a configuration where the pose Jacobian is nearly singular
  (smallest singular value <= SINGULAR_SIGMA): the wrist's middle joint set to 0 (axes of
  the joints around it aligned), then Newton steps on the smallest singular value; the
  samples are centred on the first of them;
- 'unreachable': a smooth path whose target positions are pushed radially away from the
  base during a middle stretch, beyond the tip's certified reach and back.
"""

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import PchipInterpolator

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.velocity_limits import velocity_limits

KINDS = ('smooth', 'singular', 'unreachable')
# The fastest joint of a path moves at this share of its velocity limit, by default.
VELOCITY_SHARE = 0.9
# Shortest segment before the stretch (s): knots almost equal do not give a degenerate spline.
MIN_SEGMENT_S = 0.05
# Knots drawn (added or drawn again), or singular configurations tried, before giving up.
MAX_DRAWS = 200
# A singular knot: smallest singular value of the pose Jacobian at most this.
SINGULAR_SIGMA = 1e-4
SINGULAR_NEWTON_STEPS = 30
# Finite-difference step (rad) of the smallest singular value's gradient.
SIGMA_STEP = 1e-6
# 'unreachable': the stretch lasts this share of the duration (at most UNREACHABLE_S), the
# target's distance from the base rising over its first RAMP_SHARE to OUTSIDE_REACH times the
# reach, and back over its last.
UNREACHABLE_SHARE = 0.15
UNREACHABLE_S = 1.5
RAMP_SHARE = 0.2
OUTSIDE_REACH = 1.2


@dataclass(frozen=True)
class Path:
    """One bench trajectory of N samples for an n-joint problem.

    q is the ground truth: each sample's tip pose is the target (positions, rotations in the
    base frame) where `reachable` holds. Where it does not ('unreachable' paths), the target
    was moved off the path and q answers nothing; the steps lying beyond the reach are the
    middle of that stretch, its ramps lead there from the path and back."""

    name: str
    kind: str
    times: np.ndarray              # (N,) s, from 0 at the bench's rate
    q: np.ndarray                  # (N, n)
    positions: np.ndarray          # (N, 3) m
    rotations: np.ndarray          # (N, 3, 3)
    reachable: np.ndarray          # (N,) bool
    min_singular_value: float      # smallest singular value of the pose Jacobian along q


def paths(problem: KinematicProblem, kind: str, count: int, duration_s: float = 10.0,
          rate_hz: float = 1000.0, seed: int = 0,
          velocity_share: float = VELOCITY_SHARE) -> list[Path]:
    """`count` paths of `kind` (KINDS), `duration_s` long at `rate_hz`, the fastest joint at
    `velocity_share` of its limit; path i depends only on (seed, kind, i)."""
    if not 0.0 < velocity_share <= 1.0:
        raise ValueError(f'velocity share must lie in (0, 1], got {velocity_share!r}')
    if kind not in KINDS:
        raise ValueError(f'unknown path kind {kind!r}; use one of {KINDS}')
    times = np.arange(round(duration_s * rate_hz) + 1) / rate_hz
    return [_path(problem, kind, f'{kind}-{i}', times, rate_hz, velocity_share,
                  np.random.default_rng([seed, KINDS.index(kind), i])) for i in range(count)]


def _path(problem: KinematicProblem, kind: str, name: str, times: np.ndarray, rate_hz: float,
          velocity_share: float, rng: np.random.Generator) -> Path:
    q = _joint_path(problem, kind, times, rate_hz, velocity_share, rng)
    poses = [problem.tip_pose(row) for row in q]
    positions = np.array([p for p, _ in poses])
    rotations = np.array([r for _, r in poses])
    reachable = np.ones(len(times), dtype=bool)
    if kind == 'unreachable':
        positions, reachable = _push_beyond_reach(positions, times, problem.tip_reach)
    return Path(name, kind, times, q, positions, rotations, reachable,
                min_singular_value(problem, q))


def min_singular_value(problem: KinematicProblem, q: np.ndarray) -> float:
    """The smallest singular value of the pose Jacobian over the configurations q (N, n)."""
    return float(smallest_singular_values(problem, q).min())


def smallest_singular_values(problem: KinematicProblem, q: np.ndarray) -> np.ndarray:
    """(N,) the pose Jacobian's smallest singular value at each configuration of q (N, n)."""
    jacobians = np.array([problem.pose_jacobian(row) for row in q])
    return np.linalg.svd(jacobians, compute_uv=False)[:, -1]


def _joint_path(problem: KinematicProblem, kind: str, times: np.ndarray, rate_hz: float,
                velocity_share: float, rng: np.random.Generator) -> np.ndarray:
    """(N, n) samples of a timed PCHIP through collision-free knots, the fastest joint at
    `velocity_share` of its limit, all samples collision-free."""
    limits = velocity_limits(problem)

    def knot(index: int) -> np.ndarray:
        if kind == 'singular' and index % 2 == 1:
            return singular_configuration(problem, rng)
        return problem.sample_collision_free(1, rng)[0]

    knots = [knot(0), knot(1)]
    for _ in range(MAX_DRAWS):
        spline = _timed_spline(np.array(knots), limits, velocity_share, rate_hz)
        # A singular path's samples are centred on its first singular knot where the spline
        # allows, so that short paths pass it too (on the sample grid, as the knot).
        start = 0.0 if kind != 'singular' else max(0.0, spline.x[1] - (len(times) // 2) / rate_hz)
        if spline.x[-1] < start + times[-1]:
            knots.append(knot(len(knots)))
            continue
        # PCHIP stays between knot values; the clip only removes round-off.
        q = np.clip(spline(start + times), problem.lower, problem.upper)
        hit = _first_collision(problem, q)
        if hit is None:
            return q
        segment = int(np.searchsorted(spline.x[1:-1], start + times[hit], side='right'))
        knots[segment + 1] = knot(segment + 1)
    raise RuntimeError(f'{problem.name}: no collision-free {kind} path after {MAX_DRAWS} '
                       'knot draws')


def _timed_spline(knots: np.ndarray, limits: np.ndarray, velocity_share: float,
                  rate_hz: float) -> PchipInterpolator:
    """PCHIP through `knots` (K, n), its knot times stretched so that the fastest joint moves
    at `velocity_share` of its limit, then rounded up onto the 1 / rate_hz grid."""
    segments = np.maximum(np.max(np.abs(np.diff(knots, axis=0)) / limits, axis=1), MIN_SEGMENT_S)
    x = np.concatenate([[0.0], np.cumsum(segments)])
    # PCHIP is covariant under a uniform time scaling: velocities scale by its inverse.
    x *= np.max(peak_speeds(PchipInterpolator(x, knots)) / (velocity_share * limits))
    return PchipInterpolator(np.ceil(x * rate_hz) / rate_hz, knots)


def peak_speeds(spline: PchipInterpolator) -> np.ndarray:
    """The largest |dq/dt| of each joint over the spline (exact: per cubic piece, the
    derivative's extremes are at the piece's ends or at its vertex)."""
    c3, c2, c1 = spline.c[0], spline.c[1], spline.c[2]   # (pieces, n) each
    h = np.diff(spline.x)[:, None]
    with np.errstate(divide='ignore', invalid='ignore'):
        vertex = np.where(c3 != 0.0, -c2 / (3.0 * c3), 0.0)
    vertex = np.clip(vertex, 0.0, h)
    speeds = [np.abs(3.0 * c3 * s * s + 2.0 * c2 * s + c1) for s in (0.0, h, vertex)]
    return np.max(np.maximum.reduce(speeds), axis=0)


def _first_collision(problem: KinematicProblem, q: np.ndarray) -> int | None:
    """Index of the first sample in self-collision, None when all are free."""
    for i, row in enumerate(q):
        if problem.self_collisions(row):
            return i
    return None


def singular_configuration(problem: KinematicProblem, rng: np.random.Generator) -> np.ndarray:
    """A collision-free configuration within the limits where the pose Jacobian's smallest
    singular value is at most SINGULAR_SIGMA: from a random one with the wrist's middle joint
    (the second last) at the value nearest 0, Newton steps on that singular value (it grows
    about linearly with the distance from the singular set)."""
    wrist = problem.dim - 2
    for _ in range(MAX_DRAWS):
        q = problem.sample_collision_free(1, rng)[0]
        q[wrist] = np.clip(0.0, problem.lower[wrist], problem.upper[wrist])
        for _ in range(SINGULAR_NEWTON_STEPS):
            sigma, gradient = _sigma_and_gradient(problem, q)
            if sigma <= SINGULAR_SIGMA:
                break
            q = np.clip(q - sigma * gradient / (gradient @ gradient), problem.lower, problem.upper)
        if _sigma_and_gradient(problem, q)[0] <= SINGULAR_SIGMA and not problem.self_collisions(q):
            return q
    raise RuntimeError(f'{problem.name}: no singular configuration after {MAX_DRAWS} draws')


def _sigma_and_gradient(problem: KinematicProblem, q: np.ndarray) -> tuple[float, np.ndarray]:
    """The pose Jacobian's smallest singular value at q and its forward-difference gradient."""
    def sigma(x: np.ndarray) -> float:
        return float(np.linalg.svd(problem.pose_jacobian(x), compute_uv=False)[-1])
    at = sigma(q)
    steps = np.eye(problem.dim) * SIGMA_STEP
    return at, np.array([(sigma(q + step) - at) / SIGMA_STEP for step in steps])


def _push_beyond_reach(positions: np.ndarray, times: np.ndarray,
                       reach: float) -> tuple[np.ndarray, np.ndarray]:
    """Positions moved radially from the base during a middle stretch: their distance eases
    (smoothstep) from the path's to OUTSIDE_REACH * reach, stays there, and eases back; and the
    mask of the steps left untouched (reachable)."""
    length = min(UNREACHABLE_SHARE * times[-1], UNREACHABLE_S)
    start = 0.5 * (times[-1] - length)
    ramp = RAMP_SHARE * length
    rise = np.clip((times - start) / ramp, 0.0, 1.0)
    fall = np.clip((start + length - times) / ramp, 0.0, 1.0)
    s = np.minimum(rise, fall)
    weight = s * s * (3.0 - 2.0 * s)
    distance = np.linalg.norm(positions, axis=1)
    target = distance + weight * (OUTSIDE_REACH * reach - distance)
    return positions * (target / distance)[:, None], weight == 0.0
