"""Full-pose IK on the shipped arm models: exact, in limits, collision-free, on time."""

import time

import numpy as np
import pytest

from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseRequest, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver

# Held-out poses: a seed no training run (seed 0) uses.
HELD_OUT = 4242


def pose_solver(name: str, runtime: str = 'compiled') -> PoseSolver:
    model = load_model(name)
    return PoseSolver(LOInKSolver(model, make_problem(model.problem['name']), runtime=runtime))


@pytest.fixture(scope='module')
def panda():
    return pose_solver('panda_full')


def poses(problem, count, seed=HELD_OUT):
    configurations = problem.sample_collision_free(count, np.random.default_rng(seed))
    return [PoseTarget(*problem.tip_pose(q)) for q in configurations]


def assert_valid(problem, answer, target, lower=None, upper=None):
    assert answer.success, answer.reason
    error = pose_error(problem, answer.q, target)
    assert np.linalg.norm(error[:3]) <= TOLERANCE[0] and np.linalg.norm(error[3:]) <= TOLERANCE[1]
    assert np.all(answer.q >= (problem.lower if lower is None else lower))
    assert np.all(answer.q <= (problem.upper if upper is None else upper))
    assert np.isclose(answer.cost, problem.cost(answer.q)[0])


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_held_out_poses_are_solved_exactly(name):
    solver = pose_solver(name)
    problem = solver.problem
    solved = 0
    for target in poses(problem, 40):
        answer = solver.solve(PoseRequest(target, deadline=time.monotonic() + 0.05,
                                          avoid_collisions=True))
        if answer.success:
            assert_valid(problem, answer, target)
            assert not problem.self_collisions(answer.q)
            solved += 1
    assert solved >= 39


def test_second_arm_answers_are_near_cost_optimal_on_held_out_poses():
    """The xArm7 model's answers against a 64-start reference on held-out poses."""
    from loink_ros.tools.bench.pose import reference
    solver = pose_solver('xarm7_full')
    problem = solver.problem
    rng = np.random.default_rng(1)
    regrets = []
    for target in poses(problem, 20):
        answer = solver.solve(PoseRequest(target, deadline=time.monotonic() + 0.05,
                                          avoid_collisions=True))
        assert_valid(problem, answer, target)
        best = reference(solver, target, rng, [answer.q])
        regrets.append((answer.cost - best) / best)
    # The reference descends the answer too: it may end a rounding below it.
    assert min(regrets) >= -1e-12 and np.median(regrets) <= 0.02


def test_answers_are_deterministic_and_the_numpy_path_agrees(panda):
    reference = pose_solver('panda_full', runtime='numpy')
    assert reference.kernel is None
    for target in poses(panda.problem, 3, 7):
        first, second = (panda.solve(PoseRequest(target)) for _ in range(2))
        assert np.array_equal(first.q, second.q)
        slow = reference.solve(PoseRequest(target))
        assert_valid(panda.problem, slow, target)
        assert abs(slow.cost - first.cost) <= 1e-4 * first.cost


def test_unreachable_pose_fails_by_its_deadline(panda):
    target = PoseTarget(np.array([1.5, 0.0, 0.5]), np.eye(3))
    began = time.monotonic()
    answer = panda.solve(PoseRequest(target, deadline=began + 0.02))
    assert not answer.success and 'pose error' in answer.reason
    assert time.monotonic() - began < 0.02 + 0.01
    assert answer.starts > 24          # the fallback ran


def test_avoid_collisions_never_returns_a_touching_answer(panda):
    """Poses reached by self-colliding configurations: their cheapest answers often touch."""
    problem = panda.problem
    rng = np.random.default_rng(5)
    colliding = [q for q in rng.uniform(problem.lower, problem.upper, (400, 7))
                 if problem.self_collisions(q)][:12]
    free = touching = 0
    for q in colliding:
        target = PoseTarget(*problem.tip_pose(q))
        answer = panda.solve(PoseRequest(target, deadline=time.monotonic() + 0.05,
                                         avoid_collisions=True))
        if answer.success:
            assert not problem.self_collisions(answer.q)
            free += 1
        else:
            assert 'self-collision' in answer.reason or 'pose error' in answer.reason
        unchecked = panda.solve(PoseRequest(target))
        touching += unchecked.success and bool(problem.self_collisions(unchecked.q))
    assert free >= 2 and touching >= 2


def test_narrowed_bounds_are_kept(panda):
    problem = panda.problem
    q = problem.sample_collision_free(1, np.random.default_rng(9))[0]
    target = PoseTarget(*problem.tip_pose(q))
    lower, upper = problem.lower.copy(), problem.upper.copy()
    lower[0], upper[0] = q[0] - 0.02, q[0] + 0.02
    answer = panda.solve(PoseRequest(target, lower=lower, upper=upper,
                                     deadline=time.monotonic() + 0.05))
    assert_valid(problem, answer, target, lower, upper)


def test_seed_consistent_answers_stay_near_the_seed(panda):
    problem = panda.problem
    closer = 0
    configurations = problem.sample_collision_free(10, np.random.default_rng(10))
    for q in configurations:
        target = PoseTarget(*problem.tip_pose(q))
        seed = np.clip(q + 0.1, problem.lower, problem.upper)
        optimal = panda.solve(PoseRequest(target))
        near = panda.solve(PoseRequest(target, seed=seed, seed_weight=100.0))
        assert_valid(problem, near, target)
        assert np.linalg.norm(near.q - seed) <= np.linalg.norm(optimal.q - seed) + 1e-9
        closer += np.linalg.norm(near.q - seed) < 0.3
    assert closer >= 9


def test_ranked_answers_are_valid_distinct_and_cheapest_first(panda):
    from loink_ros.core.runtime.pose_solver import DISTINCT
    problem = panda.problem
    counts = []
    for target in poses(problem, 6, 11):
        ranked = panda.solve_ranked(PoseRequest(target, avoid_collisions=True), 5)
        counts.append(len(ranked))
        assert 1 <= len(ranked) <= 5
        assert np.array_equal(ranked[0].q, panda.solve(PoseRequest(target, avoid_collisions=True)).q)
        for answer in ranked:
            assert_valid(problem, answer, target)
            assert not problem.self_collisions(answer.q)
        costs = [a.objective for a in ranked]
        assert costs == sorted(costs)
        for i, a in enumerate(ranked):
            assert all(np.abs(a.q - b.q).max() > DISTINCT for b in ranked[i + 1:])
        for answer in panda.solve_ranked(PoseRequest(target), 3, attempt=2):
            assert_valid(problem, answer, target)
    # Some poses have a single collision-free answer region in the first batch.
    assert sum(count >= 2 for count in counts) >= 4 and 5 in counts


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_the_compiled_ranked_solve_is_its_reference_step_for_step(name):
    """kernel.c's loink_pose_ranked (starts, draws, ranking, fallback rounds) against the
    numpy orchestration on the same compiled refinement: the same answers, bit for bit, in
    every mode (full pose and position only, seed-consistent, narrowed bounds, collision
    checks, continuations, approximate requests, fresh attempts, several answers), with latent
    starts too."""
    solver = pose_solver(name)
    assert solver.kernel is not None, solver.solver.runtime_note
    with_latents = PoseSolver(solver.solver, latent_starts=4)
    problem = solver.problem
    configurations = problem.sample_collision_free(6, np.random.default_rng(12))
    checked = 0
    for q in configurations:
        target = PoseTarget(*problem.tip_pose(q))
        seed = np.clip(q + 0.2, problem.lower, problem.upper)
        beside = np.clip(q + 0.02, problem.lower, problem.upper)   # a continuation
        outside = beside.copy()
        outside[0] = problem.upper[0] + 0.5                          # no state of the arm
        for options in ({}, {'avoid_collisions': True}, {'seed': seed, 'seed_weight': 10.0},
                        {'lower': q - 0.3, 'upper': q + 0.3}, {'seed': beside},
                        {'seed': beside, 'avoid_collisions': True}, {'seed': outside},
                        {'seed': beside, **pinned(q, problem)}, {'seed': seed, 'approximate': True},
                        {'seed': beside, 'approximate': True, **pinned(q, problem)}):
            for goal in (target, PoseTarget(target.position, target.rotation, True)):
                request = PoseRequest(goal, **options)
                for pose_solver_, count, attempt in ((solver, 1, 0), (solver, 4, 2),
                                                     (with_latents, 3, 0)):
                    compiled = pose_solver_.solve_ranked(request, count, attempt)
                    lower, upper = pose_solver_._bounds(request)
                    found, best, tried = pose_solver_._ranked_numpy(request, lower, upper,
                                                                    count, attempt)
                    reference = found or [best]
                    assert len(compiled) == len(reference)
                    for c, r in zip(compiled, reference):
                        assert np.array_equal(c.q, r.q) and c.source == r.source
                        assert (c.reason, c.starts) == (r.reason, tried)
                        assert c.cost == pytest.approx(r.cost, rel=1e-12)
                    checked += 1
    assert checked == 6 * 10 * 2 * 3


def pinned(q: np.ndarray, problem) -> dict:
    """Bounds that hold joints 1 and 3 where they are in q (the rest within 0.3 rad): a pose
    moved away from q's has no answer in them."""
    lower, upper = np.maximum(q - 0.3, problem.lower), np.minimum(q + 0.3, problem.upper)
    lower[[1, 3]] = upper[[1, 3]] = q[[1, 3]]
    return {'lower': lower, 'upper': upper}


@pytest.mark.parametrize('runtime', ['compiled', 'numpy'])
def test_a_continuation_that_fails_says_so_at_once(runtime):
    """MoveIt's interpolator bisects a step whose answer fails and calls again: a failed
    continuation is certain after the seed's reach is searched (CONTINUATION_ROUNDS), long
    before the deadline, and its answer is the continuation's own attempt."""
    from loink_ros.core.runtime.pose_solver import CONTINUATION_ROUNDS
    solver = pose_solver('panda_full', runtime)
    problem, rng = solver.problem, np.random.default_rng(36)
    timeout = 5.0
    for q in problem.sample_collision_free(4, rng):
        target = moved(problem, q, rng, 0.01, 0.02)
        began = time.monotonic()
        answer = solver.solve(PoseRequest(target, seed=q, deadline=began + timeout, **pinned(q, problem)))
        elapsed = time.monotonic() - began
        assert not answer.success and 'would be a jump' in answer.reason
        assert answer.source == 'continuation'
        assert answer.starts == 1 + solver.prior_starts + CONTINUATION_ROUNDS * solver.restarts
        assert elapsed < 0.2 * timeout, elapsed


@pytest.mark.parametrize('runtime', ['compiled', 'numpy'])
def test_an_approximate_request_moves_from_its_seed_whatever_the_distance(runtime, panda):
    """MoveIt's return_approximate_solution (Servo, RViz's approximate marker): a seed far
    from the pose (past the gate, where a plain request gets the cost-optimal answer) is
    continued, no joint moving more than APPROXIMATE_CAP, no farther from the pose than the
    seed, at once (one start: no search); a seed beside the pose reaches it exactly."""
    from loink_ros.core.runtime.continuation import APPROXIMATE_CAP, GATE
    solver = pose_solver('panda_full', runtime)
    problem, rng = solver.problem, np.random.default_rng(38)
    optimal_elsewhere = exact = 0
    for q in problem.sample_collision_free(6, rng):
        far = moved(problem, q, rng, 0.3, 0.2)
        assert np.linalg.norm(pose_error(problem, q, far)[:3]) > GATE[0]
        answer = solver.solve(PoseRequest(far, seed=q, approximate=True, deadline=time.monotonic() + 5.0))
        assert answer.source == 'continuation' and answer.starts == 1
        assert np.abs(answer.q - q).max() <= APPROXIMATE_CAP + 1e-12
        assert np.all(answer.q >= problem.lower) and np.all(answer.q <= problem.upper)
        before, after = pose_error(problem, q, far), pose_error(problem, answer.q, far)
        assert after @ after <= before @ before
        plain = panda.solve(PoseRequest(far, seed=q))   # compiled: numpy's full search is slow
        optimal_elsewhere += plain.success and np.abs(plain.q - q).max() > APPROXIMATE_CAP
        near = moved(problem, q, rng, 0.005, 0.01)
        step = solver.solve(PoseRequest(near, seed=q, approximate=True))
        exact += step.success and step.source == 'continuation'
        if step.success:
            assert_valid(problem, step, near)
    assert optimal_elsewhere >= 4 and exact >= 5


def test_a_seed_outside_the_limits_is_no_continuation(panda):
    """A seed beyond SEED_MARGIN outside a joint's limits is no state of the arm: the answer
    is the one without a seed; a hair outside (a measured state), it is clipped and continued."""
    from loink_ros.core.runtime.continuation import SEED_MARGIN
    problem, rng = panda.problem, np.random.default_rng(37)
    continued = 0
    for q in problem.sample_collision_free(6, rng):
        q[0] = problem.upper[0]                      # the arm at a limit
        target = moved(problem, q, rng, 0.005, 0.01)
        far, hair = q.copy(), q.copy()
        far[0] += 7.9
        hair[0] += 0.5 * SEED_MARGIN
        seeded = panda.solve(PoseRequest(target, seed=far))
        assert_valid(problem, seeded, target)
        assert np.array_equal(seeded.q, panda.solve(PoseRequest(target)).q)
        answer = panda.solve(PoseRequest(target, seed=hair))
        assert answer.success or 'would be a jump' in answer.reason
        if answer.success:
            assert_valid(problem, answer, target)
            assert np.abs(answer.q - q).max() < 0.5
            continued += answer.source == 'continuation'
    assert continued >= 3


def test_the_compiled_ranked_solve_ends_by_its_deadline(panda):
    target = PoseTarget(np.array([0.9, 0.0, 0.3]), np.eye(3))   # in reach, not in this pose
    answer = panda.solve(PoseRequest(target, deadline=time.monotonic() - 1.0))
    assert answer.starts == panda.prior_starts   # the first batch, then no round
    assert not answer.success and answer.reason


def moved(problem, q: np.ndarray, rng, distance: float, angle: float) -> PoseTarget:
    """The pose of q moved by `distance` (m) and turned by `angle` (rad), random directions."""
    from scipy.spatial.transform import Rotation
    position, rotation = problem.tip_pose(q)
    axis, direction = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 3)))
    return PoseTarget(position + distance * direction,
                      Rotation.from_rotvec(angle * axis).as_matrix() @ rotation)


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_a_seed_beside_the_pose_continues_on_its_branch(name):
    """MoveIt's Cartesian interpolator, Servo and the RViz marker seed with the state the arm
    is in: the answer moves each joint little (no jump), where the cost-optimal answer often
    lies on another branch, and drifts down the cost no further than continuity allows."""
    from loink_ros.core.runtime.continuation import STEP_DRIFT_SHARE, continuation_reach
    from loink_ros.core.runtime.pose_refine import converge
    solver = pose_solver(name)
    problem, rng = solver.problem, np.random.default_rng(31)
    continued = elsewhere = 0
    for q in problem.sample_collision_free(30, rng):
        target = moved(problem, q, rng, 0.01, 0.02)
        answer = solver.solve(PoseRequest(target, seed=q))
        reach = continuation_reach(problem, target, q)
        if not answer.success:   # e.g. the moved pose left the reach: no answer, not a jump
            assert 'would be a jump' in answer.reason
            continue
        assert_valid(problem, answer, target)
        assert np.abs(answer.q - q).max() <= reach[0] + 1e-12
        if answer.source != 'continuation':   # found by the search within the reach
            continue
        continued += 1
        # On the seed's branch: the Newton answer from the seed, moved along the self-motion
        # by at most STEP_DRIFT_SHARE of what each joint covers in the step's least time.
        lower, upper = np.maximum(problem.lower, q - reach), np.minimum(problem.upper, q + reach)
        tracked, _, _ = converge(problem, q.copy(), target, lower, upper, max_step=0.5 * reach[0])
        velocity = solver.drift_velocity
        time = (np.abs(tracked - q) / velocity).max()
        assert np.all(np.abs(answer.q - tracked) <= STEP_DRIFT_SHARE * time * velocity + 1e-12)
        optimum = solver.solve(PoseRequest(target))
        elsewhere += np.abs(optimum.q - q).max() > 0.3
    assert continued >= 27
    assert elsewhere >= 10   # where ignoring the seed would jump


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_a_seed_far_from_the_pose_gets_the_cost_optimal_answer(name):
    """Goal sampling seeds at random: the seed's pose lies far from the target, and the
    answer is the one without a seed, bit for bit."""
    solver = pose_solver(name)
    problem, rng = solver.problem, np.random.default_rng(32)
    targets = poses(problem, 12, 33)
    for target, seed in zip(targets, problem.sample_collision_free(len(targets), rng)):
        seeded = solver.solve(PoseRequest(target, seed=seed))
        assert seeded.source != 'continuation'
        assert np.array_equal(seeded.q, solver.solve(PoseRequest(target)).q)


def test_the_drift_lowers_the_cost_along_the_self_motion_only(panda):
    """A request's continuation: the tracked answer, then lower in cost on the same pose."""
    from loink_ros.core.runtime.continuation import continuation_reach
    from loink_ros.core.runtime.pose_refine import converge
    problem, rng = panda.problem, np.random.default_rng(34)
    lowered = 0
    for q in problem.sample_collision_free(20, rng):
        target = moved(problem, q, rng, 0.01, 0.0)
        reach = continuation_reach(problem, target, q)
        step = panda.continue_from(q, target, reach, problem.lower, problem.upper, 0.0, True)
        if not step.on_pose:
            continue
        error = pose_error(problem, step.q, target)
        assert np.linalg.norm(error[:3]) <= 1e-9 and np.linalg.norm(error[3:]) <= 1e-9
        lower, upper = np.maximum(problem.lower, q - reach), np.minimum(problem.upper, q + reach)
        tracked, _, _ = converge(problem, q.copy(), target, lower, upper, max_step=0.5 * reach[0])
        assert problem.cost(step.q)[0] <= problem.cost(tracked)[0] + 1e-12
        lowered += step.drifted and problem.cost(step.q)[0] < problem.cost(tracked)[0] - 1e-6
    assert lowered >= 4   # 6 of these 20: the drift is refused where the arm would be less agile


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_the_compiled_continuation_is_its_numpy_reference(name):
    """kernel.c's loink_pose_continue against continuation.continue_pose: the stream's steps
    (velocity boxes, smoothing) and the requests' (the rule's box), full pose and position."""
    from loink_ros.core.runtime.continuation import continuation_reach, continue_pose
    from loink_ros.core.runtime.pose_solver import EXACT
    solver = pose_solver(name)
    problem, rng = solver.problem, np.random.default_rng(35)
    for q in problem.sample_collision_free(12, rng):
        target = moved(problem, q, rng, 0.02, 0.05)
        for goal in (target, PoseTarget(target.position, target.rotation, True)):
            for reach, smoothing, request in ((continuation_reach(problem, goal, q), 0.0, True),
                                              (np.full(problem.dim, 0.02), 5.0, False)):
                compiled = solver.continue_from(q, goal, reach, problem.lower, problem.upper,
                                                smoothing, request)
                reference = continue_pose(problem, goal, q, reach, problem.lower, problem.upper,
                                          smoothing, EXACT,
                                          solver.drift_velocity if request else None)
                assert (compiled.on_pose, compiled.drifted) == (reference.on_pose, reference.drifted)
                # Iterations that end within EXACT (1e-9) of the pose, in two orders of rounding
                # (-march=native contracts to FMA where the CPU has it): 1.2e-9 seen on an EPYC.
                np.testing.assert_allclose(compiled.q, reference.q, rtol=0, atol=1e-8)
