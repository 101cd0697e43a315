"""`loink bench magneto`: LOInK against IPOPT on the same held-out targets (paper Table I).

Targets: footholds within FOOT_RANGE of nominal on the surface, heights in HEIGHT_RANGE
(magneto.py), from the bench seed (the training data are other draws, with feet off the
surface), kept when a feasible stance exists (a random body pose with closed-form legs
passes every limit: no solver decides which targets count).

Methods, all in this process, one BLAS thread, best of 3 wall times per target (tools/timing.py):
- `loink`: x = G^-1([y; 0]) (numpy semismooth Newton), clipped to the bounds;
- `loink_refined`: the same, then the legs re-solved in closed form for the footholds at
  the network's body pose and the commanded height (MagnetoProblem.refine_legs): exact
  feet, the body pose (the learned optimum) untouched;
- `loink_runtime`: the whole runtime call the node makes (LOInKSolver.solve with
  refine_answer=True: the same closed-form legs, then the answer checked by Pinocchio
  forward kinematics and its true cost evaluated; the time includes both checks);
- `ipopt`: MagnetoIpopt from the nominal stance, default tolerances, its NLP functions
  JIT-compiled to C (the stronger baseline: about half the time of CasADi's virtual
  machine; falls back to it without a C compiler), and `ipopt_vm`: the same without JIT.
Speed-ups are IPOPT (JIT) time / LOInK time per target.
Foot error: max over the four feet of |Pinocchio foot frame (gimbals resolved) - target|.
Cost: J (what both methods minimise) and J_f (exact max over feet of the required pull).
"""

from collections import Counter

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.magneto_ipopt import MagnetoIpopt
from loink_ros.core.problems.magneto import MagnetoProblem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.ambiguity import NEAR_OPTIMAL
from loink_ros.tools.timing import TIMING, best_of
from loink_ros.tools.verify_magneto import AGREE, DISTINCT, feasible_stances

AMBIGUITY_TARGETS = 50     # targets that also get a multi-start IPOPT run
AMBIGUITY_STARTS = 8
WORSE = 1e-3               # relative: IPOPT "worse than LOInK" beyond this
METHODS = ('loink', 'loink_refined', 'loink_runtime', 'ipopt', 'ipopt_vm')
LABELS = {'loink': 'LOInK (network only)', 'loink_refined': 'LOInK + leg IK (ours)',
          'loink_runtime': 'LOInK runtime solve (refined, FK-checked, cost evaluated)', 'ipopt': 'IPOPT (CasADi JIT, exact Hessian)',
          'ipopt_vm': 'IPOPT (CasADi VM, exact Hessian)'}


class LOInKMagneto:
    """The LOInK path timed by the bench: inverse, clip, optional closed-form legs."""

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
        return self.norm.x_from_net(self.model.network.inverse(w).x)


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
    feet, normals = problem.foot_placements(q[None])
    terms = problem.cost_terms(q[None])
    feas = problem.feasibility(q[None], tol=1e-9)
    urdf = bool(np.all((q[6:] >= problem.joint_lower) & (q[6:] <= problem.joint_upper)))
    return {'foot_error_mm': 1e3 * float(np.linalg.norm(feet[0] - task[:12].reshape(4, 3), axis=1).max()),
            'height_error_mm': 1e3 * abs(q[5] - task[12]),
            'J': float(terms['J'][0]), 'J_f': float(terms['J_f_hard'][0]),
            'in_bounds': bool(feas['bounds'][0]), 'in_urdf_limits': urdf,
            'gimbals_ok': bool(feas['gimbals'][0]), 'clearance_ok': bool(feas['clearance'][0]),
            'feasible': bool(feas['all'][0])}


def _stats(values) -> dict:
    v = np.asarray(values, float)
    return {'mean': float(v.mean()), 'median': float(np.median(v)), 'min': float(v.min()),
            'max': float(v.max())}


def _table(summary: dict) -> str:
    rows = ['| Method | Solve time (ms) | Foot error (mm) | Cost J_f (N) | Cost J (N) |',
            '|---|---|---|---|---|']
    fmt = lambda s, d: f"{s['mean']:.{d}} ({s['min']:.{d}}-{s['max']:.{d}})"
    for m in METHODS:
        s = summary[m]
        err_format = '2f' if s['foot_error_mm']['max'] >= 0.01 else '1e'
        rows.append(f"| {LABELS[m]} | {fmt(s['time_ms'], '3f')} | {fmt(s['foot_error_mm'], err_format)} "
                    f"| {fmt(s['J_f'], '2f')} | {fmt(s['J'], '2f')} |")
    return '\n'.join(rows)


def run(model_name: str, n_tasks: int, seed: int) -> dict:
    """All figures of the Magneto bench."""
    model = load_model(model_name)
    meta = model.problem
    problem = MagnetoProblem(inclination_deg=meta.get('inclination_deg', 40.0))
    loink = LOInKMagneto(model, problem)
    solver = LOInKSolver(model, problem)
    ipopt, ipopt_vm = MagnetoIpopt(problem, jit=True), MagnetoIpopt(problem)
    tasks = held_out_targets(problem, n_tasks, seed)
    for task in tasks[:5]:   # warm-up (first calls allocate)
        loink.solve(task, True), ipopt.solve(task), ipopt_vm.solve(task)
        solver.solve(task, refine_answer=True)
    rows = []
    rng = np.random.default_rng(seed + 1)
    for i, task in enumerate(tqdm(tasks, desc='bench magneto', unit='target')):
        row = {}
        for m, func in (('loink', lambda: loink.solve(task, False)),
                        ('loink_refined', lambda: loink.solve(task, True)),
                        ('loink_runtime', lambda: solver.solve(task, refine_answer=True).q),
                        ('ipopt', lambda: ipopt.solve(task)),
                        ('ipopt_vm', lambda: ipopt_vm.solve(task))):
            ms, out = best_of(func)
            if m == 'ipopt':
                row['ipopt_status'], row['ipopt_success'] = out.status, out.success
                row['ipopt_iterations'] = out.iterations
            if m.startswith('ipopt'):
                out = out.q
            row[m] = {'time_ms': ms, **evaluate(problem, out, task)}
        raw = loink.unclipped(task)[0]
        row['clipped'] = bool(np.any((raw < problem.lower) | (raw > problem.upper)))
        if i < AMBIGUITY_TARGETS:
            starts = feasible_stances(problem, task, 200, rng)[:AMBIGUITY_STARTS]
            found = [r for r in [ipopt.solve(task, q0) for q0 in starts] if r.success]
            found.append(ipopt.solve(task))
            best = min(found, key=lambda r: r.cost)
            near = [r for r in found if r.cost <= (1 + NEAR_OPTIMAL) * best.cost]
            row['ambiguous'] = max(np.abs(r.q - best.q).max() for r in near) > DISTINCT
            row['nominal_start_best'] = abs(found[-1].cost - best.cost) <= AGREE * best.cost
        rows.append(row)
    summary = {}
    for m in METHODS:
        col = lambda k: [r[m][k] for r in rows]
        summary[m] = {k: _stats(col(k)) for k in ('time_ms', 'foot_error_mm', 'height_error_mm', 'J', 'J_f')}
        for k in ('in_bounds', 'in_urdf_limits', 'gimbals_ok', 'clearance_ok', 'feasible'):
            summary[m][f'{k}_fraction'] = float(np.mean(col(k)))
    ok = np.array([r['ipopt_success'] for r in rows])
    t_ipopt = np.array([r['ipopt']['time_ms'] for r in rows])
    speed = t_ipopt / np.array([r['loink_refined']['time_ms'] for r in rows])
    speed_runtime = t_ipopt / np.array([r['loink_runtime']['time_ms'] for r in rows])
    speed_vm = np.array([r['ipopt_vm']['time_ms'] for r in rows]) / np.array(
        [r['loink_refined']['time_ms'] for r in rows])
    ratio = np.array([r['loink_refined']['J'] / r['ipopt']['J'] for r in rows])[ok]
    ratio_f = np.array([r['loink_refined']['J_f'] / r['ipopt']['J_f'] for r in rows])[ok]
    ratio_runtime = np.array([r['loink_runtime']['J'] / r['ipopt']['J'] for r in rows])[ok]
    ratio_raw = np.array([r['loink']['J'] / r['ipopt']['J'] for r in rows])[ok]
    worse = [r['ipopt']['J'] > (1 + WORSE) * r['loink_refined']['J'] and r['loink_refined']['feasible']
             for r in rows]
    amb = [r['ambiguous'] for r in rows if 'ambiguous' in r]
    statuses = Counter(r['ipopt_status'] for r in rows)
    return {
        'model': model.name, 'model_version': model.version, 'n_targets': len(rows),
        'inclination_deg': problem.inclination_deg,
        'timing': TIMING + ', all methods in one process',
        'methods': summary,
        'ipopt_success_count': int(ok.sum()), 'ipopt_statuses': dict(statuses),
        'ipopt_status_per_target': [r['ipopt_status'] for r in rows],
        'ipopt_iterations': _stats([r['ipopt_iterations'] for r in rows]),
        'speedup_mean': float(speed.mean()), 'speedup_median': float(np.median(speed)),
        'speedup_max': float(speed.max()), 'speedup_min': float(speed.min()),
        'speedup_runtime_mean': float(speed_runtime.mean()), 'speedup_runtime_median': float(np.median(speed_runtime)),
        'speedup_vs_ipopt_vm_mean': float(speed_vm.mean()),
        'speedup_vs_ipopt_vm_median': float(np.median(speed_vm)), 'ipopt_jit': ipopt.jit,
        'cost_ratio_mean': float(ratio.mean()), 'cost_ratio_median': float(np.median(ratio)),
        'cost_ratio_max': float(ratio.max()), 'cost_ratio_p95': float(np.percentile(ratio, 95)),
        'cost_ratio_J_f_mean': float(ratio_f.mean()), 'cost_ratio_runtime_mean': float(ratio_runtime.mean()),
        'cost_ratio_unrefined_mean': float(ratio_raw.mean()),
        'ipopt_worse_than_loink_count': int(np.sum(worse)),
        'loink_clipped_fraction': float(np.mean([r['clipped'] for r in rows])),
        'ambiguity': {'targets': len(amb), 'starts_per_target': AMBIGUITY_STARTS + 1,
                      'near_optimal': NEAR_OPTIMAL, 'distinct': DISTINCT,
                      'ambiguous_fraction': float(np.mean(amb)),
                      'nominal_start_found_best_fraction': float(np.mean([r['nominal_start_best'] for r in rows
                                                                          if 'nominal_start_best' in r]))},
        'table_markdown': _table(summary),
    }
