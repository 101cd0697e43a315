"""`loink bench magneto-verify`: is the Magneto set-up well posed? (METHOD.md s.6)

For each variant of the problem (the shipped one and the alternatives docs/MAGNETO.md
discusses) and each target: IPOPT from the nominal stance and from `starts` random feasible
stances of the same target. Reports how often starts agree on the best optimum, how often a
DISTINCT posture (max |dq| > DISTINCT) comes within NEAR_OPTIMAL (2 %) of the best cost,
whether the best optimum is interior (margins to every bound, limit and constraint), the
spread of J over random feasible postures of the target, and each cost term's share.
No model needed.
"""

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.magneto_ipopt import MagnetoIpopt
from loink_ros.core.problems.magneto.parameters import CLEARANCE
from loink_ros.core.problems.magneto.problem import MagnetoProblem
from loink_ros.tools.ambiguity import NEAR_OPTIMAL
from loink_ros.tools.bench.columns import Columns

DISTINCT = 0.05        # rad or m, max over the 18 coordinates
AGREE = 1e-4           # relative cost gap of "the same optimum"
STARTS = 12
POSTURES = 400         # random stances tried per target for starts and the spread

VARIANTS = {
    'shipped (40 deg, gimbal barrier 1.0)': {},
    '40 deg, no gimbal barrier': {'w_gimbal': 0.0},
    '60 deg (fallback), gimbal barrier 1.0': {'inclination_deg': 60.0},
}


def feasible_stances(problem: MagnetoProblem, task: np.ndarray, count: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Random feasible configurations reaching `task` exactly (body pose sampled, legs by IK)."""
    q = problem.stances_for(np.repeat(task[None], count, 0), rng)
    q = q[np.isfinite(q).all(1)]
    return q[problem.feasibility(q)['all']]


def margins(problem: MagnetoProblem, q: np.ndarray) -> dict:
    """Distances of one configuration to each kind of bound (positive = inside)."""
    out = problem.forward(q)
    g = out['gimbal_angles'][0]
    urdf_u = (q[6:] - problem.joint_lower) / (problem.joint_upper - problem.joint_lower)
    return {'pose_bound': float(np.min(np.minimum(q[:6] - problem.lower[:6], problem.upper[:6] - q[:6]))),
            'joint_bound_rad': float(np.min(np.minimum(q[6:] - problem.lower[6:], problem.upper[6:] - q[6:]))),
            'urdf_limit_fraction': float(np.min(np.minimum(urdf_u, 1 - urdf_u))),
            'gimbal_deg': float(np.degrees(np.min(np.minimum(g - problem.gimbal_lower,
                                                             problem.gimbal_upper - g)))),
            'clearance_m': float(out['corners'][0, :, 2].min() - CLEARANCE)}


def study(problem: MagnetoProblem, n_tasks: int, seed: int, starts: int = STARTS,
          progress: bool = True) -> dict:
    """Multi-start figures of one problem variant."""
    ipopt = MagnetoIpopt(problem)
    rng = np.random.default_rng(seed)
    rows = []
    with tqdm(total=n_tasks, desc=f'verify {problem.inclination_deg:.0f} deg', disable=not progress) as bar:
        while len(rows) < n_tasks:
            task = problem.sample_targets(1, rng)[0]
            postures = feasible_stances(problem, task, POSTURES, rng)
            if len(postures) < starts:
                continue
            nominal = ipopt.solve(task)
            results = [nominal] + [ipopt.solve(task, q0) for q0 in postures[:starts]]
            ok = [r for r in results if r.success and problem.feasibility(r.q, 1e-6)['all'][0]]
            if not ok:
                continue
            best = min(ok, key=lambda r: r.cost)
            near = [r for r in ok if r.cost <= (1 + NEAR_OPTIMAL) * best.cost]
            terms = problem.cost_terms(best.q)
            sampled = problem.cost_terms(postures, 'numpy')['J']
            rows.append({
                'agree': np.mean([abs(r.cost - best.cost) <= AGREE * best.cost for r in ok]),
                'success': len(ok) / len(results),
                'ambiguous': max(np.abs(r.q - best.q).max() for r in near) > DISTINCT,
                'nominal_found_best': nominal.success and abs(nominal.cost - best.cost) <= AGREE * best.cost,
                **margins(problem, best.q),
                'J': best.cost, 'J_f': float(terms['J_f'][0]), 'J_f_hard': float(terms['J_f_hard'][0]),
                **{f'share_{k}': float(terms[k][0] / best.cost) for k in ('J_f', 'posture', 'barrier', 'gimbal')},
                'spread_median': float(np.median(sampled) / best.cost),
                'spread_p95': float(np.percentile(sampled, 95) / best.cost),
                'spread_max': float(sampled.max() / best.cost),
                'ipopt_iterations': nominal.iterations, 'ipopt_ms': nominal.time_ms})
            bar.update()
    col = Columns(rows)
    summary = {'n_targets': len(rows), 'starts_per_target': starts + 1,
               'ambiguous_fraction': float(col['ambiguous'].mean()),
               'start_agreement_mean': float(col['agree'].mean()),
               'start_agreement_min': float(col['agree'].min()),
               'nominal_start_found_best': float(col['nominal_found_best'].mean())}
    for k in col:
        if k in ('agree', 'ambiguous', 'nominal_found_best'):
            continue
        summary[k] = {'mean': float(col[k].mean()), 'min': float(col[k].min()), 'max': float(col[k].max())}
    return summary


def run(model_name: str, n_tasks: int, seed: int) -> dict:
    """All variants; `model_name` is unused (the study needs no model)."""
    out = {'near_optimal': NEAR_OPTIMAL, 'distinct_threshold': DISTINCT, 'variants': {}}
    for label, settings in VARIANTS.items():
        out['variants'][label] = {'settings': settings,
                                  **study(MagnetoProblem(**settings), n_tasks, seed)}
    return out
