"""Start-up of loink_node as a real process: one line on stderr and exit 1 for every
failure (from another working directory too), and printed usage lines that work."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

PLANAR3_JSON = REPO / 'models' / 'planar3.json'


def start(args: list[str], cwd=None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    from loink_ros.tools.node_process import isolate_ros_environment, node_command
    isolate_ros_environment()
    return subprocess.run(node_command() + args, capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy(), cwd=cwd)


def assert_one_line(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 1 and exactly one stderr line `loink_node: ...` holding the fragments."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, result.stderr
    assert len(lines) == 1 and lines[0].startswith('loink_node: '), result.stderr
    assert 'Traceback' not in result.stdout + result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def corrupt_copy(folder: Path, change, name: str) -> str:
    """A copy of the shipped planar3 model (its ONNX beside it) with one change."""
    meta = json.loads(PLANAR3_JSON.read_text())
    change(meta)
    (folder / meta['onnx']).write_bytes((PLANAR3_JSON.parent / meta['onnx']).read_bytes())
    path = folder / f'{name}.json'
    path.write_text(json.dumps(meta))
    return str(path)


def nan_mean(meta):
    meta['normalization']['y_mean'][0] = float('nan')


def overflowing(meta):
    meta['network']['layers'][0]['b'] = [1e308] * len(meta['network']['layers'][0]['b'])


# Every topic and service name parameter, with a value that is no valid name of its kind.
BAD_NAMES = {'target_topic': 'tar;get', 'solution_topic': '1solution',
             'joint_states_topic': '/joint_states/{nowhere}', 'moveit_service': 'compute ik',
             'robot_description_topic': '/robot_description/',
             'pose_target_topic': 'target pose', 'pose_tracking_topic': '2tracking'}
BAD_ROS_ARGUMENTS = {'bogus': ['--ros-args', '--bogus'], 'dangling -p': ['--ros-args', '-p'],
                     'bad namespace': ['--ros-args', '-r', '__ns:=not a name']}
UNUSABLE_LIMITS = {'/nonexistent/limits.yaml': 'No such file or directory',
                   'package://no_such_package/limits.yaml': "package 'no_such_package' is not installed"}
# Start-ups this many at a time: each is mostly a process's imports.
AT_ONCE = 3


@pytest.fixture(scope='module')
def failed(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Every failing start-up of this file, run side by side from a folder of its own: its
    result by case name."""
    from concurrent.futures import ThreadPoolExecutor
    folder = tmp_path_factory.mktemp('startup')
    urdf = folder / 'broken.urdf'
    urdf.write_text('<robot name="r"><link name="a"/><joint name="j" type="revolute">'
                    '<parent link="a"/><child link="missing"/></joint></robot>')
    cases = {
        'relative params file': ['--ros-args', '--params-file', 'config/planar3.yaml'],
        'missing params file': ['--ros-args', '--params-file', str(folder / 'none.yaml')],
        'failing validation': ['--ros-args', '-p', f'model:={corrupt_copy(folder, nan_mean, "nan")}'],
        'numpy warnings': ['--ros-args', '-p', f'model:={corrupt_copy(folder, overflowing, "inf")}'],
        'bad urdf': ['--ros-args', '-p', 'model:=planar3', '-p', f'urdf:={urdf}'],
        'pose tip link': ['--ros-args', '-p', 'model:=panda_full', '-p', 'pose_tip_link:=panda_link3'],
        'no acceleration limits': ['--ros-args', '-p', 'model:=panda_full', '-p', 'joint_limits_file:=""',
                                   '-p', 'command_output:=forward_position'],
        **BAD_ROS_ARGUMENTS,
        **{name: ['--ros-args', '-p', 'model:=planar3', '-p', f'{name}:={value}']
           for name, value in BAD_NAMES.items()},
        **{value: ['--ros-args', '-p', 'model:=panda_full', '-p', f'joint_limits_file:={value}']
           for value in UNUSABLE_LIMITS}}
    with ThreadPoolExecutor(AT_ONCE) as pool:
        running = {name: pool.submit(start, args, folder) for name, args in cases.items()}
        results = {name: outcome.result() for name, outcome in running.items()}
    results['folder'] = folder
    return results


def test_relative_params_file_from_another_folder(failed):
    line = assert_one_line(failed['relative params file'], 'params file', str(failed['folder']))
    assert '.c:' not in line   # no C source locations


def test_missing_params_file(failed):
    assert_one_line(failed['missing params file'], 'params file')


@pytest.mark.parametrize('case', BAD_ROS_ARGUMENTS)
def test_bad_ros_arguments(case, failed):
    assert_one_line(failed[case])


def test_model_failing_validation(failed):
    assert_one_line(failed['failing validation'], str(failed['folder'] / 'nan.json'))


def test_numpy_warnings_are_folded_into_the_line(failed):
    assert_one_line(failed['numpy warnings'], str(failed['folder'] / 'inf.json'), 'RuntimeWarning')


def test_bad_urdf_is_one_line_with_what_urdfdom_said(failed):
    assert_one_line(failed['bad urdf'], 'planar3', 'does not specify limits')


@pytest.mark.parametrize('name', sorted(BAD_NAMES))
def test_bad_name_parameter_names_itself_and_its_value(name, failed):
    value = BAD_NAMES[name]
    line = assert_one_line(failed[name], f'bad parameter {name}: {value!r} is not a valid ROS')
    assert 'unexpected' not in line and 'RCLError' not in line and '.c' not in line


# ---- the printed usage lines, sent with rclpy, succeed on their model ----

USAGE = re.compile(r'ros2 (service call|topic pub --rate \d+) (\S+) (\S+) "(\{.*\})"')


def usage_requests(output: str) -> list[tuple[str, str, str, dict]]:
    """(kind, name, type, fields) of each printed call line; the fields parsed as YAML."""
    import yaml
    return [(kind, name, type_name, yaml.safe_load(fields))
            for kind, name, type_name, fields in USAGE.findall(output)]


def message(kind, fields: dict):
    """A ROS message of `kind` from the nested dict of a printed YAML example."""
    from rosidl_runtime_py.set_message import set_message_fields
    msg = kind()
    set_message_fields(msg, fields)
    return msg


def test_a_pose_tip_link_not_fixed_to_the_tip_stops_start_up(failed):
    # Checked once the model is loaded (its INFO line comes first): exit 1, one error line.
    line = last_error_line(failed['pose tip link'])
    for fragment in ("bad parameter pose_tip_link: 'panda_link3' is not fixed to the tip",
                     'panda_hand', 'panda_link8'):
        assert fragment in line


def last_error_line(result: subprocess.CompletedProcess) -> str:
    """Exit 1 and one `loink_node: ` line, the last (the model's INFO lines come first)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr
    errors = [line for line in lines if line.startswith('loink_node: ')]
    assert len(errors) == 1 and errors == lines[-1:], result.stderr
    return errors[0]


def test_a_controller_output_without_acceleration_and_jerk_limits_stops_start_up(failed):
    """The URDF gives no acceleration or jerk: a controller output cannot keep them."""
    line = last_error_line(failed['no acceleration limits'])
    for fragment in ('command_output forward_position needs velocity, acceleration and jerk '
                     'limits (parameter joint_limits_file)', "joint 'panda_joint1' has no "
                     'acceleration limit', 'max_acceleration'):
        assert fragment in line


@pytest.mark.parametrize('value', UNUSABLE_LIMITS)
def test_an_unusable_joint_limits_file_stops_start_up(value, failed):
    line = last_error_line(failed[value])
    assert 'bad parameter joint_limits_file' in line and UNUSABLE_LIMITS[value] in line


@pytest.mark.parametrize('fixture', ['planar3_node', 'panda_node', 'magneto_node'])
def test_printed_usage_lines_succeed(fixture, request):
    from sensor_msgs.msg import JointState

    from loink_msgs.msg import TaskTarget
    from loink_msgs.srv import Sample, Solve, SolvePose
    node = request.getfixturevalue(fixture)
    deadline = time.monotonic() + 10.0
    while 'call it with' not in node.process.output():   # logged after the services exist
        assert time.monotonic() < deadline, node.process.output()
        time.sleep(0.05)
    output = node.process.output()
    # The pose stream's PoseStamped and the Cartesian path lines run verbatim in test_ros2_cli.py.
    verbatim = ('geometry_msgs/msg/PoseStamped', 'moveit_msgs/srv/GetCartesianPath')
    calls = [c for c in usage_requests(output) if c[2] not in verbatim]
    # Models of the whole tip position (the Panda's) also print ~/solve_pose, first.
    poses = ['loink_msgs/srv/SolvePose'] if fixture == 'panda_node' else []
    assert [c[2] for c in calls] == [*poses, 'loink_msgs/srv/Solve', 'loink_msgs/srv/Sample',
                                     'loink_msgs/msg/TaskTarget'], output
    assert '-0.0' not in output
    types = {'loink_msgs/srv/Solve': Solve, 'loink_msgs/srv/Sample': Sample,
             'loink_msgs/srv/SolvePose': SolvePose}
    for kind, name, type_name, fields in calls[:-1]:
        srv = types[type_name]
        response = node.call(srv, name, message(srv.Request, fields))
        assert response.success, f'{type_name}: {response.message}'
    _, topic, _, fields = calls[-1]
    answers = []
    rclpy_node = node.calls.node
    rclpy_node.create_subscription(JointState, f'{node.name}/joint_solution', answers.append, 10)
    publisher = rclpy_node.create_publisher(TaskTarget, topic, 10)
    deadline = time.monotonic() + 10.0
    while not answers:
        assert time.monotonic() < deadline, 'no answer to the printed stream example'
        publisher.publish(TaskTarget(task=fields['task']))
        time.sleep(0.1)
    assert 'is no solution' not in node.process.output()
    assert 'infeasible' not in node.process.output()
    assert np.all(np.isfinite(answers[0].position))
