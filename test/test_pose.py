"""The pose task, its chart, and exact pose refinement with cost descent (numpy and compiled)."""

import numpy as np
import pinocchio as pin
import pytest

from loink_ros.core.problems.arms import rotation_chart
from loink_ros.core.problems.arms.panda import HAND_DOWN
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.pose_refine import PoseObjective, PoseTarget, converge, pose_error, refine_pose

EXACT = (1e-9, 1e-9)


@pytest.fixture(scope='module')
def full():
    return make_problem('panda_full')


@pytest.fixture(scope='module')
def chart_problem():
    return make_problem('panda_pose')


def random_rotations(count, seed, max_angle=np.pi):
    rng = np.random.default_rng(seed)
    axes = rng.normal(size=(count, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return [pin.exp3(a * rng.uniform(0, max_angle)) for a in axes]


def test_chart_round_trip_and_geodesic_angle():
    """The chart is log(R0^T R): exp brings it back, and its norm is the geodesic angle."""
    for rotation in random_rotations(200, 1, 0.999 * np.pi):
        r = rotation_chart.chart(HAND_DOWN, rotation)
        assert np.allclose(HAND_DOWN @ pin.exp3(r), rotation, atol=1e-9)      # round trip
        angle = np.arccos(np.clip(0.5 * (np.trace(HAND_DOWN.T @ rotation) - 1.0), -1.0, 1.0))
        assert np.isclose(np.linalg.norm(r), angle, atol=1e-6)                # the geodesic
        assert np.allclose(pin.log3(HAND_DOWN.T @ rotation), r, atol=1e-8)
    assert np.allclose(rotation_chart.chart(HAND_DOWN, HAND_DOWN), 0.0)


def test_quaternion_round_trip_and_normalisation():
    for rotation in random_rotations(50, 2):
        xyzw = rotation_chart.matrix_quaternion(rotation)
        assert xyzw[3] >= 0 and np.isclose(np.linalg.norm(xyzw), 1.0)
        assert np.allclose(rotation_chart.quaternion_matrix(3.0 * xyzw), rotation, atol=1e-12)
    with pytest.raises(ValueError, match='zero'):
        rotation_chart.quaternion_matrix([0, 0, 0, 0])


def test_pose_task_jacobian_and_symbolic_form(chart_problem):
    import casadi as ca
    symbolic = chart_problem.symbolic()
    task = ca.Function('task', [symbolic.q], [symbolic.task])
    for q in chart_problem.sample_collision_free(5, np.random.default_rng(3)):
        y = chart_problem.task(q)[0]
        assert chart_problem.task_names[3:] == ['panda_hand_rx', 'panda_hand_ry', 'panda_hand_rz']
        assert np.allclose(np.asarray(task(q)).ravel(), y, atol=1e-12)
        step = 1e-6
        numeric = np.array([(chart_problem.task(q + step * e)[0] - chart_problem.task(q - step * e)[0])
                            / (2 * step) for e in np.eye(7)]).T
        assert np.allclose(chart_problem.task_jacobian(q), numeric, atol=1e-6)


def test_pose_error_is_position_and_geodesic_angle(full):
    q = full.example_configuration()
    position, rotation = full.tip_pose(q)
    turn = pin.exp3(np.array([0.0, 0.3, 0.0]))
    target = PoseTarget(position + [0.01, 0, 0], turn @ rotation)
    error = pose_error(full, q, target)
    assert np.isclose(np.linalg.norm(error[:3]), 0.01)
    assert np.isclose(np.linalg.norm(error[3:]), 0.3)
    assert pose_error(full, q, PoseTarget(position, turn, position_only=True)).shape == (3,)


def targets(problem, count, seed):
    return [PoseTarget(*problem.tip_pose(q)) for q in problem.sample_collision_free(count, np.random.default_rng(seed))]


def test_refinement_reaches_the_pose_in_limits_and_lowers_the_cost(full):
    rng = np.random.default_rng(4)
    objective = PoseObjective(full)
    reached = 0
    for q in full.sample_collision_free(20, np.random.default_rng(5)):
        target = PoseTarget(*full.tip_pose(q))
        start = np.clip(q + rng.normal(0.0, 0.3, q.shape), full.lower, full.upper)
        on_pose, _, _ = converge(full, start.copy(), target, full.lower, full.upper)
        result = refine_pose(full, start, target, full.lower, full.upper, objective, EXACT)
        if result.position_error > 1e-9:        # this start did not reach the pose
            continue
        reached += 1
        assert result.rotation_error <= 1e-9
        assert np.all(result.q >= full.lower) and np.all(result.q <= full.upper)
        assert result.objective <= objective.value(on_pose) + 1e-12
        error = pose_error(full, result.q, target)      # Pinocchio's FK agrees
        assert np.linalg.norm(error) <= 2e-9
    assert reached >= 18


def test_refinement_keeps_narrowed_bounds_and_position_only(full):
    target = targets(full, 1, 6)[0]
    lower, upper = full.lower.copy(), full.upper.copy()
    lower[0], upper[0] = -0.1, 0.1
    only = PoseTarget(target.position, target.rotation, position_only=True)
    result = refine_pose(full, full.example_configuration(), only, lower, upper,
                         PoseObjective(full), EXACT)
    assert result.position_error <= 1e-9
    assert lower[0] <= result.q[0] <= upper[0]


def test_seed_weight_pulls_the_descent_towards_the_seed(full):
    target = targets(full, 1, 7)[0]
    start = full.example_configuration()
    seed = start + 0.3
    free = refine_pose(full, start, target, full.lower, full.upper, PoseObjective(full), EXACT)
    near = refine_pose(full, start, target, full.lower, full.upper,
                       PoseObjective(full, seed, 100.0), EXACT)
    assert free.position_error <= 1e-9 and near.position_error <= 1e-9
    assert np.linalg.norm(near.q - seed) < np.linalg.norm(free.q - seed)


@pytest.fixture(scope='module')
def compiled():
    """The compiled kernel of the shipped Panda model (its problem's pose functions)."""
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    solver = LOInKSolver(load_model('panda'), make_problem('panda'))
    assert solver.kernel is not None and solver.kernel.has_pose, solver.runtime_note
    return solver.kernel


@pytest.mark.parametrize('position_only', [False, True])
def test_compiled_pose_solve_matches_numpy(full, compiled, position_only):
    """Newton onto the pose step for step, and the descent along the self-motion to the same
    point (to 1e-9: where the polish ends depends on rounding, the point it reaches does not)."""
    panda = make_problem('panda')       # the kernel's problem: its cost, the URDF's kinematics
    rng = np.random.default_rng(8)
    bounds = np.stack([full.lower, full.upper])
    seed, weight = full.example_configuration(), 0.5
    objective = PoseObjective(panda, seed, weight)
    reached = 0
    poses = targets(full, 30, 9)
    for target in poses:
        target = PoseTarget(target.position, target.rotation, position_only)
        start = np.clip(rng.normal(full.example_configuration(), 0.6), full.lower, full.upper)
        flat = np.concatenate([target.position, target.rotation.ravel()])
        for descend in (False, True):
            c = compiled.pose_solve(start[None], flat, position_only, bounds, seed, weight,
                                    EXACT, int(descend))
            r = refine_pose(panda, start, target, full.lower, full.upper, objective, EXACT, descend)
            assert c.info[0, 3] == r.newton_steps
            # A start that never reaches the pose wanders all its steps, and rounding
            # differences grow along the way (to 4e-8 seen): it is no answer.
            on_pose = r.position_error <= 1e-9
            assert np.abs(c.q[0] - r.q).max() <= (1e-9 if on_pose else 1e-6)
            assert abs(c.info[0, 0] - r.position_error) <= (1e-12 if on_pose else 1e-6)
            assert abs(c.info[0, 2] - r.objective) <= (1e-9 if on_pose else 1e-6) * (1.0 + r.objective)
            if descend and r.position_error <= 1e-9:
                assert c.info[0, 1] <= 1e-9
                assert np.all(c.q[0] >= full.lower) and np.all(c.q[0] <= full.upper)
                reached += 1
    assert reached >= 10


def test_batched_descents_take_the_lowest_rows_on_the_pose_apart(full, compiled):
    """pose_solve descends the `descents` on-pose rows lowest in objective that are more than
    DESCENT_SEPARATION apart, as refine_poses, and lands on the same points."""
    from loink_ros.core.runtime.pose_refine import DESCENT_SEPARATION, converge, refine_poses
    panda = make_problem('panda')
    target = targets(full, 1, 16)[0]    # its three lowest rows on the pose are not apart
    starts = np.clip(np.random.default_rng(13).normal(full.example_configuration(), 0.5, (16, 7)),
                     full.lower, full.upper)
    flat = np.concatenate([target.position, target.rotation.ravel()])
    c = compiled.pose_solve(starts, flat, False, np.stack([full.lower, full.upper]), None, 0.0,
                            EXACT, 3)
    objective = PoseObjective(panda)
    r = refine_poses(panda, starts, target, full.lower, full.upper, objective, EXACT, 3)
    descended = [i for i, row in enumerate(r) if row.descent_steps > 0]
    assert [i for i in range(16) if c.info[i, 4] > 0] == descended and len(descended) == 3
    on_pose = {i: q for i, (q, e, _) in enumerate(
        converge(panda, s.copy(), target, full.lower, full.upper) for s in starts)
        if np.linalg.norm(e) <= EXACT[0]}
    lowest = sorted(on_pose, key=lambda i: objective.value(on_pose[i]))[:3]
    assert sorted(lowest) != descended
    assert all(np.abs(on_pose[a] - on_pose[b]).max() > DESCENT_SEPARATION
               for k, a in enumerate(descended) for b in descended[:k])
    for i, row in enumerate(r):
        assert np.abs(c.q[i] - row.q).max() <= 1e-9
        assert abs(c.info[i, 2] - row.objective) <= 1e-9 * (1.0 + row.objective)


def test_second_arm_self_collision_model():
    """The xArm7's collision meshes less its SRDF's disabled pairs: adjacent links are not
    checked, a folded arm touches its own base links, the zero posture is free."""
    xarm = make_problem('xarm7_full')
    pairs = set(xarm.collision.link_pairs)
    assert ('link_base', 'link6') in pairs and ('link1', 'link2') not in pairs
    assert xarm.self_collisions(np.zeros(7)) == []
    folded = np.array([4.06, -0.33, 4.14, -0.15, -1.7, -1.31, 1.92])
    assert 'link1 touches link6' in xarm.self_collisions(folded)


def test_a_joint_spanning_a_turn_turns_through_its_bounds():
    """An angle whose bounds span a turn goes on past a bound as the same posture 2 pi away
    instead of stopping there, in numpy and in C alike; bounds under a turn still hold."""
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    arm = make_problem('xarm7_full')
    assert arm.revolute.all()
    kernel = LOInKSolver(load_model('xarm7_full'), arm).kernel
    lower, upper = arm.lower.copy(), arm.upper.copy()
    lower[0], upper[0] = -np.pi, np.pi                 # one turn
    goal = np.clip(arm.example_configuration(), lower, upper)
    goal[0] = -np.pi + 0.2
    target = PoseTarget(*arm.tip_pose(goal))
    start = goal.copy()
    start[0] = np.pi - 0.1                             # 0.3 rad from the goal, across the bound
    q, error, _ = converge(arm, start.copy(), target, lower, upper)
    assert np.linalg.norm(error) <= 1e-12 and np.all(q >= lower) and np.all(q <= upper)
    assert q[0] < -np.pi + 1.0                         # it turned
    flat = np.concatenate([target.position, target.rotation.ravel()])
    c = kernel.pose_solve(start[None], flat, False, np.stack([lower, upper]), None, 0.0, EXACT, 0)
    assert np.abs(c.q[0] - q).max() <= 1e-12
    upper[0] = np.pi - 0.01                            # under a turn: the bound holds
    held, _, _ = converge(arm, start.copy(), target, lower, upper)
    assert 0.0 < held[0] <= upper[0]


def test_answers_take_the_cheapest_turn_of_each_angle():
    """A configuration on the pose with an angle a turn away from a cheaper posture (the
    xArm7's joint 7 at q - 2 pi) comes back turned: the same pose, the lower cost; C agrees."""
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.pose_refine import refine_poses
    from loink_ros.core.runtime.solver import LOInKSolver
    arm = make_problem('xarm7_full')
    kernel = LOInKSolver(load_model('xarm7_full'), arm).kernel
    cheap = arm.example_configuration()
    cheap[6] = 2.4
    start = cheap.copy()
    start[6] -= 2 * np.pi
    assert start[6] >= arm.lower[6] and arm.cost(start)[0] > arm.cost(cheap)[0]
    target = PoseTarget(*arm.tip_pose(cheap))
    objective = PoseObjective(arm)
    r = refine_poses(arm, start[None], target, arm.lower, arm.upper, objective, EXACT, 0)[0]
    assert np.abs(r.q - cheap).max() <= 1e-9 and r.position_error <= 1e-9
    assert r.objective == pytest.approx(arm.cost(cheap)[0], rel=1e-12)
    flat = np.concatenate([target.position, target.rotation.ravel()])
    c = kernel.pose_solve(start[None], flat, False, np.stack([arm.lower, arm.upper]), None, 0.0,
                          EXACT, 0)
    assert np.abs(c.q[0] - r.q).max() <= 1e-12 and c.info[0, 2] == pytest.approx(r.objective)
