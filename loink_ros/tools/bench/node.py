"""`loink bench node`: service round trips and the target stream of a loink_node, over DDS.

Latency p50/p99 of solve and GetPositionIK with one client, throughput with 1 and 8
concurrent clients, and counts of answers: ok, no_solution (the model missed the target by
more than task_tolerance: an answer, not a node fault), timed_out (GetPositionIK found no
answer within task_tolerance and, as the plugin asks avoid_collisions, free of
self-collision, by its deadline: an answer too), failed (any other error code) and lost
(no answer within REPLY_TIMEOUT). The stream: targets published at 20 and 100 Hz,
how many were answered, whether the last one was, the node's own skipped count (from
/diagnostics) and the answer latency. `load` busy-loop processes can run meanwhile, to
measure a machine that is busy with other work. The floor: the same workloads (same
requests, same clients) against an empty rclpy service of the same types on the same kind
of executor (loink_ros.tools.bench.empty_service), started in the same run, and the node's p50
and throughput over the floor's. All clients share one
executor thread: separate executors spinning in several threads of one process were seen
to miss responses (rclpy 9.1 + Fast DDS), which a bench must not count against the node.
"""

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.srv import GetParameters
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState

from loink_msgs.msg import ErrorCode, TaskTarget
from loink_msgs.srv import GetModelInfo, Solve
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.model_file import load_model
from loink_ros.tools.bench.empty_service import empty_service_process
from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment, wait_for_services
from loink_ros.tools.ros_calls import RosCalls

# Answers slower than this count as lost.
REPLY_TIMEOUT = 5.0
# Unmeasured calls first: discovery, caches, first-use allocations.
WARMUP = 300
# Stream rates (Hz) and seconds per rate; how long to wait for the last answers.
STREAM_RATES = (20.0, 100.0)
# `--stream-pose`: PoseStamped targets along a smooth trajectory at this rate.
POSE_STREAM_HZ = 500.0
STREAM_SECONDS = 5.0
STREAM_TAIL = 3.0


@dataclass
class Workload:
    """Requests of one service and the check of their answers."""

    key: str
    what: str
    service_type: type
    name: str
    requests: list
    outcome: Callable[[object], str]   # 'ok', 'no_solution', 'timed_out' or 'failed'


def resolve(name: str, namespace: str, node_name: str = 'loink_node') -> str:
    """A node-relative name ('~/x', 'x', '/x') as the node resolves it."""
    if name.startswith('/'):
        return name
    if name.startswith('~'):
        return f'{namespace.rstrip("/")}/{node_name}{name[1:]}'
    return f'{namespace.rstrip("/")}/{name}'


def solve_workload(prefix: str, tasks: np.ndarray) -> Workload:
    """Optimal solves of the given tasks."""
    requests = [Solve.Request(task=task.tolist()) for task in tasks]
    outcomes = {ErrorCode.SUCCESS: 'ok', ErrorCode.NO_SOLUTION: 'no_solution'}
    return Workload('solve', 'Solve of the optimum (latent empty; the node refine parameter applies)', Solve,
                    f'{prefix}/solve', requests, lambda r: outcomes.get(r.error_code, 'failed'))


def moveit_workload(name: str, info: GetModelInfo.Response, group: str,
                    tasks: np.ndarray, orientations: np.ndarray | None) -> Workload:
    """GetPositionIK requests shaped like srv_kinematics_plugin's, one extra joint each; the
    tip's orientation (x, y, z, w) of the configuration that reached each task when known
    (full-pose models need it; position-only ones ignore it), else the identity."""
    from moveit_msgs.msg import MoveItErrorCodes
    from moveit_msgs.srv import GetPositionIK
    middle = 0.5 * (np.asarray(info.joint_lower) + np.asarray(info.joint_upper))
    names = list(info.joint_names) + ['bench_extra_joint']
    requests = []
    for task in tasks:
        request = GetPositionIK.Request()
        ik = request.ik_request
        ik.group_name, ik.ik_link_name, ik.avoid_collisions = group, info.tip_frame, True
        ik.robot_state.joint_state.name = names
        ik.robot_state.joint_state.position = middle.tolist() + [0.0]
        ik.pose_stamped.header.frame_id = info.base_frame
        for axis_name, value in zip(info.task_names, task):
            setattr(ik.pose_stamped.pose.position, axis_name[-1], float(value))
        if orientations is not None:
            o = ik.pose_stamped.pose.orientation
            o.x, o.y, o.z, o.w = map(float, orientations[len(requests)])
        requests.append(request)
    outcomes = {MoveItErrorCodes.SUCCESS: 'ok', MoveItErrorCodes.NO_IK_SOLUTION: 'no_solution',
                MoveItErrorCodes.TIMED_OUT: 'timed_out'}
    return Workload('get_position_ik', "GetPositionIK as srv_kinematics_plugin sends it (the "
                    "node's refine parameter applies)", GetPositionIK, name, requests,
                    lambda r: outcomes.get(r.error_code.val, 'failed'))


def measure(calls: RosCalls, work: Workload, clients: int) -> dict:
    """Send every request once, spread over `clients` threads; latencies and counts."""
    handles = [calls.node.create_client(work.service_type, work.name) for _ in range(clients)]
    if not all(handle.wait_for_service(timeout_sec=REPLY_TIMEOUT) for handle in handles):
        raise RuntimeError(f'{work.name} is not served')
    shares = [work.requests[i::clients] for i in range(clients)]

    def run(i: int) -> tuple[list[float], Counter]:
        latencies, outcomes = [], Counter()
        for request in shares[i]:
            began = time.perf_counter()
            try:
                response = calls.call(handles[i], request, REPLY_TIMEOUT)
            except TimeoutError:
                outcomes['lost'] += 1
                continue
            latencies.append(time.perf_counter() - began)
            outcomes[work.outcome(response)] += 1
        return latencies, outcomes

    for handle in handles:
        calls.first_call(handle, work.requests[0], REPLY_TIMEOUT)
        for request in work.requests[1:WARMUP // clients + 1]:
            calls.call(handle, request, REPLY_TIMEOUT)
    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(run, range(clients)))
    wall = time.perf_counter() - began
    latencies = 1e3 * np.concatenate([np.asarray(r[0]) for r in results])
    outcomes = sum((r[1] for r in results), Counter())
    return {'clients': clients, 'requests': len(work.requests),
            'throughput_per_s': len(work.requests) / wall,
            'latency_ms_p50': float(np.percentile(latencies, 50)),
            'latency_ms_p99': float(np.percentile(latencies, 99)),
            **{key: outcomes[key] for key in ('ok', 'no_solution', 'timed_out', 'failed', 'lost')}}


def floor_workload(work: Workload, prefix: str) -> Workload:
    """`work` against the empty server at `prefix`: every answer counts as ok."""
    return replace(work, name=f'{prefix}/{work.key}', outcome=lambda _response: 'ok')


def measure_floor(calls: RosCalls, namespace: str, workloads: list[Workload],
                  executor: str, executor_threads: int) -> dict[str, dict]:
    """Figures of each workload (1 and 8 clients) against a fresh empty server."""
    server = empty_service_process(namespace, executor, executor_threads)
    try:
        floors = [floor_workload(work, server.prefix) for work in workloads]
        probes = [calls.node.create_client(work.service_type, work.name) for work in floors]
        if not all(probe.wait_for_service(timeout_sec=30.0) for probe in probes):
            raise RuntimeError('the empty server did not come up')
        return {work.key: {f'clients_{n}': measure(calls, work, n) for n in (1, 8)}
                for work in floors}
    finally:
        code, output = server.stop()
        if code != 0:
            raise RuntimeError(f'the empty server exited with {code}: {output.strip()}')


def over_floor(figures: dict, floor: dict) -> dict[str, float]:
    """The node's one-client p50 and 8-client throughput over the floor's."""
    return {'p50_over_floor': figures['clients_1']['latency_ms_p50']
            / floor['clients_1']['latency_ms_p50'],
            'throughput_8_clients_over_floor': figures['clients_8']['throughput_per_s']
            / floor['clients_8']['throughput_per_s']}


def node_parameters(calls: RosCalls, prefix: str, names: list[str]) -> list:
    """ParameterValue messages of the node's parameters, through its parameter service."""
    return list(calls.request(GetParameters, f'{prefix}/get_parameters',
                              GetParameters.Request(names=names), REPLY_TIMEOUT).values)


def reachable_tasks(info: GetModelInfo.Response, count: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Targets inside the training bounds that the robot reaches, and the tip orientations
    (x, y, z, w) there: the forward kinematics of random in-limit configurations when the
    model loads here, else uniform in the bounds (orientations None)."""
    lower, upper = np.asarray(info.task_lower), np.asarray(info.task_upper)
    rng = np.random.default_rng(seed)
    try:
        robot = problem_for_model(load_model(info.model_name))
    except (ModelFileError, KeyError):
        return rng.uniform(lower, upper, (count, len(lower))), None
    configurations = np.empty((0, len(info.joint_names)))
    while len(configurations) < count:
        q = rng.uniform(info.joint_lower, info.joint_upper, (count, len(info.joint_names)))
        reached = robot.task(q)
        configurations = np.vstack([configurations,
                                    q[np.all((reached > lower) & (reached < upper), 1)]])
    configurations = configurations[:count]
    orientations = (np.array([matrix_quaternion(robot.tip_pose(q)[1]) for q in configurations])
                    if isinstance(robot, KinematicProblem) else None)
    return robot.task(configurations), orientations


def moveit_service(calls: RosCalls, prefix: str, namespace: str) -> tuple[str, str] | None:
    """(name, group) of the node's GetPositionIK service, or None when it serves none."""
    try:
        from moveit_msgs.srv import GetPositionIK
    except ImportError:
        return None
    group, service = (value.string_value for value in
                      node_parameters(calls, prefix, ['group_name', 'moveit_service']))
    name = resolve(service, namespace)
    probe = calls.node.create_client(GetPositionIK, name)
    served = probe.wait_for_service(timeout_sec=2.0)
    return (name, group) if served else None


@contextmanager
def cpu_load(processes: int):
    """`processes` busy-loop Python processes for the duration of the block."""
    busy = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
            for _ in range(processes)]
    try:
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()


def wait_until(done: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `done` every 10 ms; TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.01)


def stream_counts(reports: list, node: str, after: float,
                  prefix: str = 'stream ') -> dict[str, int]:
    """The node's counts under `prefix` ('stream ', 'pose stream ') from its first
    /diagnostics report received after `after`."""
    def ours() -> list:
        return [status for t, array in reports if t > after for status in array.status
                if status.name == node]
    wait_until(lambda: bool(ours()), STREAM_TAIL, f'no /diagnostics report of {node}')
    return {value.key.removeprefix(prefix): int(value.value) for value in ours()[0].values
            if value.key.startswith(prefix) and value.value.isdigit()}


def timed_stream(calls: RosCalls, prefix: str, counts_prefix: str, publisher, answers,
                 arrivals: list, messages: list, rate: float) -> dict:
    """Publish `messages` (stamp nanosec = their index) at `rate` while `answers` (whose
    callback appends (time, nanosec, ...) to `arrivals`) listens; answered, skipped (the
    node's counts under `counts_prefix`) and latency.

    Entities are left to the client node's end: destroying one while its executor spins
    can kill the executor thread (rclpy 9.1 InvalidHandle)."""
    reports: list[tuple[float, DiagnosticArray]] = []
    calls.node.create_subscription(
        DiagnosticArray, '/diagnostics', lambda m: reports.append((time.perf_counter(), m)), 10)
    wait_until(lambda: publisher.get_subscription_count() > 0
               and answers.get_publisher_count() > 0, 10.0, 'the stream did not connect')
    before = stream_counts(reports, prefix, time.perf_counter(), counts_prefix)
    count, sent_at, began = len(messages), [], time.perf_counter()
    for k, msg in enumerate(messages):
        time.sleep(max(0.0, began + k / rate - time.perf_counter()))
        msg.header.stamp.sec, msg.header.stamp.nanosec = 1, k
        sent_at.append(time.perf_counter())
        publisher.publish(msg)
    ended = time.perf_counter()

    def with_last() -> bool:
        return bool(arrivals) and arrivals[-1][1] == count - 1
    try:
        wait_until(with_last, STREAM_TAIL, 'last target unanswered')
    except TimeoutError:
        pass   # reported as last_answered: False
    after = stream_counts(reports, prefix, time.perf_counter(), counts_prefix)
    latencies = 1e3 * np.array([a[0] - sent_at[a[1]] for a in arrivals])
    return {'rate_hz': rate, 'sent': count, 'received_here': len(arrivals),
            'last_answered': with_last(), 'send_seconds': ended - began,
            'node_counts': {key: after[key] - before[key] for key in after},
            'latency_ms_p50': float(np.percentile(latencies, 50)) if len(latencies) else None,
            'latency_ms_p99': float(np.percentile(latencies, 99)) if len(latencies) else None}


def stream_figures(calls: RosCalls, prefix: str, tasks: np.ndarray, rate: float,
                   seconds: float = STREAM_SECONDS) -> dict:
    """TaskTarget targets at `rate` for `seconds` (timed_stream)."""
    count = int(rate * seconds)
    arrivals: list[tuple[float, int]] = []
    publisher = calls.node.create_publisher(TaskTarget, f'{prefix}/target', 10)
    answers = calls.node.create_subscription(  # deep: this side must not lose answers
        JointState, f'{prefix}/joint_solution',
        lambda m: arrivals.append((time.perf_counter(), m.header.stamp.nanosec)),
        QoSProfile(depth=count + 10))
    messages = [TaskTarget(task=tasks[k % len(tasks)].tolist()) for k in range(count)]
    return timed_stream(calls, prefix, 'stream ', publisher, answers, arrivals, messages, rate)


def pose_stream_figures(calls: RosCalls, prefix: str, problem: KinematicProblem,
                        rate: float, seed: int) -> dict:
    """PoseStamped targets at `rate` along one smooth bench trajectory (stream_paths) for
    STREAM_SECONDS (timed_stream), and the share of the answers on target."""
    from geometry_msgs.msg import PoseStamped

    from loink_msgs.msg import PoseTracking
    from loink_ros.tools.bench.stream_paths import paths
    path = paths(problem, 'smooth', 1, STREAM_SECONDS, rate, seed)[0]
    arrivals: list[tuple[float, int, bool]] = []
    publisher = calls.node.create_publisher(PoseStamped, f'{prefix}/target_pose', 10)
    answers = calls.node.create_subscription(
        PoseTracking, f'{prefix}/pose_tracking',
        lambda m: arrivals.append((time.perf_counter(), m.header.stamp.nanosec, m.on_target)),
        QoSProfile(depth=len(path.times) + 10))
    messages = []
    for position, rotation in zip(path.positions, path.rotations):
        msg = PoseStamped()
        msg.header.frame_id = problem.base_frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = position
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = matrix_quaternion(rotation)
        messages.append(msg)
    out = timed_stream(calls, prefix, 'pose stream ', publisher, answers, arrivals, messages,
                       rate)
    out['answered_share'] = out['node_counts']['answered'] / out['sent']
    out['on_target_share_of_answers'] = (float(np.mean([a[2] for a in arrivals]))
                                         if arrivals else None)
    return out


def bench_pose_stream(calls: RosCalls, namespace: str, seed: int) -> dict:
    """The pose stream of a node that is up at <namespace>/loink_node, at POSE_STREAM_HZ."""
    prefix = resolve('~', namespace)
    info = calls.request(GetModelInfo, f'{prefix}/get_model_info', GetModelInfo.Request(), 30.0)
    problem = problem_for_model(load_model(info.model_name))
    return {'model': info.model_name, 'model_version': info.model_version,
            'load_average_1min_before': os.getloadavg()[0],
            'pose_stream': pose_stream_figures(calls, prefix, problem, POSE_STREAM_HZ, seed)}


def bench(calls: RosCalls, namespace: str, count: int, seed: int,
          stream_seconds: float = STREAM_SECONDS) -> dict:
    """Measure a node that is up at <namespace>/loink_node (each stream rate for
    `stream_seconds`)."""
    prefix = resolve('~', namespace)
    info = calls.request(GetModelInfo, f'{prefix}/get_model_info', GetModelInfo.Request(), 30.0)
    tasks, orientations = reachable_tasks(info, count, seed)
    result = {'model': info.model_name, 'model_version': info.model_version,
              'load_average_1min_before': os.getloadavg()[0],
              'get_position_ik': 'not served (no moveit_msgs, or the node has it off)'}
    workloads = [solve_workload(prefix, tasks)]
    moveit = moveit_service(calls, prefix, namespace)
    if moveit is not None:
        name, group = moveit
        workloads.append(moveit_workload(name, info, group, tasks, orientations))
    for work in workloads:
        result[work.key] = {'request': work.what,
                            **{f'clients_{n}': measure(calls, work, n) for n in (1, 8)}}
    kind, threads = node_parameters(calls, prefix, ['executor', 'executor_threads'])
    kind, threads = kind.string_value, threads.integer_value
    result['executor'] = {'kind': kind, 'threads': threads}
    floors = measure_floor(calls, namespace, workloads, kind, threads)
    for key, floor in floors.items():
        result[key].update({'floor': {'server': f'empty rclpy service, same types, {kind} '
                                      f'executor ({threads} threads if multi_threaded)', **floor},
                            **over_floor(result[key], floor)})
    result['stream'] = [stream_figures(calls, prefix, tasks, rate, stream_seconds)
                        for rate in STREAM_RATES]
    return result


def run(model: str, namespace: str | None, count: int = 2000, seed: int = 12345,
        load: int = 0, executor: str | None = None, stream_pose: bool = False) -> dict:
    """Bench the node at `namespace`, or start one (with refine on, and `executor` unless
    None) and bench that, while `load` busy-loop processes run."""
    started = None
    if namespace is None:
        environment = isolate_ros_environment()
        parameters = {'model': model, 'refine': 'true',
                      **({} if executor is None else {'executor': executor})}
        started = NodeProcess(f'/loink_bench_{os.getpid()}', parameters)
        namespace = started.namespace
    calls = RosCalls(f'loink_bench_{os.getpid()}')
    try:
        if started is not None:
            probe = calls.node.create_client(GetModelInfo, f'{started.prefix}/get_model_info')
            wait_for_services([probe], started)
        with cpu_load(load):
            result = (bench_pose_stream(calls, namespace, seed) if stream_pose
                      else bench(calls, namespace, count, seed))
        result['namespace'], result['busy_processes'] = namespace, load
        if started is not None:
            result['node'] = {'started_by_bench': True, 'parameters': parameters,
                              **environment}
        return result
    finally:
        calls.close()
        if started is not None:
            started.stop()
