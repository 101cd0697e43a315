"""The HSA robot on the compiled runtime: every generated or hand-written C function of its
implicit statics against the numpy/CasADi reference (random twists and the range's bounds),
the learned optimum inside the range, and threads sharing the SQP's workspace pool (numpy
serving when the C cannot be built: test_compiled.py)."""

import ctypes
import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from loink_ros.core.compiled.build import compiled_library
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver

PARITY = 1e-10
SEED = 5


@pytest.fixture(scope='module')
def problem():
    return make_problem('hsa')


@pytest.fixture(scope='module')
def library(problem):
    return ctypes.CDLL(str(compiled_library(problem).path))


@pytest.fixture(scope='module')
def solvers(problem):
    model = load_model('hsa')
    compiled = LOInKSolver(model, problem)
    assert compiled.runtime == 'compiled', compiled.runtime_note
    return compiled, LOInKSolver(model, problem, runtime='numpy')


def twists(problem, corners: bool = True) -> np.ndarray:
    """Random twists, the middle of every face of the range and (`corners`) every corner."""
    rng = np.random.default_rng(SEED)
    middle = 0.5 * (problem.lower + problem.upper)
    faces = [np.where(np.arange(problem.dim) == i, bound[i], middle)
             for i in range(problem.dim) for bound in (problem.lower, problem.upper)]
    rows = [rng.uniform(problem.lower, problem.upper, (40, problem.dim)), faces]
    if corners:
        rows.append(list(itertools.product(*zip(problem.lower, problem.upper))))
    return np.vstack(rows)


def call(function, *arrays, out: int) -> np.ndarray:
    result = np.empty(out)
    function(*(np.ascontiguousarray(a, float).ctypes.data_as(ctypes.c_void_p) for a in arrays),
             result.ctypes.data_as(ctypes.c_void_p))
    return result


def test_the_task_and_its_jacobian_match_the_statics(problem, library):
    q = twists(problem)
    want = problem.task(q)
    got = np.array([call(library.problem_task, row, out=3) for row in q])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    for row in q[::4]:
        jacobian = call(library.problem_jacobian, row, out=3 * problem.dim).reshape(problem.dim, 3).T
        np.testing.assert_allclose(jacobian, problem.task_jacobian(row), rtol=0, atol=1e-9)


def test_the_closed_form_matches_the_sqp_and_the_projection(problem, library):
    # Not from the corners: there, with every twist on a bound, the SQP's active set and the
    # projection's held twists turn on rounding (as the damped least squares does between
    # the limits: test_compiled.py compares refined answers that start close).
    rng = np.random.default_rng(SEED)
    q = twists(problem, corners=False)
    targets = problem.task(np.clip(q + rng.normal(0.0, 0.1, q.shape), problem.lower, problem.upper))
    for start, target in zip(q, targets):
        got = call(library.problem_closed_form, start, target, out=problem.dim)
        np.testing.assert_allclose(got, problem.closed_form_refine(start, target), rtol=0, atol=1e-9)


def test_an_unconverged_steady_state_is_nan_in_both(problem, library):
    far = np.full(problem.dim, 1e3)     # far outside the range: Newton does not settle
    assert np.isnan(problem.task(far[None])).all()
    assert np.isnan(call(library.problem_task, far, out=3)).all()


def test_the_optimum_inside_the_range_matches_numpy(solvers):
    compiled, reference = solvers
    problem = compiled.problem
    y = problem.task(np.random.default_rng(SEED).uniform(problem.lower, problem.upper, (60, problem.dim)))
    raw = reference.solve_optimum_inside(y, False)
    assert sum(np.abs(s.latent).max() > 0 for s in raw) >= 5   # the bounded latent's rounds ran
    for refine in (False, True):
        got = compiled.solve_optimum_inside(y, refine)
        want = reference.solve_optimum_inside(y, refine)
        for c, r in zip(got, want, strict=True):
            np.testing.assert_allclose(c.q, r.q, rtol=0, atol=PARITY)
            np.testing.assert_allclose(c.latent, r.latent, rtol=0, atol=PARITY)
            assert abs(c.cost - r.cost) <= PARITY and abs(c.task_error - r.task_error) <= PARITY
            assert abs(c.predicted_cost - r.predicted_cost) <= PARITY
            assert (c.converged, c.clipped, c.refined) == (r.converged, r.clipped, r.refined)
        if refine:
            assert max(s.task_error for s in got) < 1e-9


def test_seeded_solves_match_numpy(solvers):
    compiled, reference = solvers
    seed = compiled.problem.example_configuration()
    y = compiled.example_task()
    got, want = compiled.solve(y, seed=seed), reference.solve(y, seed=seed)
    np.testing.assert_allclose(got.q, want.q, rtol=0, atol=PARITY)


def test_threads_refining_at_once_give_the_serial_answers(solvers):
    compiled = solvers[0]
    problem = compiled.problem
    tasks = problem.task(np.random.default_rng(SEED + 1).uniform(problem.lower, problem.upper, (24, problem.dim)))
    serial = [compiled.solve(y, refine_answer=True).q for y in tasks]
    with ThreadPoolExecutor(6) as pool:
        parallel = list(pool.map(lambda y: compiled.solve(y, refine_answer=True).q, tasks))
    np.testing.assert_array_equal(np.array(parallel), np.array(serial))
