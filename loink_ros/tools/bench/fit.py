"""`loink bench fit`: how well a model's network fits its task, on held-out configurations.

Forward fit: the network's task yhat(x) against the true task of sampled configurations x,
per task component (RMSE, and the spread of the component for scale). Inverse: the raw
answer G^-1([y; 0]) (clipped, unrefined) to those tasks: its task error by the true
kinematics and how often it was clipped to the joint limits. For a kinematic problem also
how the tip's orientations spread: the singular values of their mean rotation matrix (near
1: clustered; near 0: all around), and the share more than 0.9 pi from the pose task's
nominal, near its chart's cut.

Refined optima (the first REFINED_TARGETS tasks): ~/solve's refined answer at z = 0, with the
solver's multi-start fallback (the default) and without it (the network's answer alone),
against a 16-start SLSQP optimum of the same cost and limits: success (task error <= 1e-6,
feasible), regret of the successes, and wall times (timing.TIMING).
"""

import numpy as np
import pinocchio as pin

from loink_ros.baselines.reference_optimizer import reference_optimum
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.timing import TIMING, best_of

# Held-out configurations: a seed no training run uses.
SEED = 4242
REFINED_TARGETS = 200
REFERENCE_STARTS = 16
SUCCESS_ERROR = 1e-6


def run(model_name: str, count: int, seed: int = SEED) -> dict:
    model = load_model(model_name)
    problem = problem_for_model(model)
    solver = LOInKSolver(model, problem)
    x = problem.sample(count, np.random.default_rng(seed))
    y = problem.task(x)
    predicted = solver.forward(x)[0]
    error = predicted - y
    raw = solver.solve_rows(y, np.zeros((count, model.latent_dim)), False)[0]
    raw_error = np.array([s.task_error for s in raw])
    position = [i for i, name in enumerate(problem.task_names) if name[-2:] in ('_x', '_y', '_z')]
    return {
        'model': model.name, 'model_version': model.version, 'configurations': count,
        'seed': seed,
        'forward_rmse': dict(zip(problem.task_names, np.sqrt((error ** 2).mean(0)).tolist())),
        'task_std': dict(zip(problem.task_names, y.std(0).tolist())),
        'forward_position_error_median_m': float(np.median(np.linalg.norm(error[:, position], axis=1))),
        'raw_answer_task_error_median': float(np.median(raw_error)),
        'raw_answer_task_error_p95': float(np.percentile(raw_error, 95)),
        'raw_answers_clipped': float(np.mean([s.clipped for s in raw])),
        **orientation_spread(problem, x),
        'refined': refined_optima(model, problem, y[:REFINED_TARGETS], seed),
    }


def refined_optima(model, problem, tasks: np.ndarray, seed: int) -> dict:
    """Refined optima with and without the multi-start fallback against the reference."""
    solvers = {'with_fallback': LOInKSolver(model, problem),
               'network_only': LOInKSolver(model, problem, fallback=False)}
    rows = {name: [] for name in solvers}
    for i, y in enumerate(tasks):
        best = reference_optimum(problem, y, REFERENCE_STARTS, seed=seed + i)
        for name, solver in solvers.items():
            ms, answer = best_of(lambda: solver.solve(y, refine_answer=True))
            ok = answer.task_error <= SUCCESS_ERROR and not answer.violations
            regret = (answer.cost - best.cost) / best.cost if ok and best.success else np.nan
            rows[name].append((ok, regret, ms))
    out = {'targets': len(tasks), 'fallback_available': solvers['with_fallback'].multistart is not None,
           'reference': f'SLSQP, {REFERENCE_STARTS} random starts, best feasible optimum',
           'timing': TIMING}
    for name, values in rows.items():
        ok, regret, ms = (np.array(c, float) for c in zip(*values))
        kept = regret[np.isfinite(regret)]
        out[name] = {'success': float(ok.mean()),
                     'regret_median': float(np.median(kept)) if len(kept) else np.nan,
                     'regret_p95': float(np.percentile(kept, 95)) if len(kept) else np.nan,
                     'time_ms_median': float(np.median(ms)), 'time_ms_p99': float(np.percentile(ms, 99))}
    return out


def orientation_spread(problem, x: np.ndarray) -> dict:
    """The tip orientations' spread over configurations x (module docstring); {} for a
    problem without a tip."""
    if not isinstance(problem, KinematicProblem):
        return {}
    rotations = np.array([problem.tip_pose(q)[1] for q in x])
    out = {'orientation_mean_singular_values':
           np.linalg.svd(rotations.mean(0), compute_uv=False).tolist()}
    if problem.is_pose:
        angles = np.array([np.linalg.norm(pin.log3(problem.nominal.T @ r)) for r in rotations])
        out['orientation_share_beyond_0.9pi_of_nominal'] = float(np.mean(angles > 0.9 * np.pi))
    return out
