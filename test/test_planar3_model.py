"""Quality of the shipped planar3 model against a dense search (looser than the bench)."""

import numpy as np
import pytest

from loink_ros.core.problems.arms.planar3 import Planar3Problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.planar3 import ground_truth


@pytest.fixture(scope='module')
def results():
    problem = Planar3Problem()
    model = load_model('planar3')
    solver = LOInKSolver(model, problem)
    tasks = np.random.default_rng(2024).uniform(model.task_lower, model.task_upper, (60, 1))
    rows = []
    for y in tasks:
        truth = ground_truth(problem, float(y[0]))
        raw, refined = solver.solve(y), solver.solve(y, refine_answer=True)
        span = truth['j_max'] - truth['j_min']
        rows.append((raw, refined, (raw.cost - truth['j_min']) / span,
                     (refined.cost - truth['j_min']) / span, truth['span']))
    return problem, rows


def test_self_motion_set_reaches_the_task():
    problem = Planar3Problem()
    configs = problem.self_motion_set(0.25, 120)
    assert len(configs) > 1000
    assert np.abs(problem.task(configs[::50])[:, 0] - 0.25).max() < 1e-12
    assert np.all((configs >= problem.lower) & (configs <= problem.upper))


def test_each_task_has_one_clear_optimum(results):
    _, rows = results
    spans = np.array([r[4] for r in rows])
    assert (spans > 0.3).mean() <= 0.05


def test_raw_answers_are_near_optimal_and_near_the_task(results):
    _, rows = results
    regret = np.array([r[2] for r in rows])
    error = np.array([r[0].task_error for r in rows])
    assert np.median(regret) < 0.02 and np.percentile(regret, 95) < 0.1
    assert np.median(error) < 0.01


def test_refined_answers_hit_the_task_inside_limits(results):
    problem, rows = results
    regret = np.array([r[3] for r in rows])
    assert np.median(regret) < 0.02 and np.percentile(regret, 95) < 0.1
    for _, refined, *_ in rows:
        assert refined.task_error < 1e-8
        assert np.all((refined.q >= problem.lower) & (refined.q <= problem.upper))


def test_design_check_separates_ambiguous_designs():
    from loink_ros.tools.design_check import run
    designs = run('planar3', 8, 3)['designs']
    assert designs['effort + posture, shipped limits (shipped)']['ambiguous_fraction'] == 0.0
    assert designs['gravity torque only, wide limits +/-(1.2, 2.2, 2.2)']['ambiguous_fraction'] > 0.5
