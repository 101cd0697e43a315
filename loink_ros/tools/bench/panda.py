"""`loink bench panda`: LOInK against a multi-start SLSQP optimum of the same cost (the
reference for regret, timed once) and against one SLSQP run from the nominal start (the
middle of the joint ranges; timed best of 3 like LOInK)."""

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.reference_optimizer import (
    ambiguity_span,
    local_optimum,
    reference_optimum,
    single_start_optimum,
)
from loink_ros.core.problems.arms.panda import PandaProblem
from loink_ros.core.runtime.refine import refine
from loink_ros.tools.ambiguity import AMBIGUOUS_SPAN, NEAR_OPTIMAL
from loink_ros.tools.bench.arm_bench import ArmBench
from loink_ros.tools.bench.columns import Columns
from loink_ros.tools.bench.targets import reachable_targets
from loink_ros.tools.bench.timing import TIMING, best_of, load_average, single_start_figures, speedups

DEFAULT_TASKS = 300
STARTS = 16           # SLSQP starts per target
SPREAD_SAMPLES = 16   # random feasible postures per target for the cost spread
SUCCESS_ERROR = 1e-6  # m
BEATS = 1e-6          # relative cost margin for "LOInK beats the reference"
REFINED_TARGET_MS = 0.1   # issue 8: the refined, validated solve (compiled), median


def typical_cost(problem: PandaProblem, y: np.ndarray, rng: np.random.Generator) -> float:
    """Median cost of random configurations moved onto the target (a feasible-set spread)."""
    costs = []
    for q0 in problem.sample(SPREAD_SAMPLES, rng):
        q, _ = refine(problem, q0, y, max_iter=50)
        if np.linalg.norm(problem.task(q)[0] - y) <= SUCCESS_ERROR:
            costs.append(problem.cost(q)[0])
    return float(np.median(costs)) if costs else float('nan')


def run(model_name: str, n_tasks: int, seed: int) -> dict:
    """All figures of the panda bench."""
    bench = ArmBench.start(PandaProblem(), model_name, seed)
    problem, model, solver, reference, rng = (bench.problem, bench.model, bench.solver,
                                              bench.reference, bench.rng)
    rows = []
    targets = reachable_targets(problem, model, n_tasks, rng)
    for i, y in enumerate(tqdm(targets, desc='bench panda', unit='task')):
        raw_ms, raw = best_of(lambda: solver.solve(y))
        refined_ms, refined = best_of(lambda: solver.solve(y, refine_answer=True))
        refined_numpy_ms, _ = best_of(lambda: reference.solve(y, refine_answer=True))
        ref = reference_optimum(problem, y, STARTS, seed=seed + i)
        single_ms, single = best_of(lambda: single_start_optimum(problem, y))
        polish_ms, polished = best_of(lambda: local_optimum(problem, y, refined.q))
        polished = np.clip(polished.x, problem.lower, problem.upper)
        polished_ok = np.linalg.norm(problem.task(polished)[0] - y) <= SUCCESS_ERROR
        spread = typical_cost(problem, y, rng) - ref.cost
        inside = bool(np.all(refined.q >= problem.lower) and np.all(refined.q <= problem.upper))
        rows.append({
            'regret': (raw.cost - ref.cost) / ref.cost,
            'regret_refined': (refined.cost - ref.cost) / ref.cost,
            'regret_spread': (raw.cost - ref.cost) / spread,
            'regret_refined_spread': (refined.cost - ref.cost) / spread,
            'regret_polished': ((problem.cost(polished)[0] - ref.cost) / ref.cost
                                if polished_ok else np.nan),
            'distance_refined': float(np.linalg.norm(refined.q - ref.q)),
            'beats': refined.cost < ref.cost * (1 - BEATS) and refined.task_error <= SUCCESS_ERROR,
            'span': ambiguity_span(ref, NEAR_OPTIMAL),
            'error': raw.task_error, 'error_refined': refined.task_error,
            'success': refined.task_error <= SUCCESS_ERROR and inside,
            'clipped': raw.clipped, 'converged': raw.converged, 'ref_ok': ref.success,
            'agreed': ref.agreed / ref.starts, 'raw_ms': raw_ms, 'refined_ms': refined_ms,
            'refined_numpy_ms': refined_numpy_ms,
            'polish_ms': refined_ms + polish_ms, 'ref_ms': 1e3 * ref.seconds,
            'ref_start_ms': 1e3 * ref.seconds / ref.starts,
            'single_ok': single.success, 'single_ms': single_ms,
            'single_regret': (single.cost - ref.cost) / ref.cost if single.success else np.nan})
    col = Columns(rows)
    med, p95, frac = col.median, col.p95, col.mean
    return {
        'model': model.name, 'model_version': model.version, 'n_tasks': len(rows), 'seed': seed,
        'timing': TIMING + '; the reference optimiser: one run',
        'runtime': solver.runtime, 'runtime_note': solver.runtime_note,
        'reference': f'SLSQP, {STARTS} random starts, best feasible optimum',
        'reference_ok_fraction': frac('ref_ok'),
        'reference_agreeing_starts_median': med('agreed'),
        'ambiguous_fraction': float(np.nanmean(col['span'] > AMBIGUOUS_SPAN)),
        'near_optimal_span_p95_rad': p95('span'),
        'median_regret': med('regret'), 'p95_regret': p95('regret'),
        'median_regret_refined': med('regret_refined'), 'p95_regret_refined': p95('regret_refined'),
        'median_regret_spread': med('regret_spread'), 'p95_regret_spread': p95('regret_spread'),
        'median_regret_refined_spread': med('regret_refined_spread'),
        'p95_regret_refined_spread': p95('regret_refined_spread'),
        'median_regret_polished': med('regret_polished'),
        'p95_regret_polished': p95('regret_polished'),
        'polished_time_ms_median': med('polish_ms'),
        'median_distance_to_reference_rad': med('distance_refined'),
        'p95_distance_to_reference_rad': p95('distance_refined'),
        'beats_reference_fraction': frac('beats'),
        'median_task_error_m': med('error'), 'p95_task_error_m': p95('error'),
        'median_task_error_refined_m': med('error_refined'),
        'max_task_error_refined_m': float(np.nanmax(col['error_refined'])),
        'success_fraction': frac('success'),
        'clipped_fraction': frac('clipped'), 'converged_fraction': frac('converged'),
        'solve_time_ms_median': med('raw_ms'), 'refined_time_ms_median': med('refined_ms'),
        'refined_target_ms': REFINED_TARGET_MS,
        'meets_target': med('refined_ms') <= REFINED_TARGET_MS,
        'numpy_refined_time_ms_median': med('refined_numpy_ms'),
        'reference_time_ms_median': med('ref_ms'),
        'reference_time_per_start_ms_median': med('ref_start_ms'),
        'speedup': med('ref_ms') / med('refined_ms'),
        'reference_speedup': speedups(col['ref_ms'], col['refined_ms']),
        **single_start_figures(col),
        'load_average_1_5_15_min': {'before': bench.load_before, 'after': load_average()},
    }
