"""Whole Cartesian paths planned at once (core/runtime/cartesian_path.py, compiled/path_plan.c)
and timed (path_timing.py): on target where the path allows, inside the velocity limits at a
timed path's timing, branch-free, MoveIt's interpolation, TOPP-RA's timing within the limits
between the points (test_path_timing_limits.py checks that part closely)."""
import numpy as np
import pytest

from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.cartesian_path import (
    BEAM,
    UNTIMED_MAX_JOINT_STEP,
    UNTIMED_SMOOTHING,
    WIDE_BEAM,
    CartesianPlanner,
    PathRequest,
    interpolate,
)
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.path_timing import CartesianSpeed, segment_peaks, time_path
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import PoseRequest, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench import path_shape
from loink_ros.tools.bench.stream_paths import paths

SEED = 20261205


def planner(name: str = 'panda_full', runtime: str = 'compiled') -> CartesianPlanner:
    model = load_model(name)
    solver = PoseSolver(LOInKSolver(model, make_problem(model.problem['name']), runtime=runtime))
    return CartesianPlanner(solver, velocity_limits(solver.problem))


@pytest.fixture(scope='module')
def panda():
    return planner()


def targets(path) -> list[PoseTarget]:
    return [PoseTarget(p, r) for p, r in zip(path.positions, path.rotations)]


def assert_on_target(problem, q: np.ndarray, poses: list[PoseTarget]) -> None:
    for qk, target in zip(q, poses):
        error = pose_error(problem, qk, target)
        assert np.linalg.norm(error[:3]) <= 1e-5 and np.linalg.norm(error[3:]) <= 1e-4
    assert np.all(q >= problem.lower) and np.all(q <= problem.upper)


@pytest.mark.parametrize('name, kind', [('panda_full', 'smooth'), ('xarm7_full', 'smooth'),
                                        ('panda_full', 'singular')])
def test_a_timed_path_is_followed_on_target_within_the_velocity_limits(name, kind, panda):
    """The stream bench's paths, feasible by construction (the singular one through a wrist
    singularity): every waypoint on target, no joint beyond its velocity limit x dt."""
    plan_with = panda if name == 'panda_full' else planner(name)
    problem = plan_with.problem
    path = paths(problem, kind, 1, 3.0, 100.0, SEED)[0]
    plan = plan_with.plan(PathRequest(targets(path), path.q[0], path.times))
    assert plan.complete and plan.on_target.all() and len(plan.q) == len(path.times)
    assert_on_target(problem, plan.q, targets(path))
    steps = np.abs(np.diff(plan.q, axis=0)) / (plan_with.velocity_limits * 0.01)
    assert steps.max() <= 1.0 + 1e-9
    assert np.allclose(plan.q[0], path.q[0])


def test_a_wider_beam_recovers_a_path_the_usual_beam_loses(panda):
    """The stream bench's smooth path 40 (seed 20261203), 0.37-2.37 s: BEAM's configurations
    lose the posture the path needs (it lags at 1.5 s); planned again with WIDE_BEAM it stays
    on target, within the velocity limits."""
    problem = panda.problem
    path = paths(problem, 'smooth', 41, 10.0, 100.0, 20261203)[40]
    window = slice(37, 237)
    request = PathRequest(targets(path)[window], path.q[window][0], path.times[window])
    narrow = panda._plan(request, BEAM)
    assert not narrow.on_target.all()
    plan = panda.plan(request)
    assert plan.beam == WIDE_BEAM and plan.complete
    assert_on_target(problem, plan.q, request.poses)
    assert (np.abs(np.diff(plan.q, axis=0)) / (panda.velocity_limits * 0.01)).max() <= 1.0 + 1e-9


def test_a_path_that_leaves_the_reach_stops_there_and_its_prefix_is_valid(panda):
    problem = panda.problem
    path = paths(problem, 'unreachable', 1, 4.0, 100.0, SEED)[0]
    poses = targets(path)
    timed = panda.plan(PathRequest(poses, path.q[0], path.times))
    last_in = int(np.flatnonzero(~path.reachable)[-1])   # the stretch beyond reach ends here
    assert not timed.complete and timed.reached < last_in
    assert 'reach' in timed.reason or 'velocity' in timed.reason
    assert_on_target(problem, timed.q[:timed.reached], poses)
    # A timed plan goes on through the stretch, and is on target again after it.
    assert len(timed.q) == len(poses) and timed.on_target[-1]
    untimed = panda.plan(PathRequest(poses, path.q[0]))
    assert untimed.reached == len(untimed.q) < last_in
    assert_on_target(problem, untimed.q, poses)


def line(problem, q0: np.ndarray, move: np.ndarray, step: float = 0.01) -> list[PoseTarget]:
    start = PoseTarget(*problem.tip_pose(q0))
    return interpolate(start, [PoseTarget(start.position + move, start.rotation)], step)[0]


READY = np.array([0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0])


def test_an_untimed_line_is_jump_free_and_within_its_jump_thresholds(panda):
    problem = panda.problem
    poses = line(problem, READY, np.array([0.0, 0.0, 0.1]))
    plan = panda.plan(PathRequest(poses, READY))
    assert plan.complete
    assert_on_target(problem, plan.q, poses)
    assert np.abs(np.diff(plan.q, axis=0)).max() < 0.3
    largest = np.abs(np.diff(plan.q, axis=0)).max()   # the line's steps grow as it rises
    capped = panda.plan(PathRequest(poses, READY, jump=np.full(problem.dim, 1.5 * largest)))
    assert capped.complete
    assert np.abs(np.diff(capped.q, axis=0)).max() <= 1.5 * largest + 1e-12
    # A threshold below the steps the line needs: it stops before them, not beyond.
    stopped = panda.plan(PathRequest(poses, READY, jump=np.full(problem.dim, 0.8 * largest)))
    assert 1 < stopped.reached == len(stopped.q) < len(poses)
    assert f'with no joint stepping more than {0.8 * largest:.3g} rad' in stopped.reason
    assert f'pose {stopped.reached} is reachable on its own' in stopped.reason   # the step bound stops it
    assert np.abs(np.diff(stopped.q, axis=0)).max() <= 0.8 * largest + 1e-12
    assert_on_target(problem, stopped.q, poses)


def test_the_services_smoothing_keeps_an_untimed_plan_short(panda):
    """From a start far from the model's cheapest posture, the cost alone glides towards it as
    fast as each step's box allows; the service's smoothing keeps the joints moving little."""
    problem = panda.problem
    rng = np.random.default_rng(7)
    rng.uniform(problem.lower, problem.upper), rng.normal(size=3)   # the generator's first case
    q0, move = rng.uniform(problem.lower, problem.upper), rng.normal(size=3)
    poses = line(problem, q0, 0.15 * move / np.linalg.norm(move))
    glide = panda.plan(PathRequest(poses, q0))
    smooth = panda.plan(PathRequest(poses, q0, smoothing=UNTIMED_SMOOTHING))
    assert glide.complete and smooth.complete
    assert_on_target(problem, smooth.q, poses)
    assert path_shape.joint_length(smooth.q) < 0.5 * path_shape.joint_length(glide.q)
    assert path_shape.largest_step_deg(smooth.q) < path_shape.VALID_STEP_DEG < path_shape.largest_step_deg(glide.q)
    assert smooth.cost.mean() >= glide.cost.mean() - 1e-9   # the cost alone is the cheaper plan


def test_a_plan_stopped_by_an_unreachable_pose_says_so(panda):
    """A line out along x until its tool-down pose cannot be held (inside the certified reach):
    the plan stops there, and the reason says that pose is unreachable even on its own, as a
    longer search of it alone confirms."""
    import time
    problem = panda.problem
    poses = line(problem, READY, np.array([0.6, 0.0, 0.0]))
    plan = panda.plan(PathRequest(poses, READY))
    assert 1 < plan.reached < len(poses), plan.reason
    assert f'pose {plan.reached} is unreachable' in plan.reason
    alone = panda.pose_solver.solve(PoseRequest(poses[plan.reached], deadline=time.monotonic() + 0.5))
    assert not alone.success


def test_a_free_start_is_chosen_among_the_first_poses_answers(panda):
    problem = panda.problem
    poses = line(problem, READY, np.array([0.1, 0.0, 0.0]))
    free = panda.plan(PathRequest(poses))
    assert free.complete
    assert_on_target(problem, free.q, poses)
    # The start is chosen too: no dearer than the path that starts where READY is.
    assert free.cost.mean() <= panda.plan(PathRequest(poses, READY)).cost.mean() + 1e-9


def test_avoid_collisions_keeps_every_waypoint_free(panda):
    problem = panda.problem
    path = paths(problem, 'smooth', 1, 1.0, 100.0, SEED + 1)[0]
    plan = panda.plan(PathRequest(targets(path), path.q[0], path.times, avoid_collisions=True))
    assert plan.complete
    assert not any(problem.self_collisions(q) for q in plan.q)


def test_the_numpy_reference_plans_the_same_way():
    """path_plan.c against CartesianPlanner's numpy orchestration on a short path: both on
    target, the same cost to rounding of the kinematics (the beams may part at a tie)."""
    compiled, reference = planner(), planner(runtime='numpy')
    path = paths(compiled.problem, 'smooth', 1, 0.3, 100.0, SEED)[0]
    request = PathRequest(targets(path), path.q[0], path.times)
    a, b = compiled.plan(request), reference.plan(request)
    assert a.complete and b.complete
    assert a.cost.mean() == pytest.approx(b.cost.mean(), rel=1e-3)


def test_moveits_interpolation_steps():
    """floor(max(d / step, angle / (3.5 step))) + 1 steps a segment, position linear,
    orientation by slerp, each waypoint's index returned."""
    from scipy.spatial.transform import Rotation
    start = PoseTarget(np.zeros(3), np.eye(3))
    moved = PoseTarget(np.array([0.05, 0.0, 0.0]), np.eye(3))
    turned = PoseTarget(moved.position, Rotation.from_rotvec([0.0, 0.0, 0.1]).as_matrix())
    poses, ends = interpolate(start, [moved, turned], 0.01)
    assert ends == [6, 6 + 3] and len(poses) == 10
    assert np.allclose([p.position[0] for p in poses[:7]], np.linspace(0.0, 0.05, 7))
    angles = [Rotation.from_matrix(p.rotation).magnitude() for p in poses[6:]]
    assert np.allclose(angles, np.linspace(0.0, 0.1, 4))


def test_the_timing_keeps_the_limits_between_the_points_and_the_cartesian_speed(panda):
    """TOPP-RA's timing as the controller runs it (a quintic between points: path_timing.py),
    within the limits over every segment, and slower where a Cartesian speed limit asks."""
    problem = panda.problem
    plan = panda.plan(PathRequest(line(problem, READY, np.array([0.0, 0.2, 0.0])), READY))
    velocity, acceleration = panda.velocity_limits * 0.5, np.full(problem.dim, 5.0)
    timing = time_path(plan.q, velocity, acceleration)
    assert np.all(np.diff(timing.times) > 0)
    assert np.allclose(timing.velocities[[0, -1]], 0.0) and np.allclose(timing.accelerations[[0, -1]], 0.0)
    peaks = segment_peaks(plan.q, timing)
    assert np.all(peaks.velocity <= velocity * (1 + 1e-6)) and np.all(peaks.acceleration <= acceleration * (1 + 1e-6))
    # Slower still, on average, than the limits allow: TOPP-RA's time against the bound.
    assert timing.times[-1] >= np.abs(np.diff(plan.q, axis=0)).sum(axis=0).max() / velocity.max()
    positions = np.array([problem.tip_pose(q)[0] for q in plan.q])
    slow = time_path(plan.q, velocity, acceleration, speed=CartesianSpeed(positions, 0.02))
    speeds = np.linalg.norm(np.diff(positions, axis=0), axis=1) / np.diff(slow.times)
    assert speeds.max() <= 0.02 * (1 + 1e-9) and slow.times[-1] > timing.times[-1]
    assert np.all(segment_peaks(plan.q, slow).acceleration <= acceleration * (1 + 1e-6))


def untimed(panda, poses, start=None) -> PathRequest:
    """The service's untimed request: its smoothing and its default step bound."""
    return PathRequest(poses, start, jump=np.full(panda.problem.dim, UNTIMED_MAX_JOINT_STEP),
                       smoothing=UNTIMED_SMOOTHING)


def test_the_smoothing_pass_spreads_a_hop_and_keeps_every_pose(panda):
    """A circle of public_paths' (its first): the beam alone hops along the self-motion (a
    step of 6.4 deg where the rest move 2); the pass makes the path's objective and its largest
    step smaller, every pose still exact, inside the limits and the step bound."""
    from loink_ros.core.runtime import path_smoothing
    from loink_ros.core.runtime.cartesian_path import _step_share
    from loink_ros.tools.bench import moveit_cartesian, public_paths
    problem = panda.problem
    offset = problem.rigid_links()[moveit_cartesian.TIP]
    circle = public_paths.family_paths('circles', 1)[0]
    poses = [public_paths._tip(p, offset) for p in interpolate(circle[0], circle[1:], public_paths.SPACING)[0]]
    request = untimed(panda, poses)
    beam_alone = panda._plan(request, BEAM)
    smoothed = panda.plan(request)
    assert beam_alone.complete and smoothed.complete
    assert_on_target(problem, smoothed.q, poses)
    assert np.abs(np.diff(smoothed.q, axis=0)).max() <= UNTIMED_MAX_JOINT_STEP
    shares = np.array([1.0] + [_step_share(a, b) for a, b in zip(poses[:-1], poses[1:])])

    def energy(q):
        return path_smoothing._energy(problem, q, shares, UNTIMED_SMOOTHING)
    assert energy(smoothed.q) < 0.95 * energy(beam_alone.q)
    assert path_shape.largest_step_deg(smoothed.q) < 0.5 * path_shape.largest_step_deg(beam_alone.q)


def test_a_denser_path_of_the_same_poses_gets_the_same_plan(panda):
    """An untimed plan's values are integrals along the path: 1 cm and 2.5 mm steps of one
    line end in the same posture and move the joints as far."""
    problem = panda.problem
    rng = np.random.default_rng(7)
    rng.uniform(problem.lower, problem.upper), rng.normal(size=3)
    q0, move = rng.uniform(problem.lower, problem.upper), rng.normal(size=3)
    start = PoseTarget(*problem.tip_pose(q0))
    goal = PoseTarget(start.position + 0.15 * move / np.linalg.norm(move), start.rotation)
    coarse, dense = (panda.plan(untimed(panda, interpolate(start, [goal], step)[0], q0))
                     for step in (0.01, 0.0025))
    assert coarse.complete and dense.complete and len(dense.q) > 3 * len(coarse.q)
    assert np.abs(dense.q[-1] - coarse.q[-1]).max() < 0.05
    assert path_shape.joint_length(dense.q) == pytest.approx(path_shape.joint_length(coarse.q), rel=0.05)


def test_a_path_that_needs_a_reconfiguration_says_where_and_why(panda):
    """Once around the base's axis, the tool turning with the path (public_paths'
    reconfiguration path): joint 1 spans 332 deg, so the plan stops where it reaches its limit,
    and says so; every step before it within the bound."""
    from loink_ros.tools.bench import moveit_cartesian, public_paths
    problem = panda.problem
    offset = problem.rigid_links()[moveit_cartesian.TIP]
    q0, turn = public_paths.reconfiguration_path(problem, offset)
    poses = [public_paths._tip(p, offset) for p in interpolate(turn[0], turn[1:], public_paths.SPACING)[0]]
    plan = panda.plan(untimed(panda, poses, q0))
    assert 0.3 * len(poses) < plan.reached < len(poses)
    assert f'pose {plan.reached} is reachable on its own' in plan.reason
    assert '(panda_joint1 at its upper limit)' in plan.reason and 'reconfiguration' in plan.reason
    assert plan.q[plan.reached - 1, 0] == pytest.approx(problem.upper[0], abs=1e-6)
    assert_on_target(problem, plan.q[:plan.reached], poses)
    assert np.abs(np.diff(plan.q[:plan.reached], axis=0)).max() <= UNTIMED_MAX_JOINT_STEP


def test_the_numpy_reference_plans_an_untimed_path_the_same_way():
    """Untimed, with the service's smoothing and step bound, poses unevenly apart (the step
    weights): path_plan.c and the numpy reference plan alike."""
    compiled, reference = planner(), planner(runtime='numpy')
    problem = compiled.problem
    start = PoseTarget(*problem.tip_pose(READY))
    goal = PoseTarget(start.position + np.array([0.0, 0.06, 0.04]), start.rotation)
    poses = interpolate(start, [goal], 0.01)[0]
    poses = poses[:3] + interpolate(poses[2], [goal], 0.004)[0][1:]
    a, b = (p.plan(untimed(p, poses, READY)) for p in (compiled, reference))
    assert a.complete and b.complete
    assert a.cost.mean() == pytest.approx(b.cost.mean(), rel=1e-3)
    assert path_shape.joint_length(a.q) == pytest.approx(path_shape.joint_length(b.q), rel=1e-3)
