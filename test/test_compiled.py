"""The compiled runtime against the numpy reference: every shipped model, single rows and
batches, optimal and sampled latents, raw and refined answers, warm starts; the cache, the
fallback to numpy and concurrent calls."""

import logging
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from loink_ros.core.compiled import build
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.core.runtime.tracking import Tracker
from loink_ros.tools.bench.targets import reachable_targets

MODELS = ('planar3', 'panda', 'magneto', 'hsa')
PARITY = 1e-10   # joint units (and cost, task error)
SEED = 11


@pytest.fixture(scope='module', params=MODELS)
def solvers(request):
    """(compiled, numpy) solvers of one shipped model."""
    model, problem = load_model(request.param), make_problem(request.param)
    compiled = LOInKSolver(model, problem)
    assert compiled.runtime == 'compiled', compiled.runtime_note
    return compiled, LOInKSolver(model, problem, runtime='numpy')


def reachable_tasks(solver, count: int) -> np.ndarray:
    return reachable_targets(solver.problem, solver.model, count, np.random.default_rng(SEED))


def assert_same(compiled: list, reference: list) -> None:
    for c, r in zip(compiled, reference, strict=True):
        np.testing.assert_allclose(c.q, r.q, rtol=0, atol=PARITY)
        for field in ('cost', 'task_error', 'predicted_cost'):
            got, want = getattr(c, field), getattr(r, field)
            assert got == want or abs(got - want) <= PARITY, field   # +inf: infeasible
        assert (c.converged, c.clipped, c.refined, c.violations) == (
            r.converged, r.clipped, r.refined, r.violations)


@pytest.mark.parametrize('refine', [False, True])
def test_batches_of_optimal_and_sampled_latents_match_numpy(solvers, refine):
    compiled, reference = solvers
    y = reachable_tasks(compiled, 40)
    rng = np.random.default_rng(SEED)
    for z in (np.zeros((len(y), compiled.model.latent_dim)),
              rng.normal(0.0, 0.5, (len(y), compiled.model.latent_dim))):
        got, state = compiled.solve_rows(y, z, refine)
        want, want_state = reference.solve_rows_numpy(y, z, refine)
        if refine:   # damped least squares from a poor network answer can wander between
            # limits, where rounding picks the path: compare the answers that start close
            close = [s.task_error < 0.05 for s in reference.solve_rows_numpy(y, z, False)[0]]
            assert sum(close) >= len(y) // 2
            got = [s for s, ok in zip(got, close) if ok]
            want = [s for s, ok in zip(want, close) if ok]
        assert_same(got, want)
        for layer, want_layer in zip(state.x, want_state.x):
            np.testing.assert_allclose(layer, want_layer, rtol=0, atol=PARITY)


def test_single_solves_samples_and_seeds_match_numpy(solvers):
    compiled, reference = solvers
    for y in reachable_tasks(compiled, 5):
        assert_same([compiled.solve(y)], [reference.solve(y)])
        assert_same(compiled.sample(y, 8, 0.5, random_seed=SEED),
                    reference.sample(y, 8, 0.5, random_seed=SEED))
        seed = compiled.problem.example_configuration()
        assert_same([compiled.solve(y, seed=seed)], [reference.solve(y, seed=seed)])


def test_tracking_with_warm_starts_matches_numpy(solvers):
    compiled, reference = solvers
    start = compiled.problem.example_configuration()
    trackers = [Tracker(solver, smoothing=2.0) for solver in solvers]
    for tracker in trackers:
        tracker.reset(start)
    for y in reachable_tasks(compiled, 10):
        assert_same([trackers[0].step(y)], [trackers[1].step(y)])
    np.testing.assert_allclose(compiled.latent(start), reference.latent(start), atol=PARITY)


def test_an_iteration_cap_gives_the_same_unconverged_answers(solvers):
    model, problem = solvers[0].model, solvers[0].problem
    capped = [LOInKSolver(model, problem, max_iter=1, runtime=r) for r in ('compiled', 'numpy')]
    y = reachable_tasks(capped[0], 10)
    z = np.zeros((len(y), model.latent_dim))
    got, want = (s.solve_rows(y, z, False)[0] for s in capped)
    assert not all(s.converged for s in want)
    assert_same(got, want)


def test_concurrent_calls_give_the_serial_answers(solvers):
    compiled = solvers[0]
    tasks = reachable_tasks(compiled, 16)
    serial = [compiled.solve(y, refine_answer=True).q for y in tasks]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda y: compiled.solve(y, refine_answer=True).q, tasks))
    np.testing.assert_array_equal(np.array(parallel), np.array(serial))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))
    return tmp_path


def test_the_library_is_built_once_then_taken_from_the_cache(fresh_cache):
    model, problem = load_model('planar3'), make_problem('planar3')
    first = LOInKSolver(model, problem)
    assert first.runtime == 'compiled' and 'built in' in first.runtime_note
    assert [p.name for p in fresh_cache.glob('*.so')] == [build.library_path(problem).name]
    second = LOInKSolver(model, problem)
    assert second.runtime == 'compiled' and second.runtime_note.endswith('(cached)')


def test_a_broken_cached_library_is_rebuilt(fresh_cache):
    model, problem = load_model('planar3'), make_problem('planar3')
    path = build.library_path(problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'not a shared library')
    solver = LOInKSolver(model, problem)
    assert solver.runtime == 'compiled' and 'built in' in solver.runtime_note


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


# The refined task error each model's numpy path reaches on its example target.
@pytest.mark.parametrize('name, exact', [('planar3', 1e-6), ('hsa', 1e-9)])
def test_without_a_compiler_numpy_serves_with_a_warning(fresh_cache, monkeypatch, name, exact):
    monkeypatch.setenv('CC', 'no-such-compiler')
    model, problem = load_model(name), make_problem(name)
    records, log = Records(), logging.getLogger('loink_ros.runtime')
    log.addHandler(records)
    try:
        solver = LOInKSolver(model, problem)
    finally:
        log.removeHandler(records)
    assert solver.runtime == 'numpy'
    assert "no C compiler: 'no-such-compiler'" in solver.runtime_note
    assert records.messages == [solver.runtime_note]
    y = solver.example_task()
    assert solver.solve(y, refine_answer=True).task_error < exact


def test_a_problem_without_a_symbolic_form_is_served_by_numpy(tiny, fresh_cache):
    problem = make_problem('planar3')
    problem.symbolic = lambda: None
    solver = LOInKSolver(load_model(str(tiny.json_path)), problem)
    assert solver.runtime == 'numpy' and 'no symbolic form' in solver.runtime_note


def vex_arithmetic(library: Path) -> bool:
    """Whether the library's code has VEX-encoded double arithmetic (vaddsd, vmulpd, ...),
    which only AVX and later make a compiler emit."""
    code = subprocess.run(['objdump', '-d', str(library)], capture_output=True, text=True,
                          check=True, timeout=120).stdout
    return re.search(r'\tv(add|sub|mul|div|fmadd\w*)[sp]d ', code) is not None


def test_a_library_has_exactly_the_instructions_it_records(tmp_path, monkeypatch):
    """A feature the load check does not list is not compiled in: built for SSE3 alone on
    a CPU with AVX, the library holds no AVX instruction (-march=native would add them)."""
    from loink_ros.core.compiled import cpu_features
    problem = make_problem('planar3')
    if 'avx' in cpu_features.native_features(build.compiler()):   # the check can fail here
        assert vex_arithmetic(build.compiled_library(problem).path)   # the cache's own
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))
    monkeypatch.setattr(cpu_features, 'native_features', lambda compiler: ('sse3',))
    assert not vex_arithmetic(build.compiled_library(problem).path)


def test_a_cached_library_this_cpu_cannot_run_is_rebuilt_not_run(fresh_cache, monkeypatch):
    """A cache copied from a machine with other vector units (a shared home, an image): its
    library's check refuses it before any call, and the solver builds its own."""
    from conftest import foreign_feature

    from loink_ros.core.compiled import cpu_features
    from loink_ros.core.compiled.compiled_kernel import CompiledKernel
    model, problem = load_model('planar3'), make_problem('planar3')
    feature = foreign_feature()
    with monkeypatch.context() as patch:
        patch.setattr(cpu_features, 'native_features', lambda compiler: (feature,))
        path = build.compiled_library(problem).path
    with pytest.raises(cpu_features.CpuMismatch, match=rf'lacks \({feature}\)'):
        CompiledKernel(path, model, problem)
    solver = LOInKSolver(model, problem)
    assert solver.runtime == 'compiled' and 'built in' in solver.runtime_note
    np.testing.assert_allclose(solver.solve(solver.example_task()).q,
                               LOInKSolver(model, problem, runtime='numpy').solve(
                                   solver.example_task()).q, atol=PARITY)
