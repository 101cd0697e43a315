"""The build/run environment: ROS 2 wheels, the built interfaces, a real DDS round trip.

Run after `make setup` and `source ./env.sh` (the Makefile's `test` target does both).
"""
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_INTERFACES = REPO.parent / 'shared' / 'interfaces'
# Type hash of upstream moveit_msgs/srv/GetPositionIK (../shared/interfaces/README.md).
GET_POSITION_IK_HASH = (
    'RIHS01_054ed6f6f71a09b01b5246c5d80beb4dacc6f444f58df039849c76292933e9e3')


def test_ros_and_loink_interfaces_import():
    import rclpy  # noqa: F401
    import loink_msgs.msg
    import loink_msgs.srv

    codes = {
        'SUCCESS': 0, 'INVALID_TASK_DIMENSION': 1, 'NON_FINITE_INPUT': 2,
        'EMPTY_REQUEST': 3, 'TASK_OUT_OF_BOUNDS': 4, 'INVALID_COUNT': 5,
        'INVALID_SPREAD': 6, 'INVALID_LATENT': 7, 'INVALID_SEED_STATE': 8,
        'NO_SOLUTION': 9, 'REQUEST_TOO_LARGE': 10, 'INTERNAL_ERROR': 99,
    }
    for name, value in codes.items():
        assert getattr(loink_msgs.msg.ErrorCode, name) == value, name
    for srv in ('Solve', 'Sample', 'GetModelInfo'):
        assert hasattr(loink_msgs.srv, srv)
    sol = loink_msgs.msg.IKSolution()
    assert sol.joint_state.name == [] and list(sol.latent) == []


# Client run in a separate process: the reply must cross DDS, not an in-process shortcut.
CLIENT = textwrap.dedent('''
    import sys
    import rclpy
    from loink_msgs.srv import GetModelInfo
    rclpy.init()
    node = rclpy.create_node('loink_env_test_client')
    client = node.create_client(GetModelInfo, sys.argv[1])
    if not client.wait_for_service(timeout_sec=10.0):
        sys.exit('service not found')
    future = client.call_async(GetModelInfo.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
    if not future.done():
        sys.exit('no reply')
    r = future.result()
    print(r.model_name, r.task_dim, ','.join(r.joint_names))
    node.destroy_node()
    rclpy.shutdown()
''')


def test_service_round_trip_across_processes():
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from loink_msgs.srv import GetModelInfo

    # Own context, so other tests' rclpy.init()/shutdown() do not interfere.
    context = rclpy.context.Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    calls = []

    def handle(request, response):
        calls.append(request)
        response.model_name = 'env-test-model'
        response.task_dim = 7
        response.joint_names = ['j1', 'j2']
        return response

    try:
        node = rclpy.create_node('loink_env_test_server', context=context)
        service_name = f'/loink_env_test_{os.getpid()}/get_model_info'
        node.create_service(GetModelInfo, service_name, handle)
        executor.add_node(node)
        spinner.start()

        # Same environment (ROS_DOMAIN_ID, RMW, paths) as this process.
        result = subprocess.run(
            [sys.executable, '-c', CLIENT, service_name],
            capture_output=True, text=True, timeout=40, env=os.environ.copy())
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ['env-test-model', '7', 'j1,j2']
        assert len(calls) == 1
    finally:
        executor.shutdown(timeout_sec=2.0)
        rclpy.shutdown(context=context)
        if spinner.is_alive():
            spinner.join(timeout=5.0)


@pytest.mark.skipif(not SHARED_INTERFACES.is_dir(),
                    reason='../shared/interfaces absent: moveit_msgs not built')
def test_moveit_get_position_ik_builds_wire_compatible():
    from ament_index_python.packages import get_package_share_directory
    from moveit_msgs.srv import GetPositionIK

    assert hasattr(GetPositionIK.Request(), 'ik_request')
    desc = Path(get_package_share_directory('moveit_msgs'), 'srv', 'GetPositionIK.json')
    hashes = json.loads(desc.read_text())['type_hashes']
    assert hashes[0]['hash_string'] == GET_POSITION_IK_HASH
