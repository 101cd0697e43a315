"""`loink bench cartesian`: whole Cartesian paths planned at once (core/runtime/cartesian_path.py)
against the pose stream and MoveIt's CartesianInterpolator (KDL and the LOInK plugin), on the
same paths, in one run.

Timed paths: the pose stream bench's (tools/bench/stream_paths.py), smooth, near-singular and
leaving the reach, 10 s each, waypoints at 100 Hz with their times, from the path's first
configuration. Each is feasible by construction where it stays in reach (a joint-space path at
0.9 of the velocity limits). Per method: the share of reachable waypoints on target (1e-5 m,
1e-4 rad), branch flips (a step of some joint beyond FLIP_FACTOR x its velocity limit x dt),
velocity-limit violations at the path's timing, steps outside the limits, mean cost against the
path's own; for the leaving-the-reach paths the longest valid prefix (and for the plan its
fraction). MoveIt's interpolator gets the same waypoints (the group tip's poses) through the
waypoints overload: its fraction and its jumps (a joint moving more than 0.3 rad between
consecutive states).

Untimed paths: `loink bench moveit-cartesian`'s straight lines and rotations from random
starts (the Panda only: moveit_resources' Panda, as MoveIt runs them), the plan taking the
group tip's poses in MoveIt's 1 cm steps as the path service plans them (its smoothing and
default step bound): completed paths and jumps beside the interpolator's
with either plugin, and the completed paths' shape by the public benchmarks' criteria
(path_shape.py: CppFlow's 7 deg step, the joint-space length, the roughness), the plan against
the interpolator with KDL on the paths both completed.

Planning time per waypoint: the plan (beam and dynamic programming) and its timing (TOPP-RA)
apart. avoid_collisions: a share of the smooth paths planned free of self-collision, every
waypoint checked.
"""

from __future__ import annotations

import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.cartesian_path import (
    UNTIMED_MAX_JOINT_STEP,
    UNTIMED_SMOOTHING,
    WIDE_BEAM,
    CartesianPlanner,
    PathRequest,
    interpolate,
)
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.path_timing import time_path
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools import moveit_plugin
from loink_ros.tools.bench import moveit_cartesian, path_shape
from loink_ros.tools.bench.pose import MODELS
from loink_ros.tools.bench.stream import FLIP_FACTOR, LOInKStream, follow, summary
from loink_ros.tools.bench.stream_paths import paths
from loink_ros.tools.bench.timing import load_average

RATE_HZ = 100.0
DURATION_S = 10.0
DEFAULT_SMOOTH = 200
SPECIAL_SHARE = 0.25
SEED = 20261203
# Acceleration limits of the untimed paths' timing (rad/s^2): config/panda_full.yaml's.
ACCELERATION = 10.0
# Share of the smooth paths planned with avoid_collisions.
COLLISION_SHARE = 0.02
MAX_STEP = 0.01


def run(robot: str, smooth: int = DEFAULT_SMOOTH, duration_s: float = DURATION_S,
        seed: int = SEED, moveit: bool = True) -> dict:
    name = MODELS.get(robot, robot)
    model = load_model(name)
    problem = problem_for_model(model)
    pose_solver = PoseSolver(LOInKSolver(model, problem))
    limits = velocity_limits(problem)
    planner = CartesianPlanner(pose_solver, limits)
    special = max(1, round(SPECIAL_SHARE * smooth))
    counts = {'smooth': smooth, 'singular': special, 'unreachable': special}
    out = {'robot': robot, 'model': model.name, 'model_version': model.version, 'rate_hz': RATE_HZ,
           'duration_s': duration_s, 'paths': counts, 'seed': seed,
           'on_target': f'position <= {TOLERANCE[0]:g} m and rotation <= {TOLERANCE[1]:g} rad',
           'flip': f'a step of some joint beyond {FLIP_FACTOR} x its velocity limit x dt',
           'load_average_before': load_average()}
    timed, stream, plan_ms, moveit_cases = [], [], [], []
    with threadpool_limits(1), TemporaryDirectory() as folder:
        for kind, count in counts.items():
            for path in tqdm(paths(problem, kind, count, duration_s, RATE_HZ, seed),
                             desc=kind, unit='path'):
                poses = [PoseTarget(p, r) for p, r in zip(path.positions, path.rotations)]
                began = time.perf_counter()
                plan = planner.plan(PathRequest(poses, path.q[0], path.times))
                plan_ms.append(1e3 * (time.perf_counter() - began) / len(poses))
                timed.append(_judge(problem, limits, path, plan))
                stream.append(follow(problem, limits, LOInKStream(pose_solver, limits, 0.0), path))
                moveit_cases.append(path)
        out['plan'] = _plan_summary(timed)
        out['stream'] = summary(stream)['all']
        out['plan_ms_per_waypoint'] = path_shape.spread(np.array(plan_ms))
        out['collisions'] = _collisions(problem, planner, max(1, round(COLLISION_SHARE * smooth)),
                                        duration_s, seed)
        if moveit and moveit_plugin.built():
            arm = moveit_cartesian.arm(name, Path(folder))
            out['moveit_interpolator'] = _interpolator(arm, problem, moveit_cases, Path(folder))
            if name == 'panda_full':
                out['lines_and_rotations'] = _untimed(arm, problem, planner, Path(folder))
    out['load_average_after'] = load_average()
    return out


def _judge(problem, limits: np.ndarray, path, plan) -> dict:
    """A timed plan along its path, judged as the stream bench judges a stream."""
    q = plan.q
    dt = float(path.times[1] - path.times[0])
    errors = np.array([pose_error(problem, qk, PoseTarget(p, r))
                       for qk, p, r in zip(q, path.positions, path.rotations)])
    position, rotation = np.linalg.norm(errors[:, :3], axis=1), np.linalg.norm(errors[:, 3:], axis=1)
    steps = np.abs(np.diff(q, axis=0)) / (limits * dt)
    reach = path.reachable[:len(q)]
    on = (position[reach] <= TOLERANCE[0]) & (rotation[reach] <= TOLERANCE[1])
    return {'kind': path.kind, 'on_target': on, 'reached': plan.reached, 'poses': len(path.times),
            'flips': int(np.sum(steps.max(axis=1) > FLIP_FACTOR)),
            'velocity_violations': int(np.sum(steps.max(axis=1) > 1.0 + 1e-9)),
            'outside_limits': int(np.sum(np.any((q < problem.lower - 1e-12)
                                                | (q > problem.upper + 1e-12), axis=1))),
            'cost': float(np.mean(problem.cost(q))), 'path_cost': float(np.mean(problem.cost(path.q))),
            'wide_beam': plan.beam == WIDE_BEAM}


def _plan_summary(rows: list[dict]) -> dict:
    out = {}
    for kind in ('all', *sorted({r['kind'] for r in rows})):
        chosen = [r for r in rows if kind == 'all' or r['kind'] == kind]
        on = np.concatenate([r['on_target'] for r in chosen])
        out[kind] = {'paths': len(chosen), 'reachable_steps': int(on.size),
                     'on_target_share': float(on.mean()),
                     'paths_fully_on_target': int(sum(r['on_target'].all() for r in chosen)),
                     'paths_planned_again_with_the_wide_beam': int(sum(r['wide_beam'] for r in chosen)),
                     'branch_flips': int(sum(r['flips'] for r in chosen)),
                     'velocity_violations': int(sum(r['velocity_violations'] for r in chosen)),
                     'steps_outside_limits': int(sum(r['outside_limits'] for r in chosen)),
                     'mean_cost': float(np.mean([r['cost'] for r in chosen])),
                     'mean_path_cost': float(np.mean([r['path_cost'] for r in chosen])),
                     'valid_prefix_fraction': path_shape.spread(np.array([r['reached'] / r['poses']
                                                                for r in chosen]))}
    return out


def _collisions(problem, planner: CartesianPlanner, count: int, duration_s: float, seed: int) -> dict:
    """Smooth paths planned with avoid_collisions: every waypoint checked."""
    checked = colliding = 0
    for path in paths(problem, 'smooth', count, duration_s, RATE_HZ, seed + 1):
        poses = [PoseTarget(p, r) for p, r in zip(path.positions, path.rotations)]
        plan = planner.plan(PathRequest(poses, path.q[0], path.times, avoid_collisions=True))
        checked += len(plan.q)
        colliding += sum(bool(problem.self_collisions(q)) for q in plan.q)
    return {'paths': count, 'waypoints_checked': checked, 'self_colliding': colliding}


def _interpolator(arm: moveit_cartesian.Robot, problem, cases: list, folder: Path) -> dict:
    """MoveIt's CartesianInterpolator through the waypoints of each path, with each plugin."""
    from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
    offset = problem.rigid_links()[arm.tip] if arm.tip != problem.tip_frame else None
    lines = []
    for path in cases:   # the path's targets (beyond reach where it leaves it), of the group tip
        poses = [_link(PoseTarget(p, r), offset) for p, r in zip(path.positions, path.rotations)]
        start = ' '.join(f'{v:.17g}' for v in path.q[0])
        body = ' '.join(' '.join(f'{v:.17g}' for v in (*t.position, *matrix_quaternion(t.rotation)))
                        for t in poses[1:])
        lines.append(f'waypoints {start} {len(poses) - 1} {body}')
    out = {}
    for name, (plugin, parameters) in _plugins(arm).items():
        results = moveit_cartesian.run_plugin(arm, plugin, parameters, lines, folder)
        fractions = np.array([r['fraction'] for r in results])
        jumps = np.array([len(r['states']) > 1 and np.abs(np.diff(np.array(r['states']), axis=0)).max()
                          > moveit_cartesian.JUMP for r in results])
        kinds = np.array([path.kind for path in cases])
        out[name] = {kind: {'mean_fraction': float(fractions[kinds == kind].mean()),
                            'completed': float(np.mean(fractions[kinds == kind] >= 1 - 1e-12)),
                            'paths_with_a_jump': int(jumps[kinds == kind].sum())}
                     for kind in ('smooth', 'singular', 'unreachable')}
    return out


def _plugins(arm: moveit_cartesian.Robot) -> dict[str, tuple[str, list[str]]]:
    return {'loink': ('loink_kinematics/LOInKKinematicsPlugin', moveit_cartesian.loink_parameters(arm.model)),
            'kdl': (moveit_cartesian.KDL, moveit_cartesian.kdl_parameters())}


def _untimed(arm: moveit_cartesian.Robot, problem, planner: CartesianPlanner, folder: Path) -> dict:
    """The continuity bench's lines and rotations: the plan beside MoveIt's interpolator, the
    group tip's poses in MoveIt's 1 cm steps, from the same starts."""
    families = moveit_cartesian.cases(arm, 500, 200, 0)
    offset = problem.rigid_links()[arm.tip] if arm.tip != problem.tip_frame else None
    out = {}
    for family in ('lines', 'rotations'):
        completed, jumps, dp_ms, timing_ms, planned = [], 0, [], [], []
        for line in families[family]:
            q0, start, goal = _case(line, problem, offset)
            poses = [_tip(p, offset) for p in interpolate(start, [goal], MAX_STEP)[0]]
            began = time.perf_counter()
            plan = planner.plan(PathRequest(poses, q0, jump=np.full(problem.dim, UNTIMED_MAX_JOINT_STEP),
                                            smoothing=UNTIMED_SMOOTHING))
            dp_ms.append(1e3 * (time.perf_counter() - began) / len(poses))
            completed.append(plan.complete)
            planned.append(plan.q if plan.complete else None)
            if len(plan.q) > 1:
                jumps += int(np.abs(np.diff(plan.q, axis=0)).max() > moveit_cartesian.JUMP)
                began = time.perf_counter()
                time_path(plan.q, velocity_limits(problem), np.full(problem.dim, ACCELERATION))
                timing_ms.append(1e3 * (time.perf_counter() - began) / len(plan.q))
        interpolators, followed = {}, {}
        for name, (plugin, parameters) in _plugins(arm).items():
            results = moveit_cartesian.run_plugin(arm, plugin, parameters, families[family], folder)
            interpolators[name] = moveit_cartesian.path_figures(problem, results)
            followed[name] = [np.array(r['states']) if r['fraction'] >= 1.0 - 1e-12 else None
                              for r in results]
        shapes = {'plan': path_shape.shape_figures([q for q in planned if q is not None]),
                  **{f'interpolator_{name}': path_shape.shape_figures([q for q in qs if q is not None])
                     for name, qs in followed.items()},
                  'plan_against_interpolator_kdl': path_shape.compared(planned, followed['kdl'])}
        out[family] = {'plan': {'paths': len(completed), 'completed': float(np.mean(completed)),
                                'paths_with_a_jump': jumps,
                                'plan_ms_per_waypoint': path_shape.spread(np.array(dp_ms)),
                                'timing_ms_per_waypoint': path_shape.spread(np.array(timing_ms))},
                       'interpolator': interpolators, 'shape': shapes}
    return out


def _case(line: str, problem, offset) -> tuple[np.ndarray, PoseTarget, PoseTarget]:
    """A `line` or `rotate` case: the start configuration, the group tip's pose there (by the
    model's kinematics) and its goal."""
    from scipy.spatial.transform import Rotation
    parts = line.split()
    n = problem.dim
    q = np.array([float(v) for v in parts[1:1 + n]])
    start = _link(PoseTarget(*problem.tip_pose(q)), offset)
    values = np.array([float(v) for v in parts[1 + n:]])
    if parts[0] == 'line':
        return q, start, PoseTarget(start.position + values, start.rotation)
    turned = Rotation.from_rotvec(values[3] * values[:3] / np.linalg.norm(values[:3])).as_matrix()
    return q, start, PoseTarget(start.position, turned @ start.rotation)


def _tip(link: PoseTarget, offset) -> PoseTarget:
    """The model tip's pose where the group tip (rigid with it by `offset`) has `link`."""
    if offset is None:
        return link
    return PoseTarget(link.position + link.rotation @ offset.translation, link.rotation @ offset.rotation)


def _link(tip: PoseTarget, offset) -> PoseTarget:
    """_tip's inverse."""
    if offset is None:
        return tip
    back = offset.inverse()
    return PoseTarget(tip.position + tip.rotation @ back.translation, tip.rotation @ back.rotation)
