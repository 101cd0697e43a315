"""The floor of `loink bench node`: the bench's workloads against the empty rclpy server
(a real process over DDS) are all answered, with positive latencies, and the server stops
with exit status 0."""
import os

import numpy as np
import pytest

REQUESTS = 50


@pytest.fixture(scope='module')
def floor():
    from loink_ros.tools.bench.empty_service import empty_service_process
    from loink_ros.tools.node_process import isolate_ros_environment
    from loink_ros.tools.ros_calls import RosCalls
    isolate_ros_environment()
    server = empty_service_process(f'/floor_test_{os.getpid()}')
    calls = RosCalls(f'floor_test_client_{os.getpid()}')
    yield server, calls
    calls.close()
    server.stop()


def workloads(prefix: str) -> list:
    """The bench's solve workload and, where moveit_msgs imports, a GetPositionIK one."""
    from loink_ros.tools.bench.node import Workload, floor_workload, solve_workload
    tasks = np.random.default_rng(0).uniform(-1.0, 1.0, (REQUESTS, 2))
    found = [floor_workload(solve_workload('/unused', tasks), prefix)]
    try:
        from moveit_msgs.srv import GetPositionIK
    except ImportError:
        return found
    moveit = Workload('get_position_ik', 'empty GetPositionIK', GetPositionIK, '/unused',
                      [GetPositionIK.Request() for _ in range(REQUESTS)], lambda _r: 'failed')
    return found + [floor_workload(moveit, prefix)]


@pytest.mark.parametrize('clients', [1, 2])
def test_floor_answers_every_request(floor, clients):
    from loink_ros.tools.bench.node import measure
    server, calls = floor
    for work in workloads(server.prefix):
        figures = measure(calls, work, clients)
        assert figures['requests'] == REQUESTS, figures
        assert figures['ok'] == REQUESTS and figures['lost'] == 0, figures
        assert figures['latency_ms_p50'] > 0 and figures['throughput_per_s'] > 0, figures


def test_floor_server_stops_cleanly():
    from loink_msgs.srv import Solve
    from loink_ros.tools.bench.empty_service import empty_service_process
    from loink_ros.tools.node_process import isolate_ros_environment
    from loink_ros.tools.ros_calls import RosCalls
    isolate_ros_environment()
    server = empty_service_process(f'/floor_stop_{os.getpid()}')
    calls = RosCalls(f'floor_stop_client_{os.getpid()}')
    try:
        client = calls.node.create_client(Solve, f'{server.prefix}/solve')
        assert client.wait_for_service(timeout_sec=30.0)
        assert calls.first_call(client, Solve.Request(task=[0.1, 0.2]), 10.0) is not None
    finally:
        calls.close()
        code, output = server.stop()
    assert code == 0, output
    assert 'Traceback' not in output, output
