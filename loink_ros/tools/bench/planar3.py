"""`loink bench planar3`: regret against a dense search of the self-motion set, task error,
inverse speed, and speed against one SLSQP run from the nominal start (the middle of the
joint ranges, the same cost and constraints; timed best of 3 like LOInK)."""

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.reference_optimizer import single_start_optimum
from loink_ros.core.problems.arms.planar3 import Planar3Problem
from loink_ros.tools.ambiguity import AMBIGUOUS_SPAN, NEAR_OPTIMAL
from loink_ros.tools.bench.arm_bench import ArmBench
from loink_ros.tools.bench.columns import Columns
from loink_ros.tools.bench.timing import TIMING, best_of, load_average, single_start_figures

INVERSE_TOL = 1e-6
GRID = 300
# Issue-8 targets for the validated solve (compiled runtime), median ms.
SOLVE_TARGET_MS, REFINED_TARGET_MS = 0.03, 0.06


def ground_truth(problem: Planar3Problem, y: float) -> dict:
    """Cost range and ambiguity of one task from its whole self-motion set."""
    configs = problem.self_motion_set(y, GRID)
    cost = problem.cost(configs)
    low, high = float(cost.min()), float(cost.max())
    best = configs[cost.argmin()]
    near = configs[cost <= low + NEAR_OPTIMAL * (high - low)]
    span = float(np.linalg.norm(near - best, axis=1).max())
    return {'j_min': low, 'j_max': high, 'span': span}



def run(model_name: str, n_tasks: int, seed: int) -> dict:
    """All figures of the planar3 bench."""
    bench = ArmBench.start(Planar3Problem(), model_name, seed)
    problem, model, solver, reference = bench.problem, bench.model, bench.solver, bench.reference
    tasks = bench.rng.uniform(model.task_lower, model.task_upper, size=(n_tasks, model.task_dim))
    rows = []
    for y in tqdm(tasks, desc='bench planar3', unit='task'):
        truth = ground_truth(problem, float(y[0]))
        raw_ms, raw = best_of(lambda: solver.solve(y))
        refined_ms, refined = best_of(lambda: solver.solve(y, refine_answer=True))
        raw_numpy_ms, _ = best_of(lambda: reference.solve(y))
        refined_numpy_ms, _ = best_of(lambda: reference.solve(y, refine_answer=True))
        w = np.hstack([model.normalization.y_to_net(y), np.zeros(model.latent_dim)])[None]
        dys_ms, dys = best_of(lambda: model.inverse(w, 'davis_yin', INVERSE_TOL))
        fast_ms, fast = best_of(lambda: model.inverse(w, 'newton', INVERSE_TOL))
        exact = model.inverse(w)
        single_ms, single = best_of(lambda: single_start_optimum(problem, y))
        span = truth['j_max'] - truth['j_min']
        rows.append({
            'regret': (raw.cost - truth['j_min']) / span,
            'regret_refined': (refined.cost - truth['j_min']) / span,
            'ambiguous': truth['span'] > AMBIGUOUS_SPAN, 'span': truth['span'],
            'error': raw.task_error, 'error_refined': refined.task_error,
            'clipped': raw.clipped, 'converged': bool(exact.converged[0] and fast.converged[0]),
            'residual': float(np.linalg.norm(model.network.forward(exact.x) - w)),
            'residual_fast': float(np.linalg.norm(model.network.forward(fast.x) - w)),
            'residual_dys': float(np.linalg.norm(model.network.forward(dys.x) - w)),
            'dys_fast_gap': float(np.abs(dys.x - fast.x).max()),
            'dys_iterations': max(dys.iterations), 'fast_iterations': max(fast.iterations),
            'raw_ms': raw_ms, 'refined_ms': refined_ms, 'raw_numpy_ms': raw_numpy_ms,
            'refined_numpy_ms': refined_numpy_ms, 'dys_ms': dys_ms, 'fast_ms': fast_ms,
            'single_ok': single.success, 'single_ms': single_ms,
            'single_regret': (single.cost - truth['j_min']) / span if single.success else np.nan})
    col = Columns(rows)
    med, p95 = col.median, col.p95
    return {
        'model': model.name, 'model_version': model.version, 'n_tasks': n_tasks,
        'timing': TIMING, 'runtime': solver.runtime, 'runtime_note': solver.runtime_note,
        'ambiguous_fraction': float(col['ambiguous'].mean()),
        'near_optimal_span_p95_rad': p95('span'),
        'median_regret': med('regret'), 'p95_regret': p95('regret'),
        'median_regret_refined': med('regret_refined'), 'p95_regret_refined': p95('regret_refined'),
        'median_task_error_m': med('error'), 'p95_task_error_m': p95('error'),
        'median_task_error_refined_m': med('error_refined'),
        'max_task_error_refined_m': float(col['error_refined'].max()),
        'clipped_fraction': float(col['clipped'].mean()),
        'converged_fraction': float(col['converged'].mean()),
        'max_inverse_residual': float(col['residual'].max()),
        'max_inverse_residual_fast_tol_1e-6': float(col['residual_fast'].max()),
        'max_inverse_residual_dys_tol_1e-6': float(col['residual_dys'].max()),
        'max_dys_fast_difference': float(col['dys_fast_gap'].max()),
        'dys_iterations_median': med('dys_iterations'),
        'fast_iterations_median': med('fast_iterations'),
        'dys_time_ms_median': med('dys_ms'), 'fast_time_ms_median': med('fast_ms'),
        'solve_time_ms_median': med('raw_ms'), 'refined_time_ms_median': med('refined_ms'),
        'solve_target_ms': SOLVE_TARGET_MS, 'refined_target_ms': REFINED_TARGET_MS,
        'meets_targets': med('raw_ms') <= SOLVE_TARGET_MS and med('refined_ms') <= REFINED_TARGET_MS,
        'numpy_solve_time_ms_median': med('raw_numpy_ms'),
        'numpy_refined_time_ms_median': med('refined_numpy_ms'),
        'speedup_fast_over_dys': med('dys_ms') / med('fast_ms'),
        **single_start_figures(col),
        'load_average_1_5_15_min': {'before': bench.load_before, 'after': load_average()},
    }
