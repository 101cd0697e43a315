"""The robot's URDF from robot_description: the parameter, or the transient-local topic
that robot_state_publisher latches. Answers are checked with that URDF's kinematics; a
robot whose joints or limits do not fit the model is refused at start-up (one line)."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PLANAR3_URDF = REPO / 'loink_ros' / 'robots' / 'planar3.urdf'
# A calibrated robot: the forearm 2 mm longer than the model's URDF says.
CALIBRATED = PLANAR3_URDF.read_text().replace('<origin xyz="0 0 0.3" rpy="0 0 0"/>',
                                              '<origin xyz="0 0 0.302" rpy="0 0 0"/>')


def params_file(tmp_path: Path, **values) -> Path:
    path = tmp_path / 'params.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': {
        'model': 'planar3', 'refine': True, 'task_tolerance': 1e-6, **values}}}))
    return path


def served(tag: str, config: Path):
    from loink_msgs.srv import GetModelInfo
    from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment, wait_for_services
    from loink_ros.tools.ros_calls import RosCalls
    isolate_ros_environment()
    process = NodeProcess(f'/{tag}_{os.getpid()}', params_file=config)
    calls = RosCalls(f'{tag}_client_{os.getpid()}')
    wait_for_services([calls.node.create_client(GetModelInfo, f'{process.prefix}/get_model_info')],
                      process)
    return process, calls


def solved_with_calibrated_kinematics(process, calls, tmp_path: Path) -> None:
    """A refined answer meets the target on the calibrated robot, not on the model's URDF."""
    from loink_msgs.srv import Solve
    from loink_ros.core.problems.arms.planar3 import Planar3Problem
    response = calls.request(Solve, f'{process.prefix}/solve', Solve.Request(task=[0.3], refine=True))
    assert response.success, response.message
    q = np.array(response.solution.joint_state.position)
    calibrated_file = tmp_path / 'calibrated.urdf'
    calibrated_file.write_text(CALIBRATED)
    calibrated = Planar3Problem(calibrated_file)
    assert abs(calibrated.task(q)[0, 0] - 0.3) < 1e-9
    assert abs(Planar3Problem().task(q)[0, 0] - 0.3) > 1e-4
    assert response.solution.task_error < 1e-9


def stop_cleanly(process, calls) -> None:
    calls.close()
    code, output = process.stop()
    assert code == 0 and 'Traceback' not in output, output


def test_description_parameter(tmp_path):
    process, calls = served('description_param', params_file(tmp_path,
                                                            robot_description=CALIBRATED))
    try:
        solved_with_calibrated_kinematics(process, calls, tmp_path)
    finally:
        stop_cleanly(process, calls)


def test_description_topic_latched_before_the_node_starts(tmp_path):
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    from loink_ros.tools.node_process import isolate_ros_environment
    from loink_ros.tools.ros_calls import RosCalls
    isolate_ros_environment()
    tag = 'description_topic'
    publisher_side = RosCalls(f'{tag}_robot_state_publisher_{os.getpid()}')
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    # In the node's namespace, where its relative robot_description_topic resolves.
    publisher = publisher_side.node.create_publisher(
        String, f'/{tag}_{os.getpid()}/robot_description', latched)
    publisher.publish(String(data=CALIBRATED))
    try:
        config = params_file(tmp_path, robot_description_topic='robot_description',
                             robot_description_timeout=20.0)
        process, calls = served(tag, config)
        try:
            solved_with_calibrated_kinematics(process, calls, tmp_path)
        finally:
            stop_cleanly(process, calls)
    finally:
        publisher_side.close()


def start_failure(config: Path) -> str:
    from loink_ros.tools.node_process import isolate_ros_environment, node_command
    isolate_ros_environment()
    result = subprocess.run(node_command() + ['--ros-args', '--params-file', str(config)],
                            capture_output=True, text=True, timeout=60, env=os.environ.copy())
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0].startswith('loink_node: ')
    return lines[0]


def test_mismatching_limits_are_listed(tmp_path):
    narrowed = PLANAR3_URDF.read_text().replace('lower="-1.2" upper="1.2"',
                                                'lower="-1.0" upper="1.2"')
    narrowed = narrowed.replace('<joint name="wrist"', '<joint name="hand_roll"')
    line = start_failure(params_file(tmp_path, robot_description=narrowed))
    assert 'elbow' in line and '-1' in line and 'wrist' in line and 'shoulder' not in line


def test_no_description_on_the_topic_times_out(tmp_path):
    line = start_failure(params_file(tmp_path, robot_description_topic='/nobody_publishes_this',
                                     robot_description_timeout=1.0))
    assert '/nobody_publishes_this' in line


def test_description_and_urdf_together_are_refused(tmp_path):
    line = start_failure(params_file(tmp_path, robot_description=CALIBRATED,
                                     urdf=str(PLANAR3_URDF)))
    assert 'urdf' in line and 'robot_description' in line


@pytest.mark.parametrize('xml', ['<robot name="broken"><link name="a"/>', 'not xml at all'])
def test_unreadable_description(tmp_path, xml):
    assert 'robot_description' in start_failure(params_file(tmp_path, robot_description=xml))
