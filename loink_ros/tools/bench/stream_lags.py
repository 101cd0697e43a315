"""`loink bench stream-lags`: where and why LOInK's pose stream lags on the stream bench's
smooth paths, and whether it could have stayed on target from another posture.

A 7-joint arm on a full pose keeps one degree of freedom, its self-motion; the pose stream
does not say where along it the path's own configuration lies. Per path:
- lags: each stretch of off-target steps of the stream (as `loink bench stream` runs it),
  what held its first step, the stream's and the path's own smallest singular value there
  (the path's over the LEAD_S before), and how far the stream's posture was from the path's;
- restarts: the stream started on the path's own configuration every WINDOW_S, for
  WINDOW_S: how soon it lags from the path's posture;
- postures: for the first ONSETS_PER_PATH lags, the stream restarted LEAD_S before the lag
  on postures moved OFFSETS (rad of joint-space arc) along the self-motion from the path's
  own: how long each stays on target.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.continuation import smallest_singular_value
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import EXACT, PoseSolver
from loink_ros.core.runtime.pose_tracker import PoseTracker
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.pose import MODELS
from loink_ros.tools.bench.stream import DURATION_S, RATE_HZ, SEED, SMOOTHING
from loink_ros.tools.bench.stream_paths import Path, paths, smallest_singular_values

SMOOTH = 8
WINDOW_S = 1.0
LEAD_S = 0.3
ONSETS_PER_PATH = 3
OFFSETS = (-1.0, -0.5, -0.3, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
# A path passes near a singularity where its own smallest singular value is below this.
NEAR_SINGULAR = 0.01
# Sub-steps of a walk along the self-motion.
WALK_STEPS = 40


def run(robot: str, smooth: int = SMOOTH, duration_s: float = DURATION_S, seed: int = SEED,
        model: str | None = None) -> dict:
    """The JSON: per-lag records, restarts and posture offsets over `smooth` smooth paths."""
    loaded = load_model(model or MODELS.get(robot, robot))
    problem = problem_for_model(loaded)
    study = LagStudy(PoseSolver(LOInKSolver(loaded, problem)), velocity_limits(problem))
    records, restarts, postures, steps, off = [], [], [], 0, 0
    with threadpool_limits(1):
        for path in tqdm(paths(problem, 'smooth', smooth, duration_s, RATE_HZ, seed),
                         desc='smooth', unit='path'):
            path_lags = study.lags(path)
            records += path_lags
            steps += len(path.times) - 1
            off += sum(lag['duration_ms'] for lag in path_lags)
            restarts += study.restarts(path)
            postures += [study.postures(path, lag) for lag in path_lags[:ONSETS_PER_PATH]]
    return {'robot': robot, 'model': loaded.name, 'model_version': loaded.version,
            'rate_hz': RATE_HZ, 'duration_s': duration_s, 'smooth_paths': smooth, 'seed': seed,
            'window_s': WINDOW_S, 'lead_s': LEAD_S, 'near_singular_sigma': NEAR_SINGULAR,
            'summary': _summary(records, restarts, postures, steps, off, duration_s * smooth),
            'lags': records, 'postures': postures}


class LagStudy:
    """The bench's stream (PoseTracker, the node's defaults) on one problem."""

    def __init__(self, pose_solver: PoseSolver, limits: np.ndarray):
        self.pose_solver, self.problem, self.limits = pose_solver, pose_solver.problem, limits

    def follow(self, path: Path, start: int, stop: int, q0: np.ndarray) -> list:
        """The stream's steps for samples start + 1 .. stop - 1, started at q0."""
        tracker = PoseTracker(self.pose_solver, self.limits, smoothing=SMOOTHING)
        tracker.reset(q0)
        return [tracker.step(PoseTarget(path.positions[k], path.rotations[k]), 1.0 / RATE_HZ)
                for k in range(start + 1, stop)]

    def lags(self, path: Path) -> list[dict]:
        """Every off-target stretch of the stream along the whole path."""
        steps = self.follow(path, 0, len(path.times), path.q[0])
        sigma = smallest_singular_values(self.problem, path.q)
        lead = round(LEAD_S * RATE_HZ)
        out = []
        for first, length in _stretches([not s.on_target for s in steps]):
            k, step = first + 1, steps[first]
            out.append({'path': path.name, 'start_s': k / RATE_HZ, 'duration_ms': length,
                        'held_by': step.lag,
                        'stream_sigma': smallest_singular_value(self.problem, step.q),
                        'path_sigma': float(sigma[max(0, k - lead):k + 1].min()),
                        'posture_distance_rad': float(np.abs(step.q - path.q[k]).max())})
        return out

    def restarts(self, path: Path) -> list[int | None]:
        """Per window: ms until the stream started on the path's configuration lags (None:
        on target throughout)."""
        window = round(WINDOW_S * RATE_HZ)
        out = []
        for start in range(0, len(path.times) - window, window):
            on = [s.on_target for s in self.follow(path, start, start + window + 1, path.q[start])]
            out.append(next((i + 1 for i, ok in enumerate(on) if not ok), None))
        return out

    def postures(self, path: Path, lag: dict) -> dict:
        """From LEAD_S before the lag, per offset along the self-motion: ms on target within
        WINDOW_S (None: the walk found no posture there inside the limits)."""
        start = max(0, round(lag['start_s'] * RATE_HZ) - round(LEAD_S * RATE_HZ))
        stop = min(len(path.times), start + round(WINDOW_S * RATE_HZ) + 1)
        target = PoseTarget(path.positions[start], path.rotations[start])
        held = {}
        for offset in OFFSETS:
            q = self_motion_offset(self.pose_solver, path.q[start], target, offset)
            if q is None:
                held[offset] = None
                continue
            on = [s.on_target for s in self.follow(path, start, stop, q)]
            held[offset] = next((i for i, ok in enumerate(on) if not ok), len(on))
        return {'path': lag['path'], 'start_s': start / RATE_HZ, 'window_ms': stop - start - 1,
                'on_target_ms': {f'{offset:g}': ms for offset, ms in held.items()}}


def self_motion_offset(pose_solver: PoseSolver, q: np.ndarray, target: PoseTarget,
                       arc: float) -> np.ndarray | None:
    """The configuration `arc` rad of joint-space arc along the self-motion from q (on
    `target`), in WALK_STEPS steps along the pose Jacobian's null vector, each refined back
    onto the target inside the joint limits; None where a step falls off the pose."""
    problem, n = pose_solver.problem, pose_solver.problem.dim
    direction = None
    for _ in range(WALK_STEPS):
        null = np.linalg.svd(problem.pose_jacobian(q))[2][-1]
        direction = null if direction is None or null @ direction >= 0.0 else -null
        start = np.clip(q + direction * arc / WALK_STEPS, problem.lower, problem.upper)
        row = pose_solver.refine(start[None], target, problem.lower, problem.upper, None, 0.0, 0)[0]
        if row[n] > EXACT[0] or row[n + 1] > EXACT[1]:
            return None
        q = row[:n]
    return q


def _summary(lags: list[dict], restarts: list, postures: list[dict], steps: int, off: int,
             seconds: float) -> dict:
    held = [lag['held_by'].split(' of ')[0] for lag in lags]
    durations = np.array([lag['duration_ms'] for lag in lags], float)
    singular = sum(lag['duration_ms'] for lag in lags if lag['path_sigma'] < NEAR_SINGULAR)
    lagged = [ms for ms in restarts if ms is not None]
    own = [p['on_target_ms']['0'] for p in postures]
    other = [min((abs(float(o)) for o, ms in p['on_target_ms'].items()
                  if ms == p['window_ms'] and float(o) != 0.0), default=None) for p in postures]
    found = [o for o in other if o is not None]
    return {
        'steps': steps, 'on_target_share': 1.0 - off / steps, 'lags': len(lags),
        'lags_per_s': len(lags) / seconds,
        'lag_ms': {'median': float(np.median(durations)), 'max': float(durations.max())}
        if lags else None,
        'lags_held_by': {reason: held.count(reason) for reason in sorted(set(held))},
        'off_target_share_after_the_path_near_a_singularity': singular / off if off else 0.0,
        'restarts': len(restarts), 'restarts_lagging_within_window': len(lagged) / len(restarts)
        if restarts else 0.0,
        'restart_ms_to_lag_median': float(np.median(lagged)) if lagged else None,
        'postures_studied': len(postures),
        'path_posture_lags_within_window': sum(
            ms < p['window_ms'] for ms, p in zip(own, postures) if ms is not None),
        'another_posture_stays_on_target': len(found),
        'nearest_such_offset_rad_median': float(np.median(found)) if found else None}


def _stretches(flags: list[bool]) -> list[tuple[int, int]]:
    """(first index, length) of each run of True."""
    out, first = [], None
    for i, flag in enumerate([*flags, False]):
        if flag and first is None:
            first = i
        elif not flag and first is not None:
            out.append((first, i - first))
            first = None
    return out
