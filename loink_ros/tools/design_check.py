"""`loink design planar3|panda`: does each task have ONE clear optimum? Designs side by side.

The structured cost 0.5 ||z||^2 + phi(y) has one minimum per task (METHOD.md s.6), so a
problem is only worth learning when its optima are unique. A task is ambiguous when a
configuration more than 0.3 rad from the best one comes within 2 % of it (planar3: of the
task's cost range, dense search; panda: of the best cost, multi-start SLSQP).
"""

from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.reference_optimizer import ambiguity_span, reference_optimum
from loink_ros.core.problems.arms.panda import PandaProblem
from loink_ros.core.problems.arms.planar3 import Planar3Problem
from loink_ros.core.problems.problem import Problem
from loink_ros.tools.ambiguity import AMBIGUOUS_SPAN
from loink_ros.tools.bench.planar3 import ground_truth

PANDA_STARTS = 24
WIDE = (-np.array([1.2, 2.2, 2.2]), np.array([1.2, 2.2, 2.2]))
DESIGNS: dict[str, dict[str, Callable[[], Problem]]] = {
    'planar3': {
        'gravity torque only, wide limits +/-(1.2, 2.2, 2.2)':
            lambda: Planar3Problem(effort_weight=1.0, posture_weight=0.0, limits=WIDE),
        'gravity torque only, shipped limits':
            lambda: Planar3Problem(effort_weight=1.0, posture_weight=0.0),
        'posture only, wide limits': lambda: Planar3Problem(effort_weight=0.0, limits=WIDE),
        'effort + posture, wide limits': lambda: Planar3Problem(limits=WIDE),
        'effort + posture, shipped limits (shipped)': Planar3Problem,
    },
    'panda': {
        'posture, URDF limits': lambda: PandaProblem(limits=None),
        'posture, narrowed limits (shipped)': PandaProblem,
    },
}


def _tasks(problem: Problem, count: int, rng: np.random.Generator) -> np.ndarray:
    """Tasks reached by sampled configurations (held inside the 1-99 % range for planar3)."""
    reached = problem.task(problem.sample(max(count, 2000), rng))
    if problem.task_dim == 1:
        low, high = np.percentile(reached, [1, 99])
        return rng.uniform(low, high, size=(count, 1))
    return reached[:count]


def _span(problem: Problem, y: np.ndarray, seed: int) -> float:
    if isinstance(problem, Planar3Problem):
        return ground_truth(problem, float(y[0]))['span']
    return ambiguity_span(reference_optimum(problem, y, PANDA_STARTS, seed=seed))


def run(robot: str, n_tasks: int, seed: int) -> dict:
    """Ambiguous fraction and near-optimal span of every design of `robot`."""
    if robot not in DESIGNS:
        raise SystemExit(f'no designs for {robot!r}; known: {", ".join(DESIGNS)}')
    out = {'robot': robot, 'n_tasks': n_tasks, 'seed': seed, 'designs': {}}
    for name, make in DESIGNS[robot].items():
        problem = make()
        tasks = _tasks(problem, n_tasks, np.random.default_rng(seed))
        spans = np.array([_span(problem, y, seed + i)
                          for i, y in enumerate(tqdm(tasks, desc=name, unit='task'))])
        out['designs'][name] = {'ambiguous_fraction': float((spans > AMBIGUOUS_SPAN).mean()),
                                'near_optimal_span_median_rad': float(np.nanmedian(spans)),
                                'near_optimal_span_p95_rad': float(np.nanpercentile(spans, 95))}
    return out
