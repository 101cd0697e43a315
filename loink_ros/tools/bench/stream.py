"""`loink bench stream`: streaming full poses at 1 kHz, LOInK's PoseTracker against TRAC-IK
(Distance and Speed, seeded with the previous answer) and pink, on the same trajectories.

Trajectories (tools/bench/stream_paths.py): smooth joint-space splines through collision-free
configurations uniform in the URDF limits, within a share of the velocity limits, their
tip poses the targets; paths through near-singular configurations; paths whose targets leave
the reachable set for a while. Every method starts each path at its first configuration and
gets one target per step, dt = 1 / rate.

Per method: tracking error where the target is reachable (position and rotation, by
Pinocchio), the share of those steps on target (1e-5 m and 1e-4 rad), branch flips (a step
of some joint beyond FLIP_FACTOR x its velocity limit x dt), velocity-limit violations (beyond
the limit x dt), steps outside the joint limits, mean cost along the path and the wall time
of each step.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.baselines.stream_baselines import stream_baselines
from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseSolver
from loink_ros.core.runtime.pose_tracker import PoseTracker
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.pose import MODELS
from loink_ros.tools.bench.stream_paths import VELOCITY_SHARE, paths
from loink_ros.tools.bench.timing import load_average

RATE_HZ = 1000.0
DURATION_S = 10.0
DEFAULT_SMOOTH = 200
# Near-singular and leaving-the-reach paths per smooth path count: the 50 of 200.
SPECIAL_SHARE = 0.25
FLIP_FACTOR = 1.5
SEED = 20261203
# The smoothing mu_s of LOInK's stream in the bench (the node's default).
SMOOTHING = 0.0


class LOInKStream:
    """PoseTracker behind the baselines' reset/step interface."""

    name = 'loink'

    def __init__(self, pose_solver: PoseSolver, limits: np.ndarray, smoothing: float):
        self.tracker = PoseTracker(pose_solver, limits, smoothing=smoothing)

    def reset(self, q0: np.ndarray) -> None:
        self.tracker.reset(q0)

    def step(self, position: np.ndarray, rotation: np.ndarray, dt: float) -> np.ndarray:
        return self.tracker.step(PoseTarget(position, rotation), dt).q


def run(robot: str, smooth: int = DEFAULT_SMOOTH, duration_s: float = DURATION_S,
        seed: int = SEED, model: str | None = None, smoothing: float = SMOOTHING,
        velocity_share: float = VELOCITY_SHARE, baselines: bool = True) -> dict:
    """The bench's JSON; `baselines` False runs LOInK alone (the baselines take most of
    the time: TRAC-IK Distance uses its whole millisecond per step)."""
    loaded = load_model(model or MODELS.get(robot, robot))
    problem = problem_for_model(loaded)
    limits = velocity_limits(problem)
    methods = [LOInKStream(PoseSolver(LOInKSolver(loaded, problem)), limits, smoothing),
               *(stream_baselines(problem) if baselines else [])]
    special = max(1, round(SPECIAL_SHARE * smooth))
    counts = {'smooth': smooth, 'singular': special, 'unreachable': special}
    before = load_average()
    rows = {m.name: [] for m in methods}
    with threadpool_limits(1):
        for kind, count in counts.items():
            for path in tqdm(paths(problem, kind, count, duration_s, RATE_HZ, seed, velocity_share),
                             desc=kind, unit='path'):
                for method in methods:
                    rows[method.name].append(follow(problem, limits, method, path))
    return {'robot': robot, 'model': loaded.name, 'model_version': loaded.version,
            'rate_hz': RATE_HZ, 'duration_s': duration_s, 'paths': counts, 'seed': seed,
            'loink_smoothing': smoothing, 'velocity_limits': limits.tolist(),
            'path_velocity_share': velocity_share,
            'on_target': f'position <= {TOLERANCE[0]:g} m and rotation <= {TOLERANCE[1]:g} rad',
            'flip': f'a step of some joint beyond {FLIP_FACTOR} x its velocity limit x dt',
            'load_average_before': before, 'load_average_after': load_average(),
            'methods': {name: summary(r) for name, r in rows.items()}}


def follow(problem, limits: np.ndarray, method, path) -> dict:
    """One method along one path, one target per step of the path's rate: its answers
    judged step by step."""
    dt = float(path.times[1] - path.times[0])
    method.reset(path.q[0])
    q, ms = np.empty_like(path.q), np.empty(len(path.times))
    for k in range(len(path.times)):
        began = time.perf_counter()
        q[k] = method.step(path.positions[k], path.rotations[k], dt)
        ms[k] = 1e3 * (time.perf_counter() - began)
    errors = np.array([pose_error(problem, qk, PoseTarget(p, r))
                       for qk, p, r in zip(q, path.positions, path.rotations)])
    position, rotation = np.linalg.norm(errors[:, :3], axis=1), np.linalg.norm(errors[:, 3:], axis=1)
    steps = np.abs(np.diff(np.vstack([path.q[:1], q]), axis=0)) / (limits * dt)
    reach = path.reachable
    return {'kind': path.kind, 'position': position[reach], 'rotation': rotation[reach],
            'on_target': (position[reach] <= TOLERANCE[0]) & (rotation[reach] <= TOLERANCE[1]),
            'flips': int(np.sum(steps.max(axis=1) > FLIP_FACTOR)),
            'velocity_violations': int(np.sum(steps.max(axis=1) > 1.0 + 1e-9)),
            'outside_limits': int(np.sum(np.any((q < problem.lower - 1e-12)
                                                | (q > problem.upper + 1e-12), axis=1))),
            'cost': float(np.mean(problem.cost(q))), 'path_cost': float(np.mean(problem.cost(path.q))),
            'ms': ms}


def summary(rows: list[dict]) -> dict:
    """Per kind of path and over all: the bench's figures of one method."""
    out = {}
    for kind in ('all', *sorted({r['kind'] for r in rows})):
        chosen = [r for r in rows if kind == 'all' or r['kind'] == kind]
        position = np.concatenate([r['position'] for r in chosen])
        rotation = np.concatenate([r['rotation'] for r in chosen])
        on = np.concatenate([r['on_target'] for r in chosen])
        ms = np.concatenate([r['ms'] for r in chosen])
        out[kind] = {
            'paths': len(chosen), 'reachable_steps': int(on.size),
            'on_target_share': float(on.mean()),
            'paths_fully_on_target': int(sum(r['on_target'].all() for r in chosen)),
            'position_error_m': _spread(position), 'rotation_error_rad': _spread(rotation),
            'branch_flips': int(sum(r['flips'] for r in chosen)),
            'paths_with_a_flip': int(sum(r['flips'] > 0 for r in chosen)),
            'velocity_violations': int(sum(r['velocity_violations'] for r in chosen)),
            'steps_outside_limits': int(sum(r['outside_limits'] for r in chosen)),
            'mean_cost': float(np.mean([r['cost'] for r in chosen])),
            'mean_path_cost': float(np.mean([r['path_cost'] for r in chosen])),
            'step_ms': {'p50': float(np.median(ms)), 'p99': float(np.percentile(ms, 99)),
                        'max': float(ms.max())}}
    return out


def _spread(values: np.ndarray) -> dict:
    return {'median': float(np.median(values)), 'p99': float(np.percentile(values, 99)),
            'max': float(values.max())}
