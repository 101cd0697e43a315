"""The build/run environment: ROS 2 wheels, the built interfaces, a real DDS round trip,
and the declared dependencies (package.xml for ROS installs, the requirements files).

Run after `make setup` and `source ./env.sh` (the Makefile's `test` target does both).
"""
import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
SHARED_INTERFACES = REPO.parent / 'shared' / 'interfaces'
# What a ROS user pip-installs beside rosdep's packages, and what only machines without ROS do.
ROS_USER_REQUIREMENTS = ('requirements.txt', 'requirements-train.txt', 'requirements-test.txt')
NO_ROS_REQUIREMENTS = 'requirements-no-ros.txt'
# PyPI distribution -> rosdep key, for the dependencies that rosdep provides on a ROS install.
ROSDEP_KEYS = {'numpy': 'python3-numpy', 'scipy': 'python3-scipy', 'pin': 'pinocchio',
               'matplotlib': 'python3-matplotlib', 'tqdm': 'python3-tqdm',
               'pyyaml': 'python3-yaml'}
# Import names that are no distribution's top-level module (cmeel wheels).
DISTRIBUTION_OF = {'pinocchio': 'pin', 'ruckig': 'ruckig'}   # modules no wheel metadata maps
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
        'NO_SOLUTION': 9, 'REQUEST_TOO_LARGE': 10, 'INVALID_POSE': 11, 'INVALID_LINK': 12,
        'INVALID_FRAME': 13, 'POSE_NOT_SERVED': 14, 'POSE_UNREACHABLE': 15,
        'INTERNAL_ERROR': 99,
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


# Set-up builds moveit_msgs from ../shared/interfaces; elsewhere a ROS install may have it.
@pytest.mark.needs_setup(importlib.util.find_spec('moveit_msgs') is not None,
                         'moveit_msgs is not importable: scripts/setup.sh builds it from '
                         f'{SHARED_INTERFACES} (source ./env.sh)')
def test_moveit_get_position_ik_builds_wire_compatible():
    from ament_index_python.packages import get_package_share_directory
    from moveit_msgs.srv import GetPositionIK

    assert hasattr(GetPositionIK.Request(), 'ik_request')
    desc = Path(get_package_share_directory('moveit_msgs'), 'srv', 'GetPositionIK.json')
    hashes = json.loads(desc.read_text())['type_hashes']
    assert hashes[0]['hash_string'] == GET_POSITION_IK_HASH


def requirements(name: str) -> dict:
    """Canonical name -> Requirement of a requirements file, following its -r includes."""
    found = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.split('#')[0].strip()
        if line.startswith('-r '):
            found.update(requirements(line[3:].strip()))
        elif line:
            req = Requirement(line)
            found[canonicalize_name(req.name)] = req
    return found


def package_xml_depends(kind: str) -> set:
    return set(re.findall(rf'<{kind}>([^<]+)</{kind}>', (REPO / 'package.xml').read_text()))


def imported_modules() -> set:
    """Top-level third-party modules that loink_ros and its launch files import."""
    sources = [*(REPO / 'loink_ros').rglob('*.py'), *(REPO / 'launch').glob('*.py')]
    modules = set()
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split('.')[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split('.')[0])
    return modules - set(sys.stdlib_module_names) - {'loink_ros'}


def test_ros_user_requirements_hold_no_ros_wheels():
    for name in ROS_USER_REQUIREMENTS:
        ros = [n for n in requirements(name) if n.startswith(('ros-', 'colcon'))]
        assert not ros, f'{name} would install ROS wheels beside a ROS install: {ros}'
    wheels = [n for n in requirements(NO_ROS_REQUIREMENTS) if n.startswith('ros-')]
    assert 'ros-rclpy' in wheels and 'ros-diagnostic-msgs' in wheels


def test_no_ros_requirements_pin_exact_versions():
    for name, req in requirements(NO_ROS_REQUIREMENTS).items():
        assert [s.operator for s in req.specifier] == ['=='], f'{name} is not pinned'


def test_rosdep_provided_packages_keep_the_system_version():
    # An exact pin would make pip install a second numpy beside the distribution's.
    for name in ROS_USER_REQUIREMENTS:
        for dist, req in requirements(name).items():
            if dist in ROSDEP_KEYS:
                assert '==' not in {s.operator for s in req.specifier}, f'{name}: {dist}'


def test_every_import_is_declared():
    """A ROS package is an exec_depend; any other import has a rosdep key or a pip line."""
    from ament_index_python import has_resource

    exec_depends = package_xml_depends('exec_depend')
    ros_user_pip = set().union(*(requirements(n) for n in ROS_USER_REQUIREMENTS))
    no_ros_pip = ros_user_pip | set(requirements(NO_ROS_REQUIREMENTS))
    distributions = packages_distributions()
    for module in sorted(imported_modules()):
        dist = DISTRIBUTION_OF.get(module) or next(iter(distributions.get(module, [])), None)
        if dist is None or (has_resource('packages', module) and dist.lower() not in ros_user_pip):
            # A ROS package (only those may be missing here: launch without ros2tools). A pip
            # package that a ROS build beside it also names (ruckig, in ros2_control's
            # environment) stays a pip line.
            assert module in exec_depends, f'{module}: no exec_depend in package.xml'
            continue
        dist = canonicalize_name(dist)
        if dist in ROSDEP_KEYS:
            assert ROSDEP_KEYS[dist] in exec_depends, f'{module}: exec_depend {ROSDEP_KEYS[dist]}'
        else:
            assert dist in ros_user_pip, f'{module}: {dist} in none of {ROS_USER_REQUIREMENTS}'
        assert dist in no_ros_pip, f'{module}: {dist} not installed by scripts/setup.sh'


def test_package_xml_names_the_supported_distributions():
    text = (REPO / 'package.xml').read_text()
    assert 'Jazzy' in text and 'Kilted' in text
