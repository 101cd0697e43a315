"""The runtime solver and tracker on the tiny model with the true planar3 kinematics."""
import math

import numpy as np
import pytest

from loink_ros.core.runtime.errors import ErrorCode, SolverError
from loink_ros.core.runtime.requests import MAX_LATENT_ABS, MAX_SAMPLES
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.core.runtime.tracking import Tracker

# Latents far from the learned optimum: the inverse lands outside the joint limits. With
# nu = 10, |x - x*| >= |z| / nu >= 5 in normalised units, more than the diagonal of [-1, 1]^3.
FAR_LATENTS = [[50.0, 0.0], [0.0, -50.0], [-40.0, 40.0], [300.0, 300.0]]


def task_grid(solver, count: int = 21, inner: float = 0.0) -> np.ndarray:
    """Tasks spread over the training bounds, shrunk by `inner` of their range at each end."""
    lower, upper = solver.model.task_lower, solver.model.task_upper
    span = upper - lower
    return np.linspace(lower + inner * span, upper - inner * span, count)


def inside_limits(problem, q) -> bool:
    q = np.atleast_2d(q)
    return bool(np.all((q >= problem.lower) & (q <= problem.upper)))


def latents(count: int, scale: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, scale, (count, 2))


# ---- solve -----------------------------------------------------------------------------

def test_solutions_stay_inside_the_limits_and_clipping_is_reported(tiny_solver):
    solver, problem = tiny_solver, tiny_solver.problem
    assert solver.model.meta['network']['nu'] <= 10.0 + 1e-6  # premise of FAR_LATENTS
    tasks = task_grid(solver)
    zs = np.vstack([np.zeros((1, 2)), latents(6, 1.0, 0), FAR_LATENTS])
    clipped = unclipped = 0
    for y in tasks:
        for z in zs:
            s = solver.solve(y, latent=z)
            assert inside_limits(problem, s.q)
            assert s.converged and not s.refined
            assert np.array_equal(s.latent, z)
            assert s.task_error == pytest.approx(abs(problem.task(s.q)[0, 0] - y[0]), abs=1e-15)
            assert s.cost == pytest.approx(problem.cost(s.q)[0], rel=1e-12)
            task, latent, _ = solver.forward(s.q)
            if s.clipped:
                clipped += 1
                assert np.any(np.isclose(s.q, problem.lower) | np.isclose(s.q, problem.upper))
            else:
                # Not clipped: q is the exact inverse, G(q) = [y; z].
                unclipped += 1
                assert np.abs(task[0] - y).max() <= 1e-8 and np.abs(latent[0] - z).max() <= 1e-8
        for z in FAR_LATENTS:
            assert solver.solve(y, latent=z).clipped
    assert clipped and unclipped


def test_clipped_solution_is_the_clipped_exact_inverse(tiny_solver):
    solver = tiny_solver
    y = task_grid(solver, 5)[2]
    z = np.array(FAR_LATENTS[0])
    result = solver.model.inverse(np.hstack([solver.norm.y_to_net(y), z])[None])
    raw = solver.norm.x_from_net(result.x)[0]
    assert not inside_limits(solver.problem, raw)
    s = solver.solve(y, latent=z)
    assert s.clipped and np.array_equal(s.q, np.clip(raw, solver.problem.lower, solver.problem.upper))


def test_refinement_removes_the_task_error_inside_the_limits(tiny_solver):
    solver, problem = tiny_solver, tiny_solver.problem
    tasks = task_grid(solver, 15, inner=0.05)
    # Moderate latents only: from a far-out latent the clipped start can be a corner of the
    # joint box where every useful direction is blocked (a local minimum of the task error
    # for the limit-respecting Gauss-Newton); see the next test.
    zs = np.vstack([np.zeros((1, 2)), latents(3, 0.7, 1)])
    raw_errors = []
    for y in tasks:
        for z in zs:
            raw = solver.solve(y, latent=z)
            s = solver.solve(y, latent=z, refine_answer=True)
            raw_errors.append(raw.task_error)
            assert s.refined and inside_limits(problem, s.q)
            assert s.task_error < 1e-9, (y, z, s.task_error)
            assert abs(problem.task(s.q)[0, 0] - y[0]) < 1e-9
            assert s.clipped == raw.clipped
    # The tiny network alone is far off, so refinement did real work.
    assert max(raw_errors) > 1e-3


def test_refinement_from_far_latents_stays_inside_the_limits(tiny_solver):
    for y in task_grid(tiny_solver, 9):
        for z in FAR_LATENTS:
            s = tiny_solver.solve(y, latent=z, refine_answer=True)
            assert s.refined and s.clipped and inside_limits(tiny_solver.problem, s.q)
            assert np.isfinite(s.task_error) and np.isfinite(s.cost)


def test_batched_solve_equals_per_task_solves(tiny_solver):
    tasks = task_grid(tiny_solver, 17)
    for refine in (False, True):
        batch = tiny_solver.solve_batch(tasks, refine_answer=refine)
        assert len(batch) == len(tasks)
        for y, b in zip(tasks, batch):
            single = tiny_solver.solve(y, refine_answer=refine)
            assert np.abs(b.q - single.q).max() <= 1e-9
            assert b.clipped == single.clipped and b.converged == single.converged
            assert b.cost == pytest.approx(single.cost, abs=1e-9)


def test_seed_warm_start_gives_the_cold_start_answer(tiny_solver):
    solver, problem = tiny_solver, tiny_solver.problem
    rng = np.random.default_rng(3)
    seeds = [rng.uniform(problem.lower, problem.upper) for _ in range(4)]
    seeds.append(problem.upper + 1.0)  # outside the limits: clipped before use
    for y in task_grid(solver, 7):
        for z in ([0.0, 0.0], [0.8, -0.5]):
            cold = solver.solve(y, latent=z)
            for seed in seeds:
                warm = solver.solve(y, latent=z, seed=seed)
                assert warm.converged
                assert np.abs(warm.q - cold.q).max() <= 1e-9
    # An empty seed means no seed.
    y = task_grid(solver, 3)[1]
    assert np.array_equal(solver.solve(y, seed=[]).q, solver.solve(y).q)


def test_bounds_margin_widens_the_accepted_tasks(tiny_solver):
    model = tiny_solver.model
    beyond = model.task_upper + 0.05 * (model.task_upper - model.task_lower)
    with pytest.raises(SolverError) as caught:
        tiny_solver.solve(beyond)
    assert caught.value.code == ErrorCode.TASK_OUT_OF_BOUNDS
    lenient = LOInKSolver(model, tiny_solver.problem, bounds_margin=0.1)
    assert inside_limits(tiny_solver.problem, lenient.solve(beyond).q)


# ---- sample ----------------------------------------------------------------------------

def test_sample_returns_count_solutions_sorted_and_reproducible(tiny_solver):
    y = task_grid(tiny_solver, 5)[2]
    first = tiny_solver.sample(y, 12, 0.8, random_seed=7)
    assert len(first) == 12
    costs = [s.cost for s in first]
    assert costs == sorted(costs)
    assert all(inside_limits(tiny_solver.problem, s.q) for s in first)
    again = tiny_solver.sample(y, 12, 0.8, random_seed=7)
    assert all(np.array_equal(a.q, b.q) and np.array_equal(a.latent, b.latent)
               for a, b in zip(first, again))
    other = tiny_solver.sample(y, 12, 0.8, random_seed=8)
    assert not np.array_equal(np.array([s.latent for s in first]),
                              np.array([s.latent for s in other]))
    assert len(tiny_solver.sample(y, 1, 0.8)) == 1


def test_sample_latents_have_the_requested_spread(tiny_solver):
    y = task_grid(tiny_solver, 5)[2]
    for spread in (0.1, 1.5):
        z = np.array([s.latent for s in tiny_solver.sample(y, 3000, spread, random_seed=1)])
        assert z.shape == (3000, 2)
        assert np.abs(z.mean(0)).max() < 4.0 * math.sqrt(spread / 3000)
        assert np.allclose(z.var(0), spread, rtol=0.1)
    # Spread 0 gives the optimum every time.
    zero = tiny_solver.sample(y, 3, 0.0, random_seed=2)
    assert all(np.abs(s.q - tiny_solver.solve(y).q).max() <= 1e-9 for s in zero)


def test_larger_spread_gives_larger_mean_cost(tiny_solver):
    tasks = task_grid(tiny_solver, 12, inner=0.1)
    means = []
    for spread in (0.05, 0.5, 2.0):
        means.append(np.mean([[s.cost for s in tiny_solver.sample(y, 40, spread, random_seed=i)]
                              for i, y in enumerate(tasks)]))
    assert means[0] < means[1] < means[2], means


def test_the_optimum_has_the_lowest_predicted_cost(tiny_solver):
    for i, y in enumerate(task_grid(tiny_solver, 6)):
        optimum = tiny_solver.solve(y)
        samples = tiny_solver.sample(y, 50, 1.0, random_seed=i)
        predicted = np.array([s.predicted_cost for s in samples])
        assert np.all(optimum.predicted_cost <= predicted)
        # 0.5 ||z||^2 in normalised units on top of phi(y), scaled by the cost std.
        std = tiny_solver.norm.cost_std
        extra = np.array([0.5 * s.latent @ s.latent * std for s in samples])
        assert np.allclose(predicted - optimum.predicted_cost, extra, rtol=1e-9, atol=1e-12)


# ---- refused requests ------------------------------------------------------------------

def _task(solver, where: float = 0.5) -> list[float]:
    lower, upper = solver.model.task_lower, solver.model.task_upper
    return list(lower + where * (upper - lower))


def _beyond(solver, side: int) -> list[float]:
    lower, upper = solver.model.task_lower, solver.model.task_upper
    return list((upper if side > 0 else lower) + side * 0.02 * (upper - lower))


BAD_REQUESTS = {
    'empty task': (lambda s: s.solve([]), ErrorCode.EMPTY_REQUEST),
    'no task': (lambda s: s.solve(None), ErrorCode.EMPTY_REQUEST),
    'empty batch': (lambda s: s.solve_batch(np.zeros((0, 1))), ErrorCode.EMPTY_REQUEST),
    'task too long': (lambda s: s.solve([0.1, 0.2]), ErrorCode.INVALID_TASK_DIMENSION),
    'task not numbers': (lambda s: s.solve(['left']), ErrorCode.INVALID_TASK_DIMENSION),
    'NaN task': (lambda s: s.solve([math.nan]), ErrorCode.NON_FINITE_INPUT),
    'inf task': (lambda s: s.solve([math.inf]), ErrorCode.NON_FINITE_INPUT),
    'task above bounds': (lambda s: s.solve(_beyond(s, 1)), ErrorCode.TASK_OUT_OF_BOUNDS),
    'task below bounds': (lambda s: s.solve(_beyond(s, -1)), ErrorCode.TASK_OUT_OF_BOUNDS),
    'bad row in batch': (lambda s: s.solve_batch([_task(s), [math.nan]]), ErrorCode.NON_FINITE_INPUT),
    'latent too short': (lambda s: s.solve(_task(s), latent=[1.0]), ErrorCode.INVALID_LATENT),
    'latent too long': (lambda s: s.solve(_task(s), latent=[1.0, 2.0, 3.0]), ErrorCode.INVALID_LATENT),
    'NaN latent': (lambda s: s.solve(_task(s), latent=[math.nan, 0.0]), ErrorCode.NON_FINITE_INPUT),
    'latent 1e300': (lambda s: s.solve(_task(s), latent=[1e300, 0.0]), ErrorCode.INVALID_LATENT),
    'latent past the bound': (lambda s: s.solve(_task(s), latent=[0.0, -1.5 * MAX_LATENT_ABS]),
                              ErrorCode.INVALID_LATENT),
    'seed too short': (lambda s: s.solve(_task(s), seed=[0.1, 0.2]), ErrorCode.INVALID_SEED_STATE),
    'NaN seed': (lambda s: s.solve(_task(s), seed=[0.0, math.nan, 0.0]), ErrorCode.NON_FINITE_INPUT),
    'count 0': (lambda s: s.sample(_task(s), 0, 0.5), ErrorCode.INVALID_COUNT),
    'count negative': (lambda s: s.sample(_task(s), -3, 0.5), ErrorCode.INVALID_COUNT),
    'count huge': (lambda s: s.sample(_task(s), MAX_SAMPLES + 1, 0.5), ErrorCode.INVALID_COUNT),
    'count 10**12': (lambda s: s.sample(_task(s), 10 ** 12, 0.5), ErrorCode.INVALID_COUNT),
    'count float': (lambda s: s.sample(_task(s), 2.5, 0.5), ErrorCode.INVALID_COUNT),
    'count text': (lambda s: s.sample(_task(s), '4', 0.5), ErrorCode.INVALID_COUNT),
    'count bool': (lambda s: s.sample(_task(s), True, 0.5), ErrorCode.INVALID_COUNT),
    'spread negative': (lambda s: s.sample(_task(s), 4, -0.1), ErrorCode.INVALID_SPREAD),
    'spread huge': (lambda s: s.sample(_task(s), 4, 1e6), ErrorCode.INVALID_SPREAD),
    'spread NaN': (lambda s: s.sample(_task(s), 4, math.nan), ErrorCode.NON_FINITE_INPUT),
    'spread inf': (lambda s: s.sample(_task(s), 4, math.inf), ErrorCode.NON_FINITE_INPUT),
    'spread text': (lambda s: s.sample(_task(s), 4, 'wide'), ErrorCode.INVALID_SPREAD),
    'spread None': (lambda s: s.sample(_task(s), 4, None), ErrorCode.INVALID_SPREAD),
    'sample bad task': (lambda s: s.sample([math.nan], 4, 0.5), ErrorCode.NON_FINITE_INPUT),
}


@pytest.mark.parametrize('case', BAD_REQUESTS)
def test_bad_requests_raise_solver_error_and_the_solver_keeps_working(tiny_solver, case):
    request, code = BAD_REQUESTS[case]
    y = _task(tiny_solver, 0.4)
    before = tiny_solver.solve(y, refine_answer=True)
    with pytest.raises(SolverError) as caught:
        request(tiny_solver)
    err = caught.value
    assert err.code == code, (case, err.code, err.message)
    assert err.message and '\n' not in err.message
    assert str(err).startswith(code.name)
    after = tiny_solver.solve(y, refine_answer=True)
    assert np.array_equal(after.q, before.q) and after.task_error < 1e-9
    assert len(tiny_solver.sample(y, 3, 0.5, random_seed=0)) == 3


# ---- tracking --------------------------------------------------------------------------

def stream(solver, count: int = 20) -> np.ndarray:
    tasks = task_grid(solver, 9, inner=0.1)
    return np.linspace(tasks[2], tasks[6], count)


def start_configuration(solver) -> np.ndarray:
    """Reaches the stream's first target, but far from the optimum (z != 0), not clipped."""
    y = stream(solver)[0]
    for z in ([1.2, -0.8], [-1.0, 1.0], [0.8, 0.8], [-0.6, -0.9], [0.5, 0.0]):
        s = solver.solve(y, latent=z)
        if not s.clipped:
            return s.q
    return solver.solve(y, latent=[0.5, -0.5]).q


def tracked_steps(solver, smoothing: float) -> np.ndarray:
    q0 = start_configuration(solver)
    tracker = Tracker(solver, smoothing)
    tracker.reset(q0)
    path = [q0] + [tracker.step(y).q for y in stream(solver)]
    assert inside_limits(solver.problem, np.array(path))
    return np.linalg.norm(np.diff(path, axis=0), axis=1)


def test_without_smoothing_the_tracker_jumps_to_the_optimum(tiny_solver):
    q0 = start_configuration(tiny_solver)
    tracker = Tracker(tiny_solver, 0.0)
    tracker.reset(q0)
    for y in stream(tiny_solver, 6):
        assert np.abs(tracker.step(y).q - tiny_solver.solve(y).q).max() <= 1e-9
    # A tracker that was never given the robot's configuration starts at the optimum too.
    y = stream(tiny_solver)[3]
    assert np.abs(Tracker(tiny_solver, 5.0).step(y).q - tiny_solver.solve(y).q).max() <= 1e-9


def test_smoothing_gives_smaller_joint_steps(tiny_solver):
    steps = {mu: tracked_steps(tiny_solver, mu) for mu in (0.0, 3.0, 20.0)}
    # The jump away from the start is real, so smoothing has something to smooth.
    assert steps[0.0][0] > 5 * np.median(steps[0.0][1:])
    assert steps[0.0].mean() > steps[3.0].mean() > steps[20.0].mean()
    assert steps[0.0].max() > steps[3.0].max() > steps[20.0].max()


def test_smoothing_keeps_the_latent_decaying(tiny_solver):
    # Constant target: z_k = (mu_s / (1 + mu_s)) z_(k-1) while nothing is clipped.
    y = stream(tiny_solver)[0]
    q0 = start_configuration(tiny_solver)
    tracker = Tracker(tiny_solver, 1.0)
    tracker.reset(q0)
    z_prev = tiny_solver.forward(q0)[1][0]
    for _ in range(4):
        s = tracker.step(y)
        if s.clipped:
            break
        assert np.allclose(s.latent, 0.5 * z_prev, atol=1e-9)
        z_prev = tiny_solver.forward(s.q)[1][0]


@pytest.mark.parametrize('value', [-0.1, -1e-12, math.nan, math.inf, -math.inf])
def test_bad_smoothing_is_refused(tiny_solver, value):
    with pytest.raises(ValueError):
        Tracker(tiny_solver, value)
    tracker = Tracker(tiny_solver, 2.0)
    with pytest.raises(ValueError):
        tracker.smoothing = value
    assert tracker.smoothing == 2.0


def test_tracker_survives_a_bad_target(tiny_solver):
    tracker = Tracker(tiny_solver, 0.0)
    y = stream(tiny_solver)[1]
    first = tracker.step(y)
    with pytest.raises(SolverError) as caught:
        tracker.step([math.nan])
    assert caught.value.code == ErrorCode.NON_FINITE_INPUT
    with pytest.raises(SolverError):
        tracker.reset([0.0, 0.0])
    assert np.abs(tracker.step(y).q - first.q).max() <= 1e-9
