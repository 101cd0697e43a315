"""The refined optimum's multi-start fallback (LOInKSolver.multistart): where the network's
answer left the limits or its refinement missed, the cheaper exact answer of the network's
and the position-only multi-start search's; never a worse or a non-exact one."""
import numpy as np
import pytest

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import EXACT_TOL, LOInKSolver
from loink_ros.tools.bench.targets import reachable_targets

TARGETS = 40


@pytest.fixture(scope='module')
def panda_full():
    model = load_model('panda_full')
    problem = problem_for_model(model)
    targets = reachable_targets(problem, model, TARGETS, np.random.default_rng(8))
    return model, problem, targets


def test_the_fallback_is_only_for_models_whose_task_is_the_tip_position():
    for name, expected in (('panda_full', True), ('xarm7_full', True), ('panda', True),
                           ('planar3', False), ('magneto', False)):
        model = load_model(name)
        assert (LOInKSolver(model, problem_for_model(model)).multistart is not None) == expected, name


def test_refined_optima_are_exact_and_never_costlier_than_the_networks(panda_full):
    model, problem, targets = panda_full
    with_fallback = LOInKSolver(model, problem)
    network_only = LOInKSolver(model, problem, fallback=False)
    assert network_only.multistart is None
    fell_back = improved = 0
    for y in targets:
        a, b = with_fallback.solve(y, refine_answer=True), network_only.solve(y, refine_answer=True)
        assert np.all(a.q >= problem.lower) and np.all(a.q <= problem.upper)
        assert a.task_error == pytest.approx(np.linalg.norm(problem.task(a.q)[0] - y), abs=1e-15)
        b_exact = b.task_error <= EXACT_TOL and not b.violations
        if b_exact:
            assert a.cost <= b.cost
        if not np.array_equal(a.q, b.q):
            fell_back += 1
            assert a.clipped or not b_exact   # only where the network's answer was poor
            assert a.task_error <= EXACT_TOL and not a.violations
            np.testing.assert_allclose(a.latent, with_fallback.latent(a.q), atol=1e-12)
            improved += (not b_exact) or a.cost < b.cost
    # panda_full's network is a start model for full poses: its position optima are poor.
    assert fell_back >= TARGETS // 4 and improved == fell_back


def test_the_fallback_answers_the_same_on_every_call(panda_full):
    # Across runtimes the refined answers from far starts differ (the refinement is chaotic
    # there: test_compiled.py's rule); the search itself is bit-identical (test_pose_solver.py).
    model, problem, targets = panda_full
    solver = LOInKSolver(model, problem)
    assert solver.runtime == 'compiled'
    for y in targets[:10]:
        np.testing.assert_array_equal(solver.solve(y, refine_answer=True).q,
                                      solver.solve(y, refine_answer=True).q)


def test_unrefined_and_sampled_answers_are_the_networks(panda_full):
    model, problem, targets = panda_full
    with_fallback = LOInKSolver(model, problem)
    network_only = LOInKSolver(model, problem, fallback=False)
    y = targets[0]
    np.testing.assert_array_equal(with_fallback.solve(y).q, network_only.solve(y).q)
    a = with_fallback.sample(y, 5, 0.5, refine_answer=True, random_seed=3)
    b = network_only.sample(y, 5, 0.5, refine_answer=True, random_seed=3)
    for s, t in zip(a, b):
        np.testing.assert_array_equal(s.q, t.q)


def test_an_empty_latent_is_the_optimum_with_its_fallback(panda_full):
    """~/solve's request carries latent [] by default: the optimum, refined with the fallback
    as latent None; an explicit z = 0 is the network's own answer there."""
    model, problem, targets = panda_full
    solver = LOInKSolver(model, problem)
    network_only = LOInKSolver(model, problem, fallback=False)
    differs = 0
    for y in targets[:10]:
        optimum = solver.solve(y, None, refine_answer=True)
        np.testing.assert_array_equal(solver.solve(y, [], refine_answer=True).q, optimum.q)
        explicit = solver.solve(y, np.zeros(model.latent_dim), refine_answer=True)
        raw = network_only.solve(y, np.zeros(model.latent_dim), refine_answer=True)
        np.testing.assert_array_equal(explicit.q, raw.q)
        differs += not np.array_equal(optimum.q, explicit.q)
    assert differs >= 2
