"""`loink bench magneto`: LOInK against the strongest IPOPT on the same held-out targets
(paper Table I).

Targets: footholds within FOOT_RANGE of nominal on the surface, heights in HEIGHT_RANGE
(problems/magneto/parameters.py), from the bench seed (the training data are other draws,
with feet off the surface), kept when a feasible stance exists (a random body pose with
closed-form legs passes every limit: no solver decides which targets count).

Methods, all in this process, one BLAS thread, best of 3 wall times per target
(tools/bench/timing.py):
- `loink_runtime` (the headline): the whole runtime call the node makes
  (LOInKSolver.solve with refine_answer=True on the compiled runtime, docs/COMPILED.md: the
  network inverse, clipping, the legs re-solved in closed form, the answer checked by the
  forward kinematics and the problem's feasibility conditions, its true cost evaluated);
- `loink_runtime_numpy`: the same call on the numpy reference path (Pinocchio's kinematics);
- `loink_refined` (the stripped path): x = G^-1([y; 0]) (numpy semismooth Newton), clipped
  to the bounds, then MagnetoProblem.refine_legs; no check, no cost;
- `loink`: the same without the leg solve (network only);
- the IPOPT variants of baselines/ipopt_variants.py (full- and reduced-space NLPs, with
  and without JIT, default and tuned options), each from the nominal stance. The
  baseline is the strongest: the fastest by mean time that reaches the full-space default's
  cost (within SAME_COST) with a feasible answer on >= QUALIFY_FRACTION of the targets.
Speed-ups: baseline time / LOInK time per target (mean, median, min, max) and the ratio of
the mean times (`speedup_of_means`); `speedup_*` for the runtime call, `stripped_speedup_*`
for the stripped path. Cost ratios likewise (LOInK J / baseline J).
Foot error: max over the four feet of |Pinocchio foot frame (gimbals resolved) - target|.
Cost: J (what every method minimises) and J_f (exact max over feet of the required pull).
"""

from collections import Counter

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.ipopt_variants import QUALIFY_FRACTION, REFERENCE, SAME_COST, VARIANTS, agreement, strongest
from loink_ros.core.problems.magneto.problem import MagnetoProblem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.ambiguity import NEAR_OPTIMAL
from loink_ros.tools.bench.magneto_verify import AGREE, DISTINCT, feasible_stances
from loink_ros.tools.bench.timing import TIMING, best_of, describe, load_average, speedups

AMBIGUITY_TARGETS = 50     # targets that also get a multi-start IPOPT run
AMBIGUITY_STARTS = 8
WORSE = 1e-3               # relative: IPOPT "worse than LOInK" beyond this
LOINK_METHODS = ('loink_runtime', 'loink_runtime_numpy', 'loink_refined', 'loink')
LABELS = {'loink_runtime': 'LOInK runtime solve, compiled (refined, FK- and feasibility-checked, '
                           'true cost)',
          'loink_runtime_numpy': 'LOInK runtime solve, numpy reference path',
          'loink_refined': 'LOInK + leg IK, stripped (no check, no cost)',
          'loink': 'LOInK (network only)', **{v.name: v.label for v in VARIANTS}}


class LOInKMagneto:
    """The stripped LOInK path timed by the bench: inverse, clip, optional closed-form legs."""

    def __init__(self, model, problem: MagnetoProblem):
        self.model, self.problem = model, problem
        self.norm = model.normalization
        self.zero = np.zeros(model.latent_dim)

    def solve(self, task: np.ndarray, refine: bool) -> np.ndarray:
        q = np.clip(self.unclipped(task), self.problem.lower, self.problem.upper)
        return self.problem.refine_legs(q, task)[0] if refine else q[0]

    def unclipped(self, task: np.ndarray) -> np.ndarray:
        """G^-1([y; 0]) in joint units, (1, 18), before clipping to the bounds."""
        w = np.concatenate([(task - self.norm.y_mean) / self.norm.y_std, self.zero])[None]
        return self.norm.x_from_net(self.model.inverse(w).x)


def held_out_targets(problem: MagnetoProblem, count: int, seed: int) -> np.ndarray:
    """`count` targets on the surface with at least one feasible stance."""
    rng = np.random.default_rng(seed)
    kept = []
    while len(kept) < count:
        task = problem.sample_targets(1, rng)[0]
        if len(feasible_stances(problem, task, 200, rng)):
            kept.append(task)
    return np.array(kept)


def evaluate(problem: MagnetoProblem, q: np.ndarray, task: np.ndarray) -> dict:
    """Foot error (max over feet, Pinocchio), height error, J, J_f, feasibility of one answer."""
    feet, _ = problem.foot_placements(q[None])
    terms = problem.cost_terms(q[None])
    feas = problem.feasibility(q[None], tol=1e-9)
    urdf = bool(np.all((q[6:] >= problem.joint_lower) & (q[6:] <= problem.joint_upper)))
    return {'foot_error_mm': 1e3 * float(np.linalg.norm(feet[0] - task[:12].reshape(4, 3), axis=1).max()),
            'height_error_mm': 1e3 * abs(q[5] - task[12]),
            'J': float(terms['J'][0]), 'J_f': float(terms['J_f_hard'][0]),
            'in_bounds': bool(feas['bounds'][0]), 'in_urdf_limits': urdf,
            'gimbals_ok': bool(feas['gimbals'][0]), 'clearance_ok': bool(feas['clearance'][0]),
            'feasible': bool(feas['all'][0])}


def _ratios(values: np.ndarray) -> dict:
    return {'mean': float(values.mean()), 'median': float(np.median(values)),
            'max': float(values.max()), 'p95': float(np.percentile(values, 95))}


def _table(summary: dict, order: list[str], baseline: str) -> str:
    rows = ['| Method | Solve time (ms) | Foot error (mm) | Cost J_f (N) | Cost J (N) |',
            '|---|---|---|---|---|']
    def fmt(s, d):
        return f'{s["mean"]:.{d}} ({s["min"]:.{d}}-{s["max"]:.{d}})'
    for m in order:
        s = summary[m]
        label = LABELS[m] + (' **baseline**' if m == baseline else '')
        err_format = '2f' if s['foot_error_mm']['max'] >= 0.01 else '1e'
        rows.append(f"| {label} | {fmt(s['time_ms'], '3f')} | {fmt(s['foot_error_mm'], err_format)} "
                    f"| {fmt(s['J_f'], '2f')} | {fmt(s['J'], '2f')} |")
    return '\n'.join(rows)


def _variants_table(variants: dict, baseline: str) -> str:
    rows = ['| IPOPT variant | mean time (ms) | iterations | solved | same cost | feasible | max cost gap |',
            '|---|---|---|---|---|---|---|']
    for name, v in variants.items():
        mark = ' **baseline**' if name == baseline else ''
        rows.append(f"| {v['label']}{mark} | {v['time_ms_mean']:.3f} | {v['iterations_mean']:.1f} "
                    f"| {v['success_fraction']:.1%} | {v['same_cost_fraction']:.1%} "
                    f"| {v['feasible_fraction']:.1%} | {v['cost_gap_max']:.1e} |")
    return '\n'.join(rows)


def _time_rows(tasks, loink, solvers, ipopts, problem) -> list[dict]:
    """Per target: every method's best-of-3 time and the evaluation of its answer."""
    rows = []
    for task in tqdm(tasks, desc='bench magneto', unit='target'):
        row = {}
        for m, solver in zip(('loink_runtime', 'loink_runtime_numpy'), solvers):
            ms, sol = best_of(lambda: solver.solve(task, refine_answer=True))
            row[m] = {'time_ms': ms, 'violations': len(sol.violations),
                      **evaluate(problem, sol.q, task)}
        for m, refine in (('loink_refined', True), ('loink', False)):
            ms, q = best_of(lambda: loink.solve(task, refine))
            row[m] = {'time_ms': ms, **evaluate(problem, q, task)}
        for name, ipopt in ipopts.items():
            ms, out = best_of(lambda: ipopt.solve(task))
            row[name] = {'time_ms': ms, 'success': out.success, 'status': out.status,
                         'iterations': out.iterations, **evaluate(problem, out.q, task)}
        raw = loink.unclipped(task)[0]
        row['clipped'] = bool(np.any((raw < problem.lower) | (raw > problem.upper)))
        rows.append(row)
    return rows


def _ambiguity(tasks, ipopt, problem, rng) -> dict:
    """Multi-start IPOPT (full space) on the first AMBIGUITY_TARGETS targets."""
    ambiguous, nominal_best = [], []
    for task in tasks[:AMBIGUITY_TARGETS]:
        starts = feasible_stances(problem, task, 200, rng)[:AMBIGUITY_STARTS]
        found = [r for r in [ipopt.solve(task, q0) for q0 in starts] if r.success]
        found.append(ipopt.solve(task))
        best = min(found, key=lambda r: r.cost)
        near = [r for r in found if r.cost <= (1 + NEAR_OPTIMAL) * best.cost]
        ambiguous.append(max(np.abs(r.q - best.q).max() for r in near) > DISTINCT)
        nominal_best.append(abs(found[-1].cost - best.cost) <= AGREE * best.cost)
    return {'targets': len(ambiguous), 'starts_per_target': AMBIGUITY_STARTS + 1,
            'near_optimal': NEAR_OPTIMAL, 'distinct': DISTINCT,
            'ambiguous_fraction': float(np.mean(ambiguous)),
            'nominal_start_found_best_fraction': float(np.mean(nominal_best))}


def _variant_summary(rows: list[dict]) -> tuple[dict, dict, dict]:
    """Per IPOPT variant: figures, per-target times and agreement with the reference."""
    def col(name, k):
        return np.array([r[name][k] for r in rows])
    reference_j = col(REFERENCE, 'J')
    summary, times, agrees = {}, {}, {}
    for v in VARIANTS:
        j, ok, feasible = col(v.name, 'J'), col(v.name, 'success'), col(v.name, 'feasible')
        times[v.name], agrees[v.name] = col(v.name, 'time_ms'), agreement(j, reference_j, ok, feasible)
        summary[v.name] = {
            **v.describe(), 'time_ms_mean': float(times[v.name].mean()),
            'time_ms_median': float(np.median(times[v.name])),
            'iterations_mean': float(col(v.name, 'iterations').mean()),
            'success_fraction': float(ok.mean()), 'feasible_fraction': float(feasible.mean()),
            'same_cost_fraction': float(agrees[v.name].mean()),
            'cost_gap_max': float(np.max(np.abs(j - reference_j) / np.abs(reference_j))),
            'statuses': dict(Counter(r[v.name]['status'] for r in rows))}
    return summary, times, agrees


def run(model_name: str, n_tasks: int, seed: int) -> dict:
    """All figures of the Magneto bench."""
    load_before = load_average()
    model = load_model(model_name)
    problem = MagnetoProblem(inclination_deg=model.problem.get('inclination_deg', 40.0))
    loink = LOInKMagneto(model, problem)
    solvers = (LOInKSolver(model, problem), LOInKSolver(model, problem, runtime='numpy'))
    ipopts = {v.name: v.build(problem) for v in VARIANTS}
    tasks = held_out_targets(problem, n_tasks, seed)
    for task in tasks[:5]:   # warm-up (first calls allocate)
        loink.solve(task, True)
        for solver in solvers:
            solver.solve(task, refine_answer=True)
        for ipopt in ipopts.values():
            ipopt.solve(task)
    rows = _time_rows(tasks, loink, solvers, ipopts, problem)
    variants, times, agrees = _variant_summary(rows)
    baseline = strongest(times, agrees)
    for name, v in variants.items():
        v['qualifies'] = bool(np.mean(agrees[name]) >= QUALIFY_FRACTION)
    methods = list(LOINK_METHODS) + [baseline] + [v.name for v in VARIANTS if v.name != baseline]
    summary = {}
    for m in methods:
        def values(k):
            return [r[m][k] for r in rows]
        summary[m] = {k: describe(values(k)) for k in ('time_ms', 'foot_error_mm', 'height_error_mm', 'J', 'J_f')}
        for k in ('in_bounds', 'in_urdf_limits', 'gimbals_ok', 'clearance_ok', 'feasible'):
            summary[m][f'{k}_fraction'] = float(np.mean(values(k)))
    def col(m, k):
        return np.array([r[m][k] for r in rows])
    ok = col(baseline, 'success')
    def ratio(m, k):
        return (col(m, k) / col(baseline, k))[ok]
    runtime = col('loink_runtime', 'time_ms')
    runtime_numpy = col('loink_runtime_numpy', 'time_ms')
    stripped = col('loink_refined', 'time_ms')
    outside = ~(col('loink_runtime', 'in_bounds') & col('loink_runtime', 'in_urdf_limits'))
    worse = (col(baseline, 'J') > (1 + WORSE) * col('loink_runtime', 'J')) & col('loink_runtime', 'feasible')
    headline = speedups(times[baseline], runtime)
    stripped_speed = speedups(times[baseline], stripped)
    numpy_speed = speedups(times[baseline], runtime_numpy)
    return {
        'model': model.name, 'model_version': model.version, 'n_targets': len(rows), 'seed': seed,
        'inclination_deg': problem.inclination_deg,
        'runtime': solvers[0].runtime, 'runtime_note': solvers[0].runtime_note,
        'timing': TIMING + ', all methods in one process',
        'load_average_1_5_15_min': {'before': load_before, 'after': load_average()},
        'baseline': baseline, 'baseline_label': LABELS[baseline],
        'baseline_rule': (f'fastest IPOPT variant by mean time that solves, is feasible and reaches '
                          f'{REFERENCE} J within {SAME_COST:g} (relative) on >= '
                          f'{QUALIFY_FRACTION:.0%} of the targets'),
        **{f'speedup_{k}': v for k, v in headline.items()},
        **{f'stripped_speedup_{k}': v for k, v in stripped_speed.items()},
        **{f'numpy_runtime_speedup_{k}': v for k, v in numpy_speed.items()},
        'compiled_over_numpy_runtime': speedups(runtime_numpy, runtime),
        'speedup_vs_variant': {name: {'runtime': speedups(times[name], runtime),
                                      'stripped': speedups(times[name], stripped)} for name in times},
        **{f'cost_ratio_{k}': v for k, v in _ratios(ratio('loink_runtime', 'J')).items()},
        'cost_ratio_J_f_mean': float(ratio('loink_runtime', 'J_f').mean()),
        **{f'stripped_cost_ratio_{k}': v for k, v in _ratios(ratio('loink_refined', 'J')).items()},
        'cost_ratio_unrefined_mean': float(ratio('loink', 'J').mean()),
        'runtime_foot_error_max_m': 1e-3 * float(col('loink_runtime', 'foot_error_mm').max()),
        'runtime_outside_limits_count': int(outside.sum()),
        'runtime_infeasible_count': int((~col('loink_runtime', 'feasible')).sum()),
        'runtime_with_violations_count': int((col('loink_runtime', 'violations') > 0).sum()),
        'baseline_success_count': int(ok.sum()),
        'baseline_iterations': describe(col(baseline, 'iterations')),
        'ipopt_worse_than_loink_count': int(worse.sum()),
        'loink_clipped_fraction': float(np.mean([r['clipped'] for r in rows])),
        'ipopt_variants': variants,
        'methods': summary,
        'ambiguity': _ambiguity(tasks, ipopts[REFERENCE], problem, np.random.default_rng(seed + 1)),
        'table_markdown': _table(summary, methods, baseline),
        'variants_markdown': _variants_table(variants, baseline),
    }
