"""The core pose stream (PoseTracker): every step inside the joint limits and the velocity
box around the previous answer, on the previous branch, free of self-collision; lagging
targets are caught up; the smoothing mu_s sets how fast the posture drifts to the optimum."""
import numpy as np
import pytest
from scipy.interpolate import PchipInterpolator

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import PoseSolver
from loink_ros.core.runtime.pose_tracker import PoseTracker
from loink_ros.core.runtime.solver import LOInKSolver

DT = 1e-3
SPEED = 2.0   # rad/s, every joint


@pytest.fixture(scope='module')
def panda():
    model = load_model('panda_full')
    problem = problem_for_model(model)
    return problem, PoseSolver(LOInKSolver(model, problem))


def tracker(panda, **options) -> PoseTracker:
    problem, pose_solver = panda
    return PoseTracker(pose_solver, np.full(problem.dim, SPEED), **options)


def target(problem, q) -> PoseTarget:
    return PoseTarget(*problem.tip_pose(q))


def slow_path(problem, seed: int, seconds: float) -> np.ndarray:
    """A joint path between two nearby collision-free configurations at a third of SPEED."""
    rng = np.random.default_rng(seed)
    start = problem.sample_collision_free(1, rng)[0]
    end = np.clip(start + rng.uniform(-0.3, 0.3, problem.dim), problem.lower, problem.upper)
    path = PchipInterpolator([0.0, seconds], np.stack([start, end]))(np.arange(0.0, seconds, DT))
    assert np.abs(np.diff(path, axis=0)).max() <= SPEED * DT / 3
    return path


def run(stream: PoseTracker, problem, targets) -> list:
    steps = []
    for t in targets:
        steps.append(stream.step(t if isinstance(t, PoseTarget) else target(problem, t), DT))
    return steps


def assert_bounded_steps(problem, start, steps, speed=SPEED):
    q = np.array([start, *[s.q for s in steps]])
    assert np.all(q >= problem.lower) and np.all(q <= problem.upper)
    assert np.abs(np.diff(q, axis=0)).max() <= speed * DT + 1e-12


def test_a_slow_path_is_tracked_exactly_within_the_velocity_limits(panda):
    problem, _ = panda
    path = slow_path(problem, 1, 1.0)
    stream = tracker(panda, smoothing=0.0)
    stream.reset(path[0])
    steps = run(stream, problem, path)
    assert_bounded_steps(problem, path[0], steps)
    assert all(s.on_target for s in steps)
    assert max(s.position_error for s in steps) <= 1e-9
    assert all(not problem.self_collisions(s.q) for s in steps[::10])


def test_a_jump_across_the_workspace_is_followed_at_the_velocity_limit_then_reached(panda):
    problem, _ = panda
    rng = np.random.default_rng(5)
    start, far = problem.sample_collision_free(2, rng)
    stream = tracker(panda, avoid_collisions=False)
    stream.reset(start)
    goal = target(problem, far)
    steps = run(stream, problem, [goal] * 4000)
    assert_bounded_steps(problem, start, steps)
    lagging = [s for s in steps if not s.on_target]
    assert lagging and all(s.lag for s in lagging)
    # While it lags, some joint moves at the limit: the answer catches up as fast as allowed.
    q = np.array([start, *[s.q for s in steps]])
    moving = np.abs(np.diff(q, axis=0)).max(1)
    first_on = next(i for i, s in enumerate(steps) if s.on_target)
    assert np.all(moving[:first_on] >= SPEED * DT * (1 - 1e-9))
    assert all(s.on_target for s in steps[first_on:])


def test_a_target_out_of_reach_lags_and_is_caught_again_when_it_returns(panda):
    problem, _ = panda
    path = slow_path(problem, 2, 0.6)
    stream = tracker(panda, avoid_collisions=False)
    stream.reset(path[0])
    targets = [target(problem, q) for q in path]
    for k in range(200, 300):   # pushed 2 m outward from the base for 0.1 s
        position = targets[k].position
        targets[k] = PoseTarget(position * (1 + 2.0 / np.linalg.norm(position)), targets[k].rotation)
    steps = run(stream, problem, targets)
    assert_bounded_steps(problem, path[0], steps)
    assert all(s.on_target for s in steps[:200])
    assert not any(s.on_target for s in steps[200:300])
    assert all(s.on_target for s in steps[-100:])


def test_the_stream_stops_short_of_a_self_collision(panda):
    problem, _ = panda
    rng = np.random.default_rng(11)
    q = problem.sample_collision_free(400, rng)
    colliding = next(x for x in rng.uniform(problem.lower, problem.upper, (5000, problem.dim))
                     if problem.self_collisions(x))
    start = q[np.argmin(np.abs(q - colliding).max(1))]
    path = start + np.linspace(0.0, 1.0, 1500)[:, None] * (colliding - start)
    stream = tracker(panda)
    stream.reset(start)
    steps = run(stream, problem, path)
    assert_bounded_steps(problem, start, steps)
    assert not any(problem.self_collisions(s.q) for s in steps)
    assert any(s.lag == 'self-collision ahead' for s in steps)


def test_smoothing_sets_how_fast_the_posture_drifts_to_the_optimum(panda):
    problem, _ = panda
    rng = np.random.default_rng(3)
    start = problem.sample_collision_free(1, rng)[0]
    goal = target(problem, start)
    costs = {}
    for mu in (0.0, 1e3, 1e5):
        stream = tracker(panda, smoothing=mu, avoid_collisions=False)
        stream.reset(start)
        steps = run(stream, problem, [goal] * 300)
        assert all(s.on_target for s in steps)
        assert_bounded_steps(problem, start, steps)
        costs[mu] = [problem.cost(s.q)[0] for s in steps]
    start_cost = problem.cost(start)[0]
    # A heavy mu still drifts, slower (the descent's first step allows for its curvature).
    assert costs[0.0][-1] < costs[1e3][-1] < costs[1e5][-1] <= start_cost + 1e-12
    assert start_cost - costs[1e3][-1] > 0.1 * (start_cost - costs[0.0][-1])
    assert np.all(np.diff(costs[0.0]) <= 1e-12)   # the drift only ever lowers the cost


def test_a_new_stream_without_a_state_starts_from_the_full_solve(panda):
    problem, pose_solver = panda
    q = problem.sample_collision_free(1, np.random.default_rng(4))[0]
    stream = tracker(panda)
    stream.reset(None)
    first = stream.step(target(problem, q), DT)
    assert first.on_target and first.position_error <= 1e-9


def test_bad_settings_are_refused(panda):
    problem, pose_solver = panda
    with pytest.raises(ValueError, match='velocity limits'):
        PoseTracker(pose_solver, np.ones(problem.dim - 1))
    with pytest.raises(ValueError, match='velocity limits'):
        PoseTracker(pose_solver, np.zeros(problem.dim))
    stream = tracker(panda)
    stream.reset(problem.example_configuration())
    with pytest.raises(ValueError, match='dt'):
        stream.step(target(problem, problem.example_configuration()), 0.0)


def test_a_path_through_a_wrist_singularity_stays_continuous(panda):
    """The bench's singular path (the wrist's middle joint at 0 at its knots, the pose
    Jacobian's smallest singular value <= 1e-4): every step within the URDF's velocity
    limits, no branch flip, inside the limits; on target away from the singularity."""
    from loink_ros.core.problems.arms.velocity_limits import velocity_limits
    from loink_ros.tools.bench.stream_paths import paths
    problem, pose_solver = panda
    path = paths(problem, 'singular', 1, duration_s=2.0)[0]
    assert path.min_singular_value <= 1e-4
    limits = velocity_limits(problem)
    stream = PoseTracker(pose_solver, limits)
    stream.reset(path.q[0])
    steps = [stream.step(PoseTarget(p, r), DT) for p, r in zip(path.positions, path.rotations)]
    q = np.array([path.q[0], *[s.q for s in steps]])
    assert np.all(q >= problem.lower) and np.all(q <= problem.upper)
    assert np.all(np.abs(np.diff(q, axis=0)) <= limits * DT + 1e-12)
    assert np.mean([s.on_target for s in steps]) >= 0.9
