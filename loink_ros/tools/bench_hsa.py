"""`loink bench hsa`: the paper's Table II on the planar HSA soft robot, in one process, on
the same held-out targets:
- LOInK raw (one network inversion at z = 0, clipped to the twist range);
- LOInK refined (the statics' projection onto the target);
- IKFlow at z = 0;
- IKFlow best of K samples by true cost among those within its best error;
- the optimisation reference (multi-start IPOPT on the statics).

Targets: the end-effector poses of twists drawn uniformly in the range with a seed no
training run uses. Each call is timed as the user's call runs, with its validation by the
simulator (one steady-state solve of the answer; K for best-of-K), one thread, best of 3
after a warm call. Errors and costs come from the simulator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.baselines.hsa_reference import HsaReference
from loink_ros.baselines.ikflow import IkflowSolver
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.timing import TIMING, best_of, load_average, speedups

SEED = 20261203
DEFAULT_TARGETS = 2000
BEST_OF = 32
IKFLOW_LATENT_STD = 0.25   # our choice for IKFlow's samples z ~ N(0, std^2 I)


def _ikflow_mode(flow: IkflowSolver, problem, y: np.ndarray) -> np.ndarray:
    q = np.clip(flow.solve(y[None])[0], problem.lower, problem.upper)
    problem.task(q[None])   # its validation, as LOInK's call validates
    return q


def _ikflow_best(flow: IkflowSolver, problem, y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The cheapest of K samples among those within 1 mm of the best one's error."""
    z = rng.normal(0.0, IKFLOW_LATENT_STD, (BEST_OF, flow.dim))
    q = np.clip(flow.configurations(np.repeat(y[None], BEST_OF, 0), z), problem.lower, problem.upper)
    error = np.linalg.norm(problem.task(q)[:, :2] - y[:2], axis=1)
    near = error <= error.min() + 1e-3
    return q[near][np.argmin(problem.cost(q[near]))]


def _summary(values: np.ndarray) -> dict:
    return {'mean': float(np.mean(values)), 'median': float(np.median(values)),
            'min': float(np.min(values)), 'max': float(np.max(values))}


def run(model: str, ikflow: Path, count: int = DEFAULT_TARGETS, seed: int = SEED) -> dict:
    problem = make_problem('hsa')
    solver = LOInKSolver(load_model(model), problem)
    flow = IkflowSolver(ikflow)
    reference = HsaReference(problem)
    rng = np.random.default_rng(seed)
    targets = problem.task(rng.uniform(problem.lower, problem.upper, (count, problem.dim)))
    before = load_average()
    methods = {'loink_raw': lambda y: solver.solve(y).q,
               'loink_refined': lambda y: solver.solve(y, refine_answer=True).q,
               'ikflow_z0': lambda y: _ikflow_mode(flow, problem, y),
               'ikflow_best_of_k': lambda y: _ikflow_best(flow, problem, y, rng)}
    answers = {name: [] for name in methods}
    ms = {name: [] for name in methods}
    reference_cost, reference_ms, reference_valid = [], [], []
    clipped = []
    with threadpool_limits(1):
        for y in tqdm(targets, desc='bench hsa', unit='target'):
            for name, call in methods.items():
                t, q = best_of(lambda: call(y))
                ms[name].append(t)
                answers[name].append(q)
            clipped.append(solver.solve(y).clipped)
            found = reference.solve(y, rng)
            reference_cost.append(found.cost)
            reference_ms.append(found.time_ms)
            reference_valid.append(found.valid)
    reference_cost = np.array(reference_cost)
    report = {'targets': count, 'seed': seed, 'timing': TIMING, 'best_of_k': BEST_OF,
              'ikflow_latent_std': IKFLOW_LATENT_STD, 'load_average_before': before,
              'load_average_after': load_average(),
              'reference': {'success': float(np.mean(reference_valid)),
                            'time_ms': _summary(np.array(reference_ms)),
                            'cost': _summary(reference_cost), 'starts': reference.starts},
              'loink_raw_clipped': float(np.mean(clipped))}
    report['per_target'] = {'reference_cost': reference_cost.tolist()}
    for name in methods:
        q = np.array(answers[name])
        error = problem.task(q) - targets
        cost = problem.cost(q)
        report['per_target'][name] = {'ee_error_mm': (1e3 * np.linalg.norm(error[:, :2], axis=1)).tolist(),
                                      'cost': cost.tolist()}
        report[name] = {
            'time_ms': _summary(np.array(ms[name])),
            'ee_error_mm': _summary(1e3 * np.linalg.norm(error[:, :2], axis=1)),
            'theta_error_deg': _summary(np.degrees(np.abs(error[:, 2]))),
            'cost': _summary(cost),
            'cost_ratio_to_reference': _summary(cost / reference_cost),
            'inside_range': bool(np.all((q >= problem.lower) & (q <= problem.upper)))}
    report['ikflow_z0_over_loink_raw_time'] = speedups(ms['ikflow_z0'], ms['loink_raw'])
    report['batched_per_target_ms'] = _batched(solver, flow, targets)
    return report


def _batched(solver: LOInKSolver, flow: IkflowSolver, targets: np.ndarray) -> dict:
    """Per-target time of one batched call over all targets (answers only, no validation)."""
    import time

    began = time.perf_counter()
    solver.model.inverse(np.hstack([solver.model.normalization.y_to_net(targets),
                                    np.zeros((len(targets), solver.model.latent_dim))]))
    loink = time.perf_counter() - began
    began = time.perf_counter()
    flow.solve(targets)
    ikflow = time.perf_counter() - began
    return {'loink': 1e3 * loink / len(targets), 'ikflow': 1e3 * ikflow / len(targets)}
