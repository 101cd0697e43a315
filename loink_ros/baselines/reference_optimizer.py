"""Reference answers: multi-start SLSQP on min J(q) s.t. task(q) = y, lower <= q <= upper,
and the same optimiser from one nominal start (what a single local optimisation gives)."""

import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from loink_ros.core.problems.problem import Problem

TASK_TOL = 1e-6      # m: a start counts as feasible when its task error is below this
AGREE_COST = 1e-4    # relative cost gap under which two optima are the same one
AGREE_DIST = 0.05    # rad: ... and their postures this close


@dataclass
class ReferenceResult:
    """Best optimum of all starts; `optima` holds every feasible local optimum (q, J)."""

    q: np.ndarray
    cost: float
    task_error: float
    success: bool
    status: str
    starts: int
    feasible: int
    agreed: int
    seconds: float
    optima: list[tuple[np.ndarray, float]]


def cost_gradient(problem: Problem, q: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """The problem's analytic cost gradient, or central differences when it has none."""
    if hasattr(problem, 'cost_gradient'):
        return problem.cost_gradient(q)
    eye = step * np.eye(len(q))
    return (problem.cost(q + eye) - problem.cost(q - eye)) / (2 * step)


def local_optimum(problem: Problem, y: np.ndarray, q0: np.ndarray, max_iter: int = 200):
    """One SLSQP run from q0; returns scipy's OptimizeResult."""
    constraint = {'type': 'eq', 'fun': lambda q: problem.task(q)[0] - y,
                  'jac': problem.task_jacobian}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return minimize(lambda q: float(problem.cost(q)[0]), q0,
                        jac=lambda q: cost_gradient(problem, q), method='SLSQP',
                        bounds=list(zip(problem.lower, problem.upper)), constraints=[constraint],
                        options={'maxiter': max_iter, 'ftol': 1e-12})


def reference_optimum(problem: Problem, y, starts: int = 16, seed: int = 0,
                      initial: np.ndarray | None = None) -> ReferenceResult:
    """Multi-start SLSQP from `initial` rows (if any) plus random configurations in the limits."""
    began = time.perf_counter()
    y = np.asarray(y, float)
    rng = np.random.default_rng(seed)
    seeds = rng.uniform(problem.lower, problem.upper, size=(starts, problem.dim))
    if initial is not None:
        seeds = np.vstack([np.atleast_2d(initial), seeds])
    optima, statuses = [], []
    for q0 in seeds:
        result = local_optimum(problem, y, q0)
        q = np.clip(result.x, problem.lower, problem.upper)
        error = float(np.linalg.norm(problem.task(q)[0] - y))
        statuses.append(result.message)
        if error <= TASK_TOL:
            optima.append((q, float(problem.cost(q)[0])))
    seconds = time.perf_counter() - began
    if not optima:
        return ReferenceResult(seeds[0], float('nan'), float('inf'), False,
                               f'no feasible start ({statuses[0]})', len(seeds), 0, 0, seconds, [])
    best_q, best_j = min(optima, key=lambda o: o[1])
    agreed = sum(j <= best_j * (1 + AGREE_COST) + 1e-12 and np.linalg.norm(q - best_q) <= AGREE_DIST
                 for q, j in optima)
    return ReferenceResult(best_q, best_j, float(np.linalg.norm(problem.task(best_q)[0] - y)), True,
                           'ok', len(seeds), len(optima), int(agreed), seconds, optima)


def nominal_start(problem: Problem) -> np.ndarray:
    """The single start: the middle of the joint ranges (n,)."""
    return 0.5 * (problem.lower + problem.upper)


def single_start_optimum(problem: Problem, y) -> ReferenceResult:
    """reference_optimum with one start, nominal_start: the same cost, constraints and
    feasibility test; `success` is False when that start ends off the target."""
    return reference_optimum(problem, y, starts=0, initial=nominal_start(problem))


def ambiguity_span(result: ReferenceResult, near: float = 0.02) -> float:
    """Largest distance (rad) from the best optimum to an optimum within `near` of its cost."""
    if not result.optima:
        return float('nan')
    close = [q for q, j in result.optima if j <= result.cost * (1 + near) + 1e-12]
    return float(max(np.linalg.norm(q - result.q) for q in close))
