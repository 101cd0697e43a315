"""loink_node as a real process over DDS: services, parameters, streaming, bad inputs.

One node per module (conftest.planar3_node: the `loink_node` console script that
`ros2 run` starts, on config/planar3.yaml, in an isolated domain), driven by a real rclpy
client in this process.
"""
import importlib.util
import math
import os
import queue
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

JOINTS = ['shoulder', 'elbow', 'wrist']
STREAM_TIMEOUT = 0.3
LOINK_NODE_PARAMETERS = {'joint_states_topic': 'joint_states', 'stream_timeout': STREAM_TIMEOUT}
# Reply to wait for per streamed target (s).
STREAM_REPLY = 5.0


@pytest.fixture(scope='module')
def robot():
    from loink_ros.core.problems.arms.planar3 import Planar3Problem
    return Planar3Problem()


def solve(node, **fields):
    from loink_msgs.srv import Solve
    return node.call(Solve, 'solve', Solve.Request(**fields))


def sample(node, **fields):
    from loink_msgs.srv import Sample
    return node.call(Sample, 'sample', Sample.Request(**fields))


def seed(names, positions):
    from sensor_msgs.msg import JointState
    return JointState(name=names, position=positions)


def test_model_info(planar3_node):
    from loink_msgs.srv import GetModelInfo
    info = planar3_node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
    assert info.model_name == 'planar3' and info.robot_name == 'planar3'
    assert list(info.joint_names) == JOINTS and list(info.task_names) == ['tip_x']
    assert (info.task_dim, info.latent_dim) == (1, 2)
    assert (info.base_frame, info.tip_frame) == ('base_link', 'tip')
    assert len(info.joint_lower) == len(info.joint_upper) == 3
    assert info.task_lower[0] < 0 < info.task_upper[0]
    assert 0 < info.lipschitz_lower < 1 < info.lipschitz_upper


def test_solve_fills_the_solution(planar3_node, robot):
    before = time.time()
    response = solve(planar3_node, task=[0.3])
    assert response.success and response.error_code == 0 and response.message == ''
    solution = response.solution
    state = solution.joint_state
    assert list(state.name) == JOINTS and len(state.position) == 3
    assert state.header.stamp.sec >= int(before)
    q = np.array(state.position)
    # task_error is the true (Pinocchio) forward kinematics' miss.
    assert solution.task_error == pytest.approx(abs(robot.task(q)[0, 0] - 0.3), abs=1e-12)
    assert solution.has_cost and solution.cost == pytest.approx(robot.cost(q)[0])
    assert math.isfinite(solution.predicted_cost) and list(solution.latent) == [0.0, 0.0]
    assert response.solve_time_ms > 0


def test_refined_solve_and_latent(planar3_node, robot):
    optimum = solve(planar3_node, task=[0.3], refine=True).solution
    assert optimum.task_error < 1e-9
    other = solve(planar3_node, task=[0.3], latent=[1.0, -0.5]).solution
    assert list(other.latent) == [1.0, -0.5]
    assert other.predicted_cost > optimum.predicted_cost


def test_seed_in_any_order_with_extra_joints(planar3_node):
    plain = solve(planar3_node, task=[0.2]).solution.joint_state.position
    shuffled = seed(['gripper', 'wrist', 'shoulder', 'elbow'], [0.7, 0.1, -0.2, 0.3])
    seeded = solve(planar3_node, task=[0.2], seed=shuffled)
    assert seeded.success
    # The seed only warm-starts the inverse: the answer is the same configuration.
    np.testing.assert_allclose(seeded.solution.joint_state.position, plain, atol=1e-8)


def test_sample_ranks_distinct_solutions(planar3_node, robot):
    response = sample(planar3_node, task=[0.1], count=6, spread=0.5, refine=True,
                      use_random_seed=True, random_seed=7)
    assert response.success and len(response.solutions) == 6
    costs = [s.cost for s in response.solutions]
    assert costs == sorted(costs)
    qs = np.array([s.joint_state.position for s in response.solutions])
    assert len({tuple(np.round(q, 6)) for q in qs}) == 6
    np.testing.assert_allclose(robot.task(qs)[:, 0], 0.1, atol=1e-8)
    again = sample(planar3_node, task=[0.1], count=6, spread=0.5, refine=True,
                   use_random_seed=True, random_seed=7)
    np.testing.assert_allclose([s.joint_state.position for s in again.solutions], qs)


def test_latent_at_the_bound_has_a_finite_cost(planar3_node):
    response = solve(planar3_node, task=[0.1], latent=[1000.0, -1000.0])
    assert response.error_code in (0, 9), response.message
    assert math.isfinite(response.solution.predicted_cost)


def test_spread_is_the_latent_variance(planar3_node):
    """spread c: z ~ N(0, c I), so the latents' standard deviation is sqrt(c) = 2 for c = 4."""
    latents = np.vstack([[s.latent for s in sample(planar3_node, task=[0.1], count=100,
                                                   spread=4.0, use_random_seed=True,
                                                   random_seed=k).solutions]
                         for k in range(5)])
    assert latents.shape == (500, 2)
    assert 1.8 < latents.std() < 2.2 and abs(latents.mean()) < 0.25
    from pathlib import Path
    srv = (Path(__file__).resolve().parents[1] / 'loink_msgs' / 'srv' / 'Sample.srv').read_text()
    comment = srv.split('float64 spread')[0].split('uint32 count')[1]
    assert 'Variance c' in comment and 'sqrt(c)' in comment


def test_sample_ranks_answers_within_tolerance_first(planar3_node):
    """Unrefined, some samples miss the tolerance: every one that meets it comes first."""
    tolerance = 0.001
    assert all(r.successful for r in planar3_node.set(refine=False, task_tolerance=tolerance))
    try:
        mixed = 0
        for k, task in enumerate(np.linspace(-0.5, 0.5, 9)):
            response = sample(planar3_node, task=[float(task)], count=40, spread=1.0,
                              use_random_seed=True, random_seed=k)
            within = [s.task_error <= tolerance for s in response.solutions]
            assert within == sorted(within, reverse=True)   # all hits before all misses
            hits = [s.cost for s in response.solutions if s.task_error <= tolerance]
            misses = [s.cost for s in response.solutions if s.task_error > tolerance]
            assert hits == sorted(hits) and misses == sorted(misses)
            assert response.success == any(within)
            mixed += bool(hits) and bool(misses) and min(misses) < min(hits)
        assert mixed, 'no task where a missing sample was cheaper: the ranking was not tested'
    finally:
        assert all(r.successful for r in planar3_node.set(refine=True, task_tolerance=0.005))


NAN, INF = float('nan'), float('inf')
BAD_SOLVES = {
    'task too long': ({'task': [0.1, 0.2]}, 'INVALID_TASK_DIMENSION'),
    'task NaN': ({'task': [NAN]}, 'NON_FINITE_INPUT'),
    'task inf': ({'task': [INF]}, 'NON_FINITE_INPUT'),
    'task empty': ({'task': []}, 'EMPTY_REQUEST'),
    'task oversized': ({'task': [0.1] * 5000}, 'REQUEST_TOO_LARGE'),
    'task out of bounds': ({'task': [5.0]}, 'TASK_OUT_OF_BOUNDS'),
    'latent wrong length': ({'task': [0.1], 'latent': [0.1]}, 'INVALID_LATENT'),
    'latent NaN': ({'task': [0.1], 'latent': [NAN, 0.0]}, 'NON_FINITE_INPUT'),
    'latent oversized': ({'task': [0.1], 'latent': [0.0] * 5000}, 'REQUEST_TOO_LARGE'),
    'latent unbounded': ({'task': [0.1], 'latent': [1e300, 0.0]}, 'INVALID_LATENT'),
    'latent past the bound': ({'task': [0.1], 'latent': [0.0, -1000.5]}, 'INVALID_LATENT'),
    'seed unknown joints': ({'task': [0.1], 'seed': seed(['a', 'b', 'c'], [0.0] * 3)},
                            'INVALID_SEED_STATE'),
    'seed lengths differ': ({'task': [0.1], 'seed': seed(JOINTS, [0.0, 0.0])},
                            'INVALID_SEED_STATE'),
    'seed joint twice': ({'task': [0.1], 'seed': seed(JOINTS + ['wrist'], [0.0] * 4)},
                         'INVALID_SEED_STATE'),
    'seed NaN': ({'task': [0.1], 'seed': seed(JOINTS, [0.0, NAN, 0.0])}, 'NON_FINITE_INPUT'),
    'seed oversized': ({'task': [0.1], 'seed': seed(JOINTS + [f'x{k}' for k in range(1100)],
                                                    [0.0] * 1103)}, 'REQUEST_TOO_LARGE'),
}
BAD_SAMPLES = {
    'count zero': ({'task': [0.1], 'count': 0, 'spread': 0.5}, 'INVALID_COUNT'),
    'count over max_samples': ({'task': [0.1], 'count': 101, 'spread': 0.5}, 'INVALID_COUNT'),
    'count huge': ({'task': [0.1], 'count': 2**32 - 1, 'spread': 0.5}, 'INVALID_COUNT'),
    'spread negative': ({'task': [0.1], 'count': 3, 'spread': -1.0}, 'INVALID_SPREAD'),
    'spread huge': ({'task': [0.1], 'count': 3, 'spread': 1e9}, 'INVALID_SPREAD'),
    'spread NaN': ({'task': [0.1], 'count': 3, 'spread': NAN}, 'NON_FINITE_INPUT'),
    'task empty': ({'task': [], 'count': 3, 'spread': 0.5}, 'EMPTY_REQUEST'),
    'task out of bounds': ({'task': [-3.0], 'count': 3, 'spread': 0.5}, 'TASK_OUT_OF_BOUNDS'),
}


@pytest.mark.parametrize('case', BAD_SOLVES)
def test_bad_solve_is_refused_then_served(planar3_node, case):
    from loink_msgs.msg import ErrorCode
    fields, code = BAD_SOLVES[case]
    response = solve(planar3_node, **fields)
    assert not response.success and response.error_code == getattr(ErrorCode, code)
    assert response.message
    assert solve(planar3_node, task=[0.1]).success


@pytest.mark.parametrize('case', BAD_SAMPLES)
def test_bad_sample_is_refused_then_served(planar3_node, case):
    from loink_msgs.msg import ErrorCode
    fields, code = BAD_SAMPLES[case]
    response = sample(planar3_node, **fields)
    assert not response.success and response.error_code == getattr(ErrorCode, code)
    assert response.message and not response.solutions
    assert sample(planar3_node, task=[0.1], count=3, spread=0.5, refine=True).success


def test_no_solution_above_task_tolerance(planar3_node):
    from loink_msgs.msg import ErrorCode
    # The node's refine parameter off: only the request's flag refines.
    assert all(r.successful for r in planar3_node.set(task_tolerance=1e-12, refine=False))
    try:
        response = solve(planar3_node, task=[0.3])
        assert not response.success and response.error_code == ErrorCode.NO_SOLUTION
        assert 'task_tolerance' in response.message
        assert len(response.solution.joint_state.position) == 3   # the best configuration
        sampled = sample(planar3_node, task=[0.3], count=3, spread=0.5)
        assert sampled.error_code == ErrorCode.NO_SOLUTION and len(sampled.solutions) == 3
        assert solve(planar3_node, task=[0.3], refine=True).success
    finally:
        assert all(r.successful for r in planar3_node.set(task_tolerance=0.005, refine=True))


def test_live_parameters_are_checked(planar3_node):
    accepted = planar3_node.set(smoothing=2.5, refine=False, max_samples=50)
    assert all(result.successful for result in accepted)
    try:
        assert sample(planar3_node, task=[0.1], count=51, spread=0.1).error_code == 5
        refused = {
            'smoothing': planar3_node.set(smoothing=-1.0)[0],
            'smoothing NaN': planar3_node.set(smoothing=NAN)[0],
            'tolerance': planar3_node.set(task_tolerance=0.0)[0],
            'type': planar3_node.set(refine='yes')[0],
            'model': planar3_node.set(model='other')[0],
            'urdf': planar3_node.set(urdf='other.urdf')[0],
        }
        for what, result in refused.items():
            assert not result.successful and result.reason, what
        assert 'must be > 0' in refused['tolerance'].reason
        assert 'read-only' in refused['model'].reason
    finally:
        restored = planar3_node.set(smoothing=0.0, refine=True, max_samples=100)
        assert all(result.successful for result in restored)


def test_concurrent_clients_get_their_own_answers(planar3_node, robot):
    from loink_msgs.srv import Solve
    calls = planar3_node.calls
    tasks = np.linspace(-0.6, 0.6, 8)

    def client_thread(i):
        client = calls.node.create_client(Solve, f'{planar3_node.name}/solve')
        assert client.wait_for_service(timeout_sec=10.0)
        answers = []
        for k in range(15):
            y = tasks[i] + 0.005 * k
            call = calls.call if answers else calls.first_call
            answers.append((y, call(client, Solve.Request(task=[y], refine=True))))
        return answers

    with ThreadPoolExecutor(8) as pool:
        answers = [a for thread in pool.map(client_thread, range(8)) for a in thread]
    assert len(answers) == 120
    for y, response in answers:
        assert response.success
        assert robot.task(np.array(response.solution.joint_state.position))[0, 0] == \
            pytest.approx(y, abs=1e-8)


@pytest.fixture(scope='module')
def stream(planar3_node):
    """Publishers of targets and joint states, and a queue of the node's solutions."""
    from sensor_msgs.msg import JointState

    from loink_msgs.msg import TaskTarget
    node, name = planar3_node.calls.node, planar3_node.name
    namespace = name.rsplit('/', 1)[0]
    solutions = queue.Queue()
    targets = node.create_publisher(TaskTarget, f'{name}/target', 10)
    states = node.create_publisher(JointState, f'{namespace}/joint_states', 10)
    node.create_subscription(JointState, f'{name}/joint_solution', solutions.put, 10)
    deadline = time.monotonic() + 10.0
    while targets.get_subscription_count() < 1 or states.get_subscription_count() < 1:
        assert time.monotonic() < deadline, 'node did not subscribe'
        time.sleep(0.05)
    return targets, states, solutions


def target(task, sec, frame=''):
    from loink_msgs.msg import TaskTarget
    msg = TaskTarget(task=list(task))
    msg.header.stamp.sec, msg.header.frame_id = sec, frame
    return msg


def follow(stream, tasks, first_sec, gap: float = 0.0):
    """Publish targets one at a time, each after the previous solution came back (and `gap`
    s more)."""
    targets, _, solutions = stream
    path = []
    for k, y in enumerate(tasks):
        time.sleep(gap if k else 0.0)
        targets.publish(target([y], first_sec + k))
        reply = solutions.get(timeout=STREAM_REPLY)
        assert reply.header.stamp.sec == first_sec + k and list(reply.name) == JOINTS
        path.append(reply.position)
    return np.array(path)


def test_smoothing_slows_the_stream(planar3_node, stream):
    """From a start far from the optimum, smoothing 0 heads there as fast as the velocity
    limit lets it, a large smoothing glides: its steps after the first (the first is limited
    alike) stay smaller. Targets 0.1 s apart at 10 x the limits: the limit allows 2 rad a step."""
    from sensor_msgs.msg import JointState
    tasks = np.linspace(0.1, 0.2, 12)
    # The robot stands in a configuration that reaches the first target far from its optimum.
    start = np.array(solve(planar3_node, task=[tasks[0]], latent=[1.2, -1.2], refine=True)
                     .solution.joint_state.position)
    steps = {}
    assert planar3_node.set(velocity_scale=10.0)[0].successful
    for run, smoothing in enumerate((0.0, 20.0)):
        assert planar3_node.set(smoothing=smoothing)[0].successful
        time.sleep(STREAM_TIMEOUT + 0.2)   # a gap: the next target starts a new stream
        for _ in range(3):                 # ... from this state, fresh (joint_states_max_age)
            stream[1].publish(JointState(name=['gripper'] + JOINTS, position=[0.0, *start]))
            time.sleep(0.01)
        path = follow(stream, tasks, first_sec=100 * (run + 1), gap=0.1)
        steps[smoothing] = np.linalg.norm(np.diff(np.vstack([start, path]), axis=0), axis=1)
    planar3_node.set(smoothing=0.0, velocity_scale=1.0)
    assert steps[20.0][1:].max() < 0.5 * steps[0.0][1:].max()


def test_bad_targets_are_dropped(planar3_node, stream):
    targets, _, solutions = stream
    for bad in (target([NAN], 1), target([0.1, 0.2], 2), target([], 3), target([9.0], 4),
                target([0.1] * 5000, 5), target([0.1], 6, frame='world')):
        targets.publish(bad)
    targets.publish(target([0.1], 7, frame='/base_link'))
    assert solutions.get(timeout=STREAM_REPLY).header.stamp.sec == 7
    assert solutions.empty()
    assert solve(planar3_node, task=[0.1]).success


def test_unexpected_exception_becomes_internal_error():
    # In-process: no request can make the real solver raise, so break it on purpose.
    from types import SimpleNamespace

    from rclpy.clock import Clock
    from rclpy.logging import get_logger

    from loink_msgs.srv import Solve
    from loink_ros.node.ik_services import IKServices
    from loink_ros.node.parameters import SPECS, Settings
    from loink_ros.node.request_stats import RequestStats
    from loink_ros.node.startup import load_solver
    solver, _ = load_solver(Settings(**{name: spec.default for name, spec in SPECS.items()}))

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError('deliberate')

    solver.solve = broken
    settings = SimpleNamespace(refine=False, task_tolerance=0.01)
    services = IKServices(solver, lambda: settings, Clock(), get_logger('test_internal_error'),
                          RequestStats())
    response = services.solve(Solve.Request(task=[0.1]), Solve.Response())
    assert not response.success and response.error_code == 99
    assert response.message == 'ZeroDivisionError: deliberate'


@pytest.mark.parametrize('content', ['{"format": "loink-model", "format_version": 1',
                                     '{"format": "loink-model", "format_version": 1}',
                                     None])
def test_unusable_model_stops_start_up(tmp_path, content):
    from loink_ros.tools.node_process import isolate_ros_environment, node_command
    isolate_ros_environment()
    path = tmp_path / 'broken.json'
    if content is not None:
        path.write_text(content)
    result = subprocess.run(node_command() + ['--ros-args', '-p', f'model:={path}'],
                            capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('loink_node: ') and str(path) in lines[0]


def test_bench_against_the_running_node(planar3_node):
    # `loink bench node --namespace NS` on this module's node, with few requests.
    from loink_ros.tools.bench.node import bench
    namespace = planar3_node.name.rsplit('/', 1)[0]
    result = bench(planar3_node.calls, namespace, count=16, seed=0, stream_seconds=1.0)
    moveit = importlib.util.find_spec('moveit_msgs') is not None
    for key in ('solve', 'get_position_ik') if moveit else ('solve',):
        for clients in ('clients_1', 'clients_8'):
            figures = result[key][clients]
            # no_solution is the model missing a target (unrefined solves): an answer.
            assert figures['ok'] + figures['no_solution'] == 16, key
            assert (figures['failed'], figures['lost']) == (0, 0), key
            assert figures['latency_ms_p50'] > 0
        # The empty-service floor ran in the same bench, on the same requests.
        floor = result[key]['floor']
        for clients in ('clients_1', 'clients_8'):
            assert floor[clients]['ok'] == 16 and floor[clients]['lost'] == 0, key
        assert result[key]['p50_over_floor'] == pytest.approx(
            result[key]['clients_1']['latency_ms_p50'] / floor['clients_1']['latency_ms_p50'])
        assert result[key]['throughput_8_clients_over_floor'] > 0
    # Each stream rate for 1 s: every target sent, the last one answered, the node's counts read.
    for stream in result['stream']:
        assert stream['sent'] == int(stream['rate_hz']) and stream['last_answered'], stream
        assert stream['received_here'] > 0 and 'answered' in stream['node_counts'], stream
