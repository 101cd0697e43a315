"""`loink bench hsa-errors`: where the HSA model's raw EE error comes from, on `loink bench
hsa`'s targets (the same seed and count), as JSON; about a minute.

For each target y, the raw answer q (solver.solve: z = 0's inversion, or the bounded latent's
where that leaves the twist range) splits its EE error exactly in two:
  task(q) - y = (task(q) - G_y(q)) + (G_y(q) - y)
the forward fit's own error at the answer (the simulator against the network's task head)
and the inverse's residual (the network's task at the answer against the target). Targets
are grouped by whether the bounded latent moved z (the learned optimum lies on the range's
bound), by whether the answer touches a bound and by how many of its twists do. Beside them, the forward fit's error at
configurations drawn uniformly in the range and at ones with one twist on a bound, and, on up
to REFERENCE_TARGETS targets of each of the two first groups, the forward fit at the true
optimum (multi-start IPOPT, baselines/hsa_reference.py) against the fit at the answer, and
how far the answer lies from that optimum.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from loink_ros.baselines.hsa_reference import HsaReference
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.hsa import DEFAULT_TARGETS, SEED

MOVED_TOL = 1e-9     # |z| above this: the bounded latent moved z off 0
BOUND_TOL = 1e-6     # rad: a twist this close to a bound is on it
FIT_SAMPLES = 2000
REFERENCE_TARGETS = 300


def run(model: str = 'hsa', count: int = DEFAULT_TARGETS, seed: int = SEED,
        reference_targets: int = REFERENCE_TARGETS) -> dict:
    problem = make_problem('hsa')
    solver = LOInKSolver(load_model(model), problem)
    rng = np.random.default_rng(seed)
    targets = problem.task(rng.uniform(problem.lower, problem.upper, (count, problem.dim)))
    with threadpool_limits(1):
        answers = [solver.solve(y) for y in targets]
    q = np.array([a.q for a in answers])
    moved = np.array([np.abs(a.latent).max() > MOVED_TOL for a in answers])
    at_bound = (q <= problem.lower + BOUND_TOL) | (q >= problem.upper - BOUND_TOL)
    on_bound, bound_count = at_bound.any(axis=1), at_bound.sum(axis=1)
    true, net = problem.task(q), solver.forward(q)[0]
    raw = mm(true - targets)
    fit, residual = mm(true - net), mm(net - targets)
    groups = {'all': np.ones(count, bool), 'bounded_latent_moved_z': moved, 'interior_z0': ~moved,
              'answer_on_a_bound': on_bound, 'answer_inside': ~on_bound,
              **{f'answer_with_{k}_twists_on_a_bound': bound_count == k for k in range(1, problem.dim + 1)}}
    report = {'model': model, 'targets': count, 'seed': seed,
              'split': 'task(q) - y = forward-fit error (task(q) - G_y(q)) + inverse residual '
                       '(G_y(q) - y), EE position, mm',
              'groups': {name: group_figures(mask, raw, fit, residual) for name, mask in groups.items()},
              'raw_error_share_of_the_top_targets': top_shares(raw),
              'forward_fit_at_random_configurations_mm': fit_figures(problem, solver, rng, False),
              'forward_fit_with_one_twist_on_a_bound_mm': fit_figures(problem, solver, rng, True)}
    report['fit_at_the_true_optimum'] = {
        name: at_the_optimum(problem, solver, targets, q, fit, np.flatnonzero(mask)[:reference_targets], rng)
        for name, mask in (('bounded_latent_moved_z', moved), ('interior_z0', ~moved))}
    return report


def mm(error: np.ndarray) -> np.ndarray:
    """EE position distance (m rows of [x, y, theta]) in mm."""
    return 1e3 * np.linalg.norm(error[:, :2], axis=1)


def spread(values: np.ndarray) -> dict:
    return {'mean': float(values.mean()), 'median': float(np.median(values)),
            'p95': float(np.percentile(values, 95)), 'max': float(values.max())}


def group_figures(mask: np.ndarray, raw: np.ndarray, fit: np.ndarray, residual: np.ndarray) -> dict:
    """A group's share of targets and of the mean raw error, and its error components."""
    if not mask.any():
        return {'share_of_targets': 0.0}
    return {'share_of_targets': float(mask.mean()),
            'share_of_the_mean_raw_error': float(raw[mask].sum() / raw.sum()),
            'raw_mm': spread(raw[mask]), 'forward_fit_mm': spread(fit[mask]),
            'inverse_residual_mm': spread(residual[mask])}


def top_shares(raw: np.ndarray) -> dict:
    """The share of the summed raw error carried by the worst 1, 5, 10 and 20 % of targets."""
    ordered = np.sort(raw)[::-1]
    total = ordered.sum()
    return {f'worst_{p}_percent': float(ordered[:max(1, len(raw) * p // 100)].sum() / total)
            for p in (1, 5, 10, 20)}


def fit_figures(problem, solver: LOInKSolver, rng: np.random.Generator, one_on_bound: bool) -> dict:
    """The forward fit's error at FIT_SAMPLES configurations uniform in the range, or with one
    twist (at random) on its lower or upper bound."""
    q = rng.uniform(problem.lower, problem.upper, (FIT_SAMPLES, problem.dim))
    if one_on_bound:
        rows, joints = np.arange(FIT_SAMPLES), rng.integers(0, problem.dim, FIT_SAMPLES)
        q[rows, joints] = np.where(rng.random(FIT_SAMPLES) < 0.5, problem.lower[joints], problem.upper[joints])
    return spread(mm(problem.task(q) - solver.forward(q)[0]))


def at_the_optimum(problem, solver: LOInKSolver, targets: np.ndarray, q: np.ndarray,
                   fit: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> dict:
    """On `rows`: the forward fit at the answer and at the reference's optimum (mm), and the
    distance between the two configurations (rad)."""
    if not len(rows):
        return {'targets': 0}
    reference = HsaReference(problem)
    with threadpool_limits(1):
        optima = np.array([reference.solve(targets[i], rng).phi for i in rows])
    return {'targets': int(len(rows)), 'forward_fit_at_the_answer_mm': spread(fit[rows]),
            'forward_fit_at_the_optimum_mm': spread(mm(problem.task(optima) - solver.forward(optima)[0])),
            'answer_to_optimum_rad': spread(np.linalg.norm(q[rows] - optima, axis=1))}
