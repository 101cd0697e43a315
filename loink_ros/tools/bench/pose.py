"""`loink bench pose`: full-pose IK on reachable poses, LOInK against TRAC-IK and a multi-start
cost reference, in one process on the same poses.

Poses: forward kinematics of configurations drawn uniformly in the model's (the URDF's)
limits, free of self-collision, with a seed no training run uses. Every answer is judged the
same way: position <= 1e-5 m and rotation <= 1e-4 rad by Pinocchio's forward kinematics,
inside the limits, no self-collision. Times are wall times of single calls (failures
included); each method gets the same 5 ms cap.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.baselines.trac_ik import TIMEOUT_S, TracIk
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseRequest, PoseSolver, prior_spread
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.timing import load_average, speedups

MODELS = {'panda': 'panda_full', 'xarm7': 'xarm7_full'}
DEFAULT_POSES = 10_000
BENCH_SEED = 20261201
REFERENCE_STARTS = 32
# Poses (the first ones) on which each part's contribution is measured.
VARIANT_POSES = 2000
# The narrowed Panda position model's joint-1 range: poses are reported in front and beyond.
FRONT = 1.2
# Seed-consistent mode: the weight w of ||q - seed||^2 (rad^2) against the cost.
SEED_WEIGHT = 100.0


def valid(problem: KinematicProblem, q: np.ndarray | None, target: PoseTarget) -> bool:
    """The benchmark's success test of one answer."""
    if q is None or np.any(q < problem.lower) or np.any(q > problem.upper):
        return False
    error = pose_error(problem, q, target)
    if np.linalg.norm(error[:3]) > TOLERANCE[0] or np.linalg.norm(error[3:]) > TOLERANCE[1]:
        return False
    return not problem.self_collisions(q)


def bench_poses(problem: KinematicProblem, count: int,
                seed: int) -> tuple[np.ndarray, list[PoseTarget]]:
    """Collision-free configurations drawn uniformly in the limits, and their poses."""
    configurations = problem.sample_collision_free(count, np.random.default_rng(seed))
    return configurations, [PoseTarget(*problem.tip_pose(q)) for q in configurations]


def timed(call):
    began = time.perf_counter()
    out = call()
    return 1e3 * (time.perf_counter() - began), out


def reference(pose_solver: PoseSolver, target: PoseTarget, rng: np.random.Generator,
              extra: list[np.ndarray]) -> float:
    """The lowest valid cost of REFERENCE_STARTS uniform starts, as many around the cost's
    minimiser (drawn anew for each pose) and the `extra` answers (every method's valid
    ones), each refined and descended the same way; nan when none is valid."""
    problem = pose_solver.problem
    starts = [rng.uniform(problem.lower, problem.upper, size=(REFERENCE_STARTS, problem.dim))]
    centre = problem.cost_minimiser()
    if centre is not None:
        starts.append(np.clip(rng.normal(centre, prior_spread(problem),
                                         size=(REFERENCE_STARTS, problem.dim)),
                              problem.lower, problem.upper))
    starts = np.vstack([*starts, *extra])
    rows = pose_solver.refine(starts, target, problem.lower, problem.upper, None, 0.0, len(starts))
    n = problem.dim
    for i in np.argsort(rows[:, n + 2]):
        q = rows[i, :n]
        if valid(problem, q, target):
            return float(problem.cost(q)[0])
    return np.nan


def figures(ok: np.ndarray, ms: np.ndarray, regret: np.ndarray | None = None) -> dict:
    out = {'success': float(ok.mean()), 'time_ms_median': float(np.median(ms)),
           'time_ms_p95': float(np.percentile(ms, 95)), 'time_ms_max': float(ms.max())}
    if regret is not None:
        kept = regret[ok & np.isfinite(regret)]
        out.update(regret_median=float(np.median(kept)), regret_p95=float(np.percentile(kept, 95)),
                   regret_max=float(kept.max()))
    return out


def run(robot: str, count: int, seed: int = BENCH_SEED, model: str | None = None) -> dict:
    name = model or MODELS.get(robot, robot)
    loaded = load_model(name)
    problem = make_problem(loaded.problem['name'])
    solver = LOInKSolver(loaded, problem)
    pose_solver = PoseSolver(solver)
    nominal = problem.example_configuration()
    configurations, poses = bench_poses(problem, count, seed)
    with threadpool_limits(1):
        answers, ms = _timed_passes(problem, pose_solver, nominal, poses)
        col = _judge(problem, pose_solver, nominal, poses, answers, seed)
    col.update({f'{key}_ms': np.array(value) for key, value in ms.items()})
    report = _report(robot, name, solver, count, seed, col, answers)
    report['by_joint1'] = _by_joint1(col, configurations[:, 0])
    report['variants'] = _variants(solver, problem, poses[:VARIANT_POSES],
                                   col['reference_cost'][:VARIANT_POSES])
    return report


def _timed_passes(problem, pose_solver, nominal, poses) -> tuple[dict, dict]:
    """Each method over all poses in its own pass (warm, back to back), one call per pose;
    (answers: method -> list of q or None, times: method -> ms per pose)."""
    speed, distance = TracIk(problem, 'Speed'), TracIk(problem, 'Distance')
    loink = {'loink': {}, 'loink_seeded': {'seed': nominal, 'seed_weight': SEED_WEIGHT}}
    answers, ms = {}, {}
    for key, extra in loink.items():
        pose_solver.solve(PoseRequest(poses[0], **extra))        # warm
        out = [timed(lambda: pose_solver.solve(PoseRequest(
            target, deadline=time.monotonic() + TIMEOUT_S, avoid_collisions=True, **extra)))
            for target in tqdm(poses, desc=key, unit='pose')]
        ms[key], answers[key] = [t for t, _ in out], [a for _, a in out]
    for key, trac in (('trac_speed', speed), ('trac_distance', distance)):
        out = [trac.solve(target.position, matrix_quaternion(target.rotation), nominal)
               for target in tqdm(poses, desc=key, unit='pose')]
        ms[key], answers[key] = [r.time_ms for r in out], [r.q for r in out]
    return answers, ms


def _judge(problem, pose_solver, nominal, poses, answers, seed) -> dict:
    """Per pose: validity, the reference cost, regret and distance to the seed per method."""
    rng = np.random.default_rng(seed + 1)
    rows = []
    for i, target in enumerate(tqdm(poses, desc='reference', unit='pose')):
        qs = {key: (a[i].q if key.startswith('loink') else a[i]) for key, a in answers.items()}
        ok = {key: valid(problem, q, target) for key, q in qs.items()}
        ref = reference(pose_solver, target, rng, [q for key, q in qs.items() if ok[key]])
        row = {'reference_cost': ref}
        for key in ('loink', 'loink_seeded'):
            answer = answers[key][i]
            row[f'{key}_outside_limits'] = bool(np.any(answer.q < problem.lower)
                                                or np.any(answer.q > problem.upper))
            row[f'{key}_false_success'] = answer.success and not ok[key]
        for key, q in qs.items():
            row[f'{key}_ok'] = ok[key]
            row[f'{key}_answered'] = q is not None
            row[f'{key}_regret'] = (float(problem.cost(q)[0]) - ref) / ref if ok[key] else np.nan
            row[f'{key}_seed_distance'] = float(np.linalg.norm(q - nominal)) if ok[key] else np.nan
        rows.append(row)
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}


def _variants(solver, problem, poses, reference_costs) -> dict:
    """What each part contributes: LOInK with one part changed, on the same poses."""
    variants = {'shipped': PoseSolver(solver),
                'with the network start': PoseSolver(solver, network_for_poses=True),
                'with the network start and 8 latent samples':
                    PoseSolver(solver, network_for_poses=True, latent_starts=8),
                'uniform prior (not around the cost minimiser)': PoseSolver(solver, use_prior=False),
                'no descent': PoseSolver(solver, descents=0),
                'descend every start': PoseSolver(solver, descents=1000),
                'restarts only (no prior starts)': PoseSolver(solver, prior_starts=0)}
    out = {'poses': len(poses)}
    with threadpool_limits(1):
        for name, variant in variants.items():
            ok, ms, regret = [], [], []
            for target, ref in tqdm(list(zip(poses, reference_costs)), desc=name, unit='pose'):
                elapsed, answer = timed(lambda: variant.solve(PoseRequest(
                    target, deadline=time.monotonic() + TIMEOUT_S, avoid_collisions=True)))
                good = valid(problem, answer.q, target)
                ok.append(good)
                ms.append(elapsed)
                regret.append((answer.cost - ref) / ref if good else np.nan)
            out[name] = figures(np.array(ok), np.array(ms), np.array(regret))
    return out


def _by_joint1(col: dict, joint1: np.ndarray) -> dict:
    """Success and regret of LOInK and TRAC-IK Speed for poses whose configuration had
    |joint 1| <= FRONT (in front of the robot) and beyond (to the side and behind)."""
    out = {}
    for region, mask in ((f'|q1| <= {FRONT} rad', np.abs(joint1) <= FRONT),
                         (f'|q1| > {FRONT} rad', np.abs(joint1) > FRONT)):
        out[region] = {'poses': int(mask.sum()), **{
            key: figures(col[f'{key}_ok'][mask], col[f'{key}_ms'][mask], col[f'{key}_regret'][mask])
            for key in ('loink', 'trac_speed')}}
    return out


def _report(robot, name, solver, count, seed, col, answers) -> dict:
    sources, counts = np.unique([a.source for a in answers['loink']], return_counts=True)
    both = col['loink_seeded_ok'] & col['trac_distance_ok']
    return {
        'robot': robot, 'model': name, 'model_version': solver.model.version,
        'runtime': solver.runtime, 'poses': count, 'seed': seed,
        'poses_from': 'forward kinematics of collision-free configurations uniform in the URDF limits',
        'success_test': f'position <= {TOLERANCE[0]:g} m, rotation <= {TOLERANCE[1]:g} rad '
                        '(Pinocchio FK), inside the limits, no self-collision',
        'cap_ms': 1e3 * TIMEOUT_S,
        'timing': 'wall time of each call, each method in its own pass over the poses (one '
                  'warm-up call first), 1 BLAS thread; failures included',
        'reference': f'best valid cost of {REFERENCE_STARTS} uniform starts, {REFERENCE_STARTS} '
                     'around the cost minimiser (new draws per pose) and the valid answers of '
                     'every method, each refined and descended by the pose kernel',
        'reference_found': float(np.isfinite(col['reference_cost']).mean()),
        'loink': figures(col['loink_ok'], col['loink_ms'], col['loink_regret']),
        'loink_answers_outside_limits': int(col['loink_outside_limits'].sum()
                                            + col['loink_seeded_outside_limits'].sum()),
        'loink_invalid_answers_reported_as_success': int(col['loink_false_success'].sum()
                                                         + col['loink_seeded_false_success'].sum()),
        'loink_answer_source': {str(s): int(c) for s, c in zip(sources, counts)},
        'loink_starts_median': float(np.median([a.starts for a in answers['loink']])),
        'trac_ik_speed': {**figures(col['trac_speed_ok'], col['trac_speed_ms'],
                                    col['trac_speed_regret']),
                          'answered (self-collision not checked)':
                              float(col['trac_speed_answered'].mean())},
        'trac_ik_distance': {**figures(col['trac_distance_ok'], col['trac_distance_ms'],
                                       col['trac_distance_regret']),
                             'answered (self-collision not checked)':
                                 float(col['trac_distance_answered'].mean())},
        'loink_over_trac_speed_time': speedups(col['loink_ms'], col['trac_speed_ms']),
        'seed_consistent': {
            'seed': 'the middle of the joint ranges (TRAC-IK seeded the same)',
            'seed_weight': SEED_WEIGHT,
            'loink': figures(col['loink_seeded_ok'], col['loink_seeded_ms']),
            'loink_seed_distance_median': float(np.nanmedian(col['loink_seeded_seed_distance'])),
            'trac_distance_seed_distance_median':
                float(np.nanmedian(col['trac_distance_seed_distance'])),
            'both_valid_poses': int(both.sum()),
            'loink_seed_distance_median_both': float(np.median(col['loink_seeded_seed_distance'][both])),
            'trac_distance_seed_distance_median_both':
                float(np.median(col['trac_distance_seed_distance'][both])),
        },
        'load_average': load_average(),
    }
