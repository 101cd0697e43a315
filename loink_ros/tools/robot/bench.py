"""The bench of a trained robot description: LOInK's answers on held-out targets against a
multi-start SLSQP optimum of the same cost, limits and task (the reference for regret).

LOInK is timed as the node's solve service runs it (network inverse, clipping, validation
by forward kinematics, and for the refined row the refinement), best of 3; the reference
once. Regret is (J - J_ref) / J_ref: of the raw answers (off the target by their task
error), and of the refined answers that succeed (on the target, inside the limits).

Full poses: the node's ~/solve_pose and the MoveIt plugin's answer (PoseSolver) on poses of
configurations drawn in the limits, with MoveIt's 5 ms timeout, judged as `loink bench pose`
judges them, regret against its multi-start reference."""

import time

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.reference_optimizer import reference_optimum
from loink_ros.core.problems.arms.described_arm import DescribedArmProblem
from loink_ros.core.runtime.model_file import ModelFile
from loink_ros.core.runtime.pose_solver import PoseRequest, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.columns import Columns
from loink_ros.tools.bench.pose import bench_poses, reference, timed, valid
from loink_ros.tools.bench.targets import reachable_targets
from loink_ros.tools.bench.timing import TIMING, best_of, describe, load_average, speedups

SUCCESS_ERROR = 1e-6   # m: a refined answer on the target
POSE_TIMEOUT_S = 0.005   # MoveIt's kinematics_solver_timeout, as the Setup Assistant writes it


def _described(values: np.ndarray) -> dict:
    """describe(), or NaNs when no target has the figure (no refined answer succeeded)."""
    return describe(values) if len(values) else dict.fromkeys(('mean', 'median', 'min', 'max'),
                                                              float('nan'))


def run(problem: DescribedArmProblem, model: ModelFile, progress: bool = True) -> dict:
    """The bench's figures, and per target the arrays the report plots."""
    settings, seed = problem.spec.sections['bench'], problem.spec.seed + 2
    load_before = load_average()
    solver = LOInKSolver(model, problem)
    targets = reachable_targets(problem, model, settings['targets'], np.random.default_rng(seed))
    rows = []
    for i, y in enumerate(tqdm(targets, desc=f'bench {problem.name}', unit='target',
                               disable=not progress)):
        raw_ms, raw = best_of(lambda: solver.solve(y))
        refined_ms, refined = best_of(lambda: solver.solve(y, refine_answer=True))
        ref = reference_optimum(problem, y, settings['starts'], seed=seed + i)
        inside = bool(np.all(refined.q >= problem.lower) and np.all(refined.q <= problem.upper))
        success = refined.task_error <= SUCCESS_ERROR and inside
        def regret(cost):
            return (cost - ref.cost) / ref.cost if ref.success else np.nan
        rows.append({'raw_ms': raw_ms, 'refined_ms': refined_ms, 'reference_ms': 1e3 * ref.seconds,
                     'error': raw.task_error, 'error_refined': refined.task_error,
                     'regret': regret(raw.cost),
                     'regret_refined': regret(refined.cost) if success else np.nan,
                     'success': success,
                     'reference_ok': ref.success, 'clipped': raw.clipped})
    col = Columns(rows)
    ok = col['reference_ok'] > 0
    return {
        'model': model.name, 'model_version': model.version, 'targets': len(rows), 'seed': seed,
        'timing': TIMING + '; the reference: one run', 'runtime': solver.runtime,
        'reference': f"SLSQP, {settings['starts']} random starts, best feasible optimum",
        'reference_ok_fraction': float(ok.mean()),
        'multistart_fallback': solver.multistart is not None,
        'success_fraction': float(col['success'].mean()),
        'clipped_fraction': float(col['clipped'].mean()),
        'task_error_m': describe(col['error']),
        'task_error_refined_m': describe(col['error_refined']),
        'regret': describe(col['regret'][ok]),
        'regret_refined': _described(col['regret_refined'][ok & np.isfinite(col['regret_refined'])]),
        'solve_ms': describe(col['raw_ms']), 'refined_solve_ms': describe(col['refined_ms']),
        'reference_ms': describe(col['reference_ms']),
        'reference_over_refined': speedups(col['reference_ms'], col['refined_ms']),
        'pose': pose_figures(solver, settings['targets'], seed),
        'load_average_1_5_15_min': {'before': load_before, 'after': load_average()},
        'per_target': {k: col[k].tolist() for k in ('error', 'error_refined', 'regret',
                                                     'regret_refined')},
    }


def pose_figures(solver: LOInKSolver, count: int, seed: int, progress: bool = True) -> dict:
    """Full-pose answers on `count` poses: success, regret and times (one call each)."""
    pose_solver = PoseSolver(solver)
    problem = solver.problem
    _, poses = bench_poses(problem, count, seed)
    avoid = problem.has_collision_model
    rows = []
    for i, target in enumerate(tqdm(poses, desc=f'bench {problem.name} poses', unit='pose',
                                    disable=not progress)):
        ms, answer = timed(lambda: pose_solver.solve(PoseRequest(
            target, deadline=time.monotonic() + POSE_TIMEOUT_S, avoid_collisions=avoid)))
        ok = answer.success and valid(problem, answer.q, target)
        best = reference(pose_solver, target, np.random.default_rng(seed + i), [answer.q] if ok else [])
        rows.append((ok, (answer.cost - best) / best if ok and np.isfinite(best) else np.nan, ms))
    ok, regret, ms = (np.array(c, float) for c in zip(*rows))
    kept = regret[np.isfinite(regret)]
    return {'poses': count, 'timeout_s': POSE_TIMEOUT_S, 'success_fraction': float(ok.mean()),
            'regret': _described(kept), 'regret_p95': float(np.percentile(kept, 95)) if len(kept) else np.nan,
            'solve_ms': {**describe(ms), 'p99': float(np.percentile(ms, 99))},
            'reference': 'loink bench pose\'s: the best valid of uniform starts (and around the '
                         'cost\'s minimiser), each refined onto the pose and descended'}
