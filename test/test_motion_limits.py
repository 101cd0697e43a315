"""The motion layer without ROS: the joint limits file (URDF plus joint_limits.yaml) and the
online generator every controller command comes from, checked by finite differences of its
samples against every limit, across replans, brakes, restarts and targets at the ranges' ends."""
import numpy as np
import pytest

from loink_ros.core.motion.joint_limits import JointLimitsError, joint_limits
from loink_ros.core.motion.online_generator import OnlineGenerator
from loink_ros.core.problems.registry import make_problem
from loink_ros.node.limits_file import node_joint_limits

REPO_LIMITS = 'config/joint_limits/panda.yaml'
DT = 0.002
# Finite differences of a sampled jerk-limited motion: rounding only.
SLACK = 1e-6


@pytest.fixture(scope='module')
def limits():
    return node_joint_limits(make_problem('panda_full'), REPO_LIMITS)


def derivatives(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    v = np.diff(positions, axis=0) / DT
    a = np.diff(v, axis=0) / DT
    return v, a, np.diff(a, axis=0) / DT


def assert_within(positions: np.ndarray, limits, scale: float = 1.0) -> None:
    v, a, j = derivatives(positions)
    assert np.all(np.abs(v) <= scale * limits.velocity * (1 + SLACK)), np.abs(v).max(0) / limits.velocity
    assert np.all(np.abs(a) <= limits.acceleration * (1 + SLACK)), np.abs(a).max(0) / limits.acceleration
    assert np.all(np.abs(j) <= limits.jerk * (1 + SLACK)), np.abs(j).max(0) / limits.jerk
    assert np.all(positions >= limits.lower) and np.all(positions <= limits.upper)


def test_the_panda_file_adds_franka_acceleration_and_jerk_to_the_urdf(limits):
    np.testing.assert_allclose(limits.acceleration, [15, 7.5, 10, 12.5, 15, 20, 20])
    np.testing.assert_allclose(limits.jerk, [7500, 3750, 5000, 6250, 7500, 10000, 10000])
    np.testing.assert_allclose(limits.velocity, [2.175] * 4 + [2.61] * 3)
    assert limits.source.endswith('panda.yaml')


def test_a_file_only_tightens_positions_and_velocities(tmp_path):
    path = tmp_path / 'limits.yaml'
    path.write_text('joint_limits:\n  a:\n    has_velocity_limits: true\n    max_velocity: 5.0\n'
                    '    has_position_limits: true\n    min_position: -0.5\n    max_position: 9.0\n'
                    '  b:\n    has_velocity_limits: true\n    max_velocity: 0.5\n'
                    '    has_acceleration_limits: true\n    max_acceleration: 3.0\n')
    limits = joint_limits(['a', 'b'], np.array([-1.0, -1.0]), np.array([1.0, 1.0]),
                          np.array([2.0, 2.0]), path)
    np.testing.assert_allclose(limits.velocity, [2.0, 0.5])
    np.testing.assert_allclose([limits.lower[0], limits.upper[0]], [-0.5, 1.0])
    assert limits.acceleration[0] == np.inf and limits.acceleration[1] == 3.0
    with pytest.raises(JointLimitsError, match="joint 'a' has no acceleration limit"):
        limits.require('acceleration')


@pytest.mark.parametrize('text, reason', [
    ('joint_limits: 3\n', 'no joint_limits mapping'),
    ('joint_limits:\n  a:\n    has_jerk_limits: true\n    max_jerk: -1\n', 'max_jerk = -1.0: it must be > 0'),
    ('joint_limits:\n  a:\n    has_acceleration_limits: true\n', "max_acceleration = None"),
    ('default_velocity_scaling_factor: 2\njoint_limits: {}\n', 'must be in \\(0, 1\\]'),
    ('joint_limits: [', 'while parsing'),
])
def test_unusable_files_are_refused_in_one_line(tmp_path, text, reason):
    path = tmp_path / 'limits.yaml'
    path.write_text(text)
    with pytest.raises(JointLimitsError, match=reason) as err:
        joint_limits(['a'], np.array([-1.0]), np.array([1.0]), np.array([1.0]), path)
    assert '\n' not in str(err.value)


def run(generator: OnlineGenerator, seconds: float, events: dict) -> np.ndarray:
    """Sample the motion every DT, calling events[k](t) at step k."""
    samples = []
    for k in range(int(seconds / DT)):
        t = k * DT
        if k in events:
            events[k](t)
        samples.append(generator.state(t).position)
    return np.array(samples)


def test_random_targets_brakes_and_scale_changes_stay_within_every_limit(limits):
    generator = OnlineGenerator(limits)
    rng = np.random.default_rng(3)
    generator.restart(0.0, (limits.lower + limits.upper) / 2)
    events = {k: (lambda t, q=rng.uniform(limits.lower, limits.upper): generator.move_to(t, q))
              for k in range(0, 3000, 37)}
    for k in range(500, 3000, 400):
        events[k] = generator.brake
    positions = run(generator, 6.0, events)
    assert_within(positions, limits)
    assert np.abs(np.diff(positions, axis=0)).max() > 0.5 * DT * limits.velocity.min()   # it moved


def test_targets_at_the_ranges_ends_are_reached_without_leaving_them(limits):
    generator = OnlineGenerator(limits)
    generator.restart(0.0, limits.lower + 0.05)
    ends = [limits.upper, limits.lower, limits.upper]
    positions = run(generator, 9.0, {k * 1000: (lambda t, q=q: generator.move_to(t, q))
                                     for k, q in enumerate(ends)})
    assert_within(positions, limits)
    np.testing.assert_allclose(positions[-1], limits.upper, atol=1e-9)


def test_a_brake_stops_on_its_way_and_a_restart_holds_the_measured_state(limits):
    generator = OnlineGenerator(limits)
    middle = (limits.lower + limits.upper) / 2
    generator.restart(0.0, middle)
    generator.move_to(0.0, middle + 0.8)
    generator.brake(0.3)
    moving = generator.state(0.3)
    rest = generator.state(5.0)
    assert np.abs(rest.velocity).max() < 1e-9 and generator.finished(5.0)
    direction = (rest.position - moving.position) / np.linalg.norm(rest.position - moving.position)
    assert direction @ moving.velocity / np.linalg.norm(moving.velocity) > 0.99   # on its way
    generator.restart(6.0, middle, velocity=np.full(7, 0.5))
    start = generator.state(6.0)
    np.testing.assert_allclose(start.position, middle)
    np.testing.assert_allclose(start.velocity, 0.5)
    assert generator.target is None    # a measured velocity brakes: no target is invented


def test_a_velocity_scale_slows_every_joint(limits):
    generator = OnlineGenerator(limits)
    generator.velocity_scale = 0.3
    generator.restart(0.0, limits.lower + 0.1)
    positions = run(generator, 4.0, {0: lambda t: generator.move_to(t, limits.upper - 0.1)})
    assert_within(positions, limits, scale=0.3)


def quintic(a, b, h: float, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position and acceleration (len(s), n) of the quintic through states a and b, h apart,
    as joint_trajectory_controller interpolates points with positions, velocities and
    accelerations."""
    c0, c1, c2 = a.position, a.velocity, a.acceleration / 2
    rows = np.array([[h**3, h**4, h**5], [3 * h**2, 4 * h**3, 5 * h**4], [6 * h, 12 * h**2, 20 * h**3]])
    rhs = np.stack([b.position - c0 - c1 * h - c2 * h**2, b.velocity - c1 - 2 * c2 * h,
                    b.acceleration - 2 * c2])
    c3, c4, c5 = np.linalg.solve(rows, rhs)
    s = s[:, None]
    position = c0 + c1 * s + c2 * s**2 + c3 * s**3 + c4 * s**4 + c5 * s**5
    return position, 2 * c2 + 6 * c3 * s + 12 * c4 * s**2 + 20 * c5 * s**3


def test_commands_ahead_are_the_motion_between_their_points_then_a_stop_at_rest(limits):
    """What the trajectory controller gets: states every step and at every jerk switch, so
    its quintic between two neighbours is the motion itself (within every limit); the motion
    for the horizon, then a stop at rest."""
    generator = OnlineGenerator(limits)
    rng = np.random.default_rng(5)
    middle = (limits.lower + limits.upper) / 2
    generator.restart(0.0, middle)
    worst_position, worst_acceleration = 0.0, 0.0
    for k, t in enumerate(np.arange(0.0, 1.5, 0.01)):
        if k % 9 == 0:
            generator.move_to(t + 0.01, rng.uniform(limits.lower, limits.upper))
        samples = generator.ahead(t, 0.1, 0.01)
        assert np.all(np.diff(samples.offsets) > 0) and samples.offsets[0] == 0.0
        assert np.abs(samples.states[-1].velocity).max() < 1e-9
        horizon = [(o, s) for o, s in zip(samples.offsets, samples.states) if o <= 0.1 + 1e-12]
        assert horizon[-1][0] == pytest.approx(0.1)
        for offset, state in horizon:
            np.testing.assert_allclose(state.position, generator.state(t + offset).position)
        for (o0, a), (o1, b) in zip(horizon, horizon[1:]):
            s = np.linspace(0.0, o1 - o0, 9)
            position, _ = quintic(a, b, o1 - o0, s)
            truth = np.array([generator.state(t + o0 + u).position for u in s])
            worst_position = max(worst_position, np.abs(position - truth).max())
        points = list(zip(samples.offsets, samples.states))
        for (o0, a), (o1, b) in zip(points, points[1:]):
            _, acceleration = quintic(a, b, o1 - o0, np.linspace(0.0, o1 - o0, 9))
            worst_acceleration = max(worst_acceleration, (np.abs(acceleration) / limits.acceleration).max())
    assert worst_position < 1e-6
    assert worst_acceleration <= 1.003   # switches closer than KNOT_GAP are merged


def test_a_replan_ahead_keeps_the_motion_before_it(limits):
    """What a late controller relies on: a command sent before a replan at t + lead and one
    sent after it agree on every state before t + lead."""
    generator = OnlineGenerator(limits)
    middle = (limits.lower + limits.upper) / 2
    generator.restart(0.0, middle)
    generator.move_to(0.0, middle + 1.0)
    times = [0.1, 0.105, 0.1099]
    before = [generator.state(t) for t in times]
    generator.move_to(0.11, middle - 1.0)
    for t, state in zip(times, before):
        np.testing.assert_array_equal(generator.state(t).position, state.position)
        np.testing.assert_array_equal(generator.state(t).acceleration, state.acceleration)
    assert generator.state(0.3).velocity @ before[-1].velocity < 0.0   # turned back
    positions = run(generator, 3.0, {})
    assert_within(positions, limits)


def sine_targets(limits, period: float = 0.01, seconds: float = 3.0):
    """A stream's answers along a sine per joint reaching 0.9 of its velocity limit: (t,
    position, velocity)."""
    middle, half = (limits.lower + limits.upper) / 2, (limits.upper - limits.lower) / 2
    amplitude = np.minimum(0.5 * half, 0.9 * limits.velocity / 2.0)
    times = np.arange(0.0, seconds, period)
    positions = middle + amplitude * np.sin(2.0 * times[:, None])
    return times, positions, np.gradient(positions, period, axis=0)


def test_a_target_arriving_moving_keeps_the_streams_pace_within_the_limits(limits):
    """Targets with the stream's velocity (the motion commander's): the motion follows a
    moving stream far closer than targets to arrive at rest, within every limit; when the
    stream stops, it coasts as long as the next answer was due, then settles at the last
    answer."""
    times, positions, velocities = sine_targets(limits)
    errors = {}
    for paced in (False, True):
        generator = OnlineGenerator(limits)
        generator.restart(0.0, positions[0])
        events = {round(t / DT): (lambda t, q=q, v=v: generator.move_to(t, q + v * 0.02, v, 0.02, q)
                                  if paced else generator.move_to(t, q))
                  for t, q, v in zip(times, positions, velocities)}
        sampled = run(generator, times[-1] + 1.0, events)
        assert_within(sampled, limits)
        late = np.arange(len(sampled)) * DT
        moving = (late > 0.5) & (late < times[-1])
        truth = np.array([positions[np.searchsorted(times, t, side='right') - 1] for t in late[moving]])
        errors[paced] = np.abs(sampled[moving] - truth).max(axis=1)
        rest = generator.state(times[-1] + 1.0)
        assert np.abs(rest.velocity).max() < 1e-9 and generator.finished(times[-1] + 1.0)
        np.testing.assert_allclose(rest.position, positions[-1], atol=1e-9)
    assert np.median(errors[True]) < 0.2 * np.median(errors[False]), errors


def test_a_paced_target_at_a_range_end_brakes_in_range(limits):
    """A target at a joint's upper limit moving on towards it: the velocity it arrives with
    is one it can coast and brake from inside the range."""
    generator = OnlineGenerator(limits)
    generator.restart(0.0, limits.upper - 0.3)
    generator.move_to(0.0, limits.upper - 0.01, limits.velocity, 0.05)
    positions = run(generator, 3.0, {})
    assert_within(positions, limits)
    assert np.abs(generator.state(3.0).velocity).max() < 1e-9


def test_a_paced_target_where_the_motion_rests_holds(limits):
    """A stream whose answers stopped (a fitted velocity of rounding's size, the target where
    the motion rests): a hold there, not ruckig's error."""
    generator = OnlineGenerator(limits)
    start = (limits.lower + limits.upper) / 2
    generator.restart(0.0, start)
    generator.move_to(0.0, start + 1e-15, np.full(len(start), 1e-14), 0.06, start)
    generator.move_to(0.01, start + 1e-6, np.full(len(start), 2e-6), 0.06, start)
    for t in (0.0, 0.05, 0.5):
        state = generator.state(t)
        assert np.abs(state.position - start).max() < 1e-6 and np.abs(state.velocity).max() < 1e-4
    assert generator.finished(1.0)


def test_a_measured_velocity_beyond_the_limits_is_clipped(limits):
    """A restart from a measured state whose velocity no arm has (mock hardware's difference
    after a stalled update: 1461 rad/s was seen): the motion brakes from the velocity limit,
    within every limit, and a move from there plans."""
    generator = OnlineGenerator(limits)
    start = (limits.lower + limits.upper) / 2
    generator.restart(0.0, start, np.array([1461.4, -617.7, -1280.2, 610.9, -623.9, -942.5, 1433.1]))
    assert np.all(np.abs(generator.state(0.0).velocity) <= limits.velocity)
    generator.move_to(0.05, start)
    assert_within(run(generator, 3.0, {}), limits)
    assert np.abs(generator.state(3.0).position - start).max() < 1e-9


def test_commands_ahead_of_a_paced_motion_are_the_motion(limits):
    """The trajectory controller's points through arrival, coast and brake: its quintic
    between neighbours is the motion itself."""
    times, positions, velocities = sine_targets(limits)
    generator = OnlineGenerator(limits)
    generator.restart(0.0, positions[0])
    worst = 0.0
    for t, q, v in zip(times[:100], positions, velocities):
        generator.move_to(t + 0.01, q, v, 0.02)
        samples = generator.ahead(t, 0.1, 0.01)
        points = list(zip(samples.offsets, samples.states))
        for (o0, a), (o1, b) in zip(points, points[1:]):
            s = np.linspace(0.0, o1 - o0, 7)
            position, _ = quintic(a, b, o1 - o0, s)
            if o1 <= 0.1 + 1e-12:
                truth = np.array([generator.state(t + o0 + u).position for u in s])
                worst = max(worst, np.abs(position - truth).max())
    assert worst < 1e-6


def test_unstamped_answers_in_a_burst_set_no_pace():
    """The stream's pace from its answers' times: stamps where they rise, else arrivals, but
    not arrivals that came in a burst (a late delivery: their gaps say nothing of the pace)."""
    from loink_ros.node.commander import Slot
    from loink_ros.node.motion_commander import pace_times
    stamped = [Slot(10.0 + 0.01 * k + 0.003 * (k % 2), 0.01, 5.0 + 0.01 * k) for k in range(5)]
    np.testing.assert_allclose(pace_times(stamped), [5.0 + 0.01 * k for k in range(5)])
    steady = [Slot(10.0 + 0.01 * k, 0.01) for k in range(5)]
    np.testing.assert_allclose(pace_times(steady), [10.0 + 0.01 * k for k in range(5)])
    burst = [Slot(t, 0.01) for t in (10.0, 10.01, 10.02, 10.0201)]
    assert pace_times(burst) is None
    assert pace_times(steady[:1]) is None
    assert pace_times([Slot(10.0, 0.01), Slot(10.2, 0.01)]) is None
