"""Streams and planned paths driving ros2_control's own controllers on mock hardware
(../shared/ros2_control, built by set-up): ros2_control_node, the real spawner, the
joint_trajectory_controller or a forward position controller, and loink_node, all started
with docs/HARDWARE.md's launch line. Measured on the mock robot's /joint_states."""
import os
import time
from pathlib import Path

import numpy as np
import pytest

from loink_ros.tools import mock_robot

pytestmark = pytest.mark.skipif(not mock_robot.available(),
                                reason=f'ros2_control not built: {mock_robot.SETUP_HINT}')

JOINTS = [f'panda_joint{i}' for i in range(1, 8)]
VELOCITY = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])   # the URDF's
READY = np.array([0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0])          # the launch's start
# Over 20 ms of /joint_states (mock_robot.speeds), a jump: a joint beyond 1.5 x its velocity
# limit. The commands themselves (each over its own time, mock_robot.command_speeds) stay
# within the limit but for rounding and the moment between computing a command and stamping
# it: COMMAND_SLACK.
JUMP = 1.5
COMMAND_SLACK = 1.02
COMMAND_LEAD = 0.01   # config/panda_full.yaml's command_lead


@pytest.fixture(scope='module')
def panda():
    from loink_ros.core.problems.registry import make_problem
    return make_problem('panda_full')


def start(tmp_path: Path, namespace: str, output: str):
    from loink_ros.tools.node_process import isolate_ros_environment
    isolate_ros_environment()
    shell = mock_robot.Shell(mock_robot.launch_line(namespace, output), tmp_path / f'{namespace}.log')
    if not shell.wait_for('call it with:', 90.0):
        shell.stop()
        pytest.fail('the hardware launch did not come up:\n' + shell.output()[-4000:])
    return shell


def run_for(line: str, seconds: float, log: Path) -> str:
    """A documented line that runs until stopped (`ros2 topic pub`), for `seconds`; its output."""
    shell = mock_robot.Shell(line, log)
    time.sleep(seconds)
    shell.stop()
    return shell.output()


def reached(client, panda, position, rotation=None) -> None:
    time.sleep(0.3)
    q = client.record.latest()
    tip, tip_rotation = panda.tip_pose(q)
    assert np.linalg.norm(tip - position) <= 1e-3, f'{1e3 * np.linalg.norm(tip - position):.2f} mm'
    if rotation is not None:
        assert np.linalg.norm(tip_rotation - rotation) <= 1e-2


def test_every_documented_line_works(tmp_path, panda):
    """docs/HARDWARE.md's lines, verbatim and in order (before the other tests: one robot at a
    time): the desk launch with the trajectory controller, its task target, /joint_states, its
    pose target; the forward controller's launch; on a bringup of our own (the description
    and ros2_control_node), the real robot's spawner and launch lines. Each target is reached."""
    import re

    from test_ros2_cli import documented_lines

    from loink_ros.core.problems.arms.rotation_chart import quaternion_matrix
    from loink_ros.tools.node_process import isolate_ros_environment
    isolate_ros_environment()
    lines = documented_lines(mock_robot.REPO / 'docs' / 'HARDWARE.md')
    launches = [line for line in lines if line.startswith('ros2 launch ')]
    task_line = next(line for line in lines if 'TaskTarget' in line)
    pose_line = next(line for line in lines if 'PoseStamped' in line)
    echo_line = next(line for line in lines if line.startswith('ros2 topic echo'))
    spawner = next(line for line in lines if 'spawner' in line)
    assert len(launches) == 3 and len(lines) == 7, lines
    task = np.array([float(v) for v in re.search(r'task: \[([^\]]*)\]', task_line).group(1).split(',')])
    numbers = [float(v) for v in re.findall(r'[xyzw]: (-?[\d.]+)', pose_line)]
    client = mock_robot.RobotClient(f'doc_client_{os.getpid()}', JOINTS)
    shells = []
    try:
        for launch in launches[:2]:     # the trajectory controller, then the forward one
            shells.append(mock_robot.Shell(launch, tmp_path / f'launch{len(shells)}.log'))
            assert shells[-1].wait_for('call it with:', 90.0), shells[-1].output()[-3000:]
            client.wait_for_state()
            run_for(task_line, 6.0, tmp_path / 'task.log')
            reached(client, panda, task)
            if len(shells) == 1:
                echo = mock_robot.Shell(echo_line, tmp_path / 'echo.log')
                assert echo.wait(30.0) == 0 and 'position:' in echo.output(), echo.output()
                run_for(pose_line, 4.0, tmp_path / 'pose.log')
                reached(client, panda, numbers[:3], quaternion_matrix(np.array(numbers[3:])))
            assert shells[-1].stop() == 0 and 'Traceback' not in shells[-1].output()
            client.record.positions.clear()
        share = '$(ros2 pkg prefix --share loink_ros)'
        shells.append(mock_robot.Shell('ros2 run loink_ros robot_description_publisher --ros-args '
                                       '-p model:=panda_full -p mock_hardware:=true', tmp_path / 'urdf.log'))
        shells.append(mock_robot.Shell('ros2 run controller_manager ros2_control_node --ros-args '
                                       f'--params-file {share}/config/ros2_control/panda.yaml',
                                       tmp_path / 'control.log'))
        spawned = mock_robot.Shell(spawner, tmp_path / 'spawner.log')
        assert spawned.wait(60.0) == 0, spawned.output()
        shells.append(mock_robot.Shell(launches[2], tmp_path / 'launch2.log'))
        assert shells[-1].wait_for('call it with:', 90.0), shells[-1].output()[-3000:]
        client.wait_for_state()
        run_for(task_line, 6.0, tmp_path / 'task.log')
        reached(client, panda, task)
    finally:
        client.close()
        for shell in reversed(shells):
            shell.stop()


@pytest.fixture(scope='module')
def trajectory_robot(tmp_path_factory):
    """The launch line with joint_trajectory_controller, and the test's client."""
    namespace = f'hw_{os.getpid()}'
    shell = start(tmp_path_factory.mktemp('hw'), namespace, 'joint_trajectory')
    client = mock_robot.RobotClient(f'hw_client_{os.getpid()}', JOINTS)
    try:
        client.wait_for_state()
        yield shell, client, f'/{namespace}/loink_node'
    finally:
        client.close()
        code = shell.stop()
    assert 'Traceback' not in shell.output(), shell.output()[-4000:]
    assert code == 0, shell.output()[-4000:]


def stream_poses(client, node: str, poses, rate: float):
    """Publish PoseStamped targets at `rate`; the stamp when the first left."""
    from geometry_msgs.msg import PoseStamped
    from node_requests import set_pose
    publisher = client.node.create_publisher(PoseStamped, f'{node}/target_pose', 1)
    client.wait_for_subscriber(publisher)
    began, period = client.now(), 1.0 / rate
    next_time = time.monotonic()
    for position, rotation in poses:
        msg = PoseStamped()
        msg.header.frame_id = 'panda_link0'
        set_pose(msg.pose, position, rotation)
        publisher.publish(msg)
        next_time += period
        time.sleep(max(0.0, next_time - time.monotonic()))
    client.node.destroy_publisher(publisher)
    return began


def assert_within_limits(client, began: float, times, q) -> tuple[float, float]:
    """No command beyond the velocity limits, no jump on /joint_states; the largest speed
    shares of the commands and of the robot."""
    commands = (client.command_speeds(began, COMMAND_LEAD) / VELOCITY).max(axis=1)
    assert len(commands) and commands.max() <= COMMAND_SLACK, np.sort(commands)[-5:]
    robot = (mock_robot.speeds(times, q) / VELOCITY).max(axis=1)
    assert np.sum(robot > JUMP) == 0, f'jumps: {np.sort(robot)[-5:]}'
    return float(commands.max()), float(robot.max())


def test_a_pose_stream_is_followed_within_the_velocity_limits(trajectory_robot, panda):
    """The stream bench's smooth path (3 s at 100 Hz, 0.9 of the limits), from where the robot
    is: /joint_states follow with no violation and no jump; the tracking error is reported."""
    from loink_ros.tools.bench.stream_paths import paths
    shell, client, node = trajectory_robot
    path = paths(panda, 'smooth', 1, 3.0, 100.0, 20261205)[0]
    client.move_to(path.q[0], 2.0)
    began = stream_poses(client, node, list(zip(path.positions, path.rotations)), 100.0)
    time.sleep(0.5)
    times, q = client.record.since(began)
    command, robot = assert_within_limits(client, began, times, q)
    tip = np.array([panda.tip_pose(row)[0] for row in q])
    wanted = np.array([path.positions[min(int((t - began) * 100.0), len(path.times) - 1)] for t in times])
    error = np.linalg.norm(tip - wanted, axis=1)
    final = np.linalg.norm(panda.tip_pose(q[-1])[0] - path.positions[-1])
    print(f'pose stream on the JTC: largest speed {command:.3f} of the limit commanded, '
          f'{robot:.3f} on /joint_states (20 ms); tracking error '
          f'median {1e3 * np.median(error):.2f} mm, p99 {1e3 * np.percentile(error, 99):.2f} mm; '
          f'final {1e3 * final:.3f} mm')
    assert final <= 1e-3


def test_the_task_stream_from_a_far_state_moves_within_the_limits(trajectory_robot, panda):
    """The robot far from the target's optimal answer (a jump of several rad before): the task
    stream's commands approach it at the velocity limit, and it arrives."""
    from loink_msgs.msg import TaskTarget
    shell, client, node = trajectory_robot
    far = np.array([2.0, 0.8, -1.5, -2.2, 1.5, 2.5, -1.0])
    client.move_to(far, 3.0)
    target = panda.tip_pose(READY)[0]
    publisher = client.node.create_publisher(TaskTarget, f'{node}/target', 1)
    client.wait_for_subscriber(publisher)
    began = client.now()
    for _ in range(200):     # 4 s at 50 Hz
        publisher.publish(TaskTarget(task=[float(v) for v in target]))
        time.sleep(0.02)
    times, q = client.record.since(began)
    assert np.abs(q[-1] - far).max() > 1.0, 'the answer lies far from the start'
    assert_within_limits(client, began, times, q)
    assert np.linalg.norm(panda.tip_pose(q[-1])[0] - target) <= 1e-3


def test_stale_targets_hold_and_diagnostics_say_so(trajectory_robot, panda):
    """After the stream stops (stream_timeout 0.5 s), the robot stays where it was last
    commanded and /diagnostics reports the hold."""
    from diagnostic_msgs.msg import DiagnosticArray
    shell, client, node = trajectory_robot
    reports = []
    client.node.create_subscription(DiagnosticArray, '/diagnostics', reports.append, 10)
    path_end = client.record.latest()
    time.sleep(1.5)
    times, q = client.record.since(client.now() - 1.0)
    assert np.abs(q - path_end).max() <= 1e-6
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and not any(
            kv.key == 'holding' and kv.value.startswith('yes')
            for r in reports for s in r.status if s.name == node for kv in s.values):
        time.sleep(0.1)
    statuses = [s for r in reports for s in r.status if s.name == node]
    assert statuses and dict((kv.key, kv.value) for kv in statuses[-1].values)['holding'].startswith('yes')


def test_a_target_beyond_reach_stops_the_robot_on_its_branch(trajectory_robot, panda):
    """A pose stream that leaves the reach: the robot moves towards it within the limits and
    stops; no jump."""
    shell, client, node = trajectory_robot
    start = client.move_to(READY, 2.0)
    position, rotation = panda.tip_pose(READY)
    far = [(position + np.array([min(0.01 * k, 1.5), 0.0, 0.0]), rotation) for k in range(200)]
    began = stream_poses(client, node, far, 100.0)
    time.sleep(0.5)
    times, q = client.record.since(began)
    assert_within_limits(client, began, times, q)
    settled = q[times >= times[-1] - 0.3]
    assert np.abs(settled - settled[-1]).max() <= 1e-6, 'the robot stopped'
    assert np.abs(q[-1] - start).max() < np.pi, 'on its branch, not across the workspace'


@pytest.mark.parametrize('way', ['topic', 'action'])
def test_a_planned_path_runs_on_the_trajectory_controller(trajectory_robot, panda, tmp_path, way):
    """~/compute_cartesian_path's RobotTrajectory sent to joint_trajectory_controller as it is,
    on its topic or as a FollowJointTrajectory goal (`ros2 action send_goal`, as MoveIt's
    execution sends it): the robot ends at the last waypoint (FK of /joint_states within
    1 mm), no jump on the way."""
    shell, client, node = trajectory_robot
    start = client.move_to(READY, 2.0)
    position, rotation = panda.tip_pose(start)
    end = position + np.array([0.0, 0.15, -0.15])
    trajectory = plan_path(client, node, start, [position + np.array([0.0, 0.15, 0.0]), end], rotation)
    began = client.now()
    if way == 'topic':
        client.wait_for_subscriber(client.trajectory)
        client.trajectory.publish(trajectory)
        seconds = trajectory.points[-1].time_from_start
        time.sleep(seconds.sec + 1e-9 * seconds.nanosec + 1.0)
    else:
        goal = mock_robot.Shell(f"ros2 action send_goal {mock_robot.JTC}/follow_joint_trajectory "
                                f"control_msgs/action/FollowJointTrajectory '{goal_yaml(trajectory)}'",
                                tmp_path / 'goal.log')
        code = goal.wait(60.0)
        goal.stop()
        assert code == 0 and 'SUCCEEDED' in goal.output(), goal.output()[-2000:]
        time.sleep(0.3)
    times, q = client.record.since(began)
    robot = (mock_robot.speeds(times, q) / VELOCITY).max(axis=1)
    assert robot.max() <= 1.0 + 1e-3, np.sort(robot)[-5:]   # a timed path: within its limits
    miss = np.linalg.norm(panda.tip_pose(q[-1])[0] - end)
    assert miss <= 1e-3, f'{1e3 * miss:.3f} mm from the last waypoint'


def plan_path(client, node: str, start, positions, rotation):
    """~/compute_cartesian_path from `start` through `positions` (the tip's rotation kept):
    the whole path planned, its joint trajectory."""
    from geometry_msgs.msg import Pose
    from moveit_msgs.srv import GetCartesianPath
    from node_requests import moveit_code, set_pose
    request = GetCartesianPath.Request(group_name='panda_arm', link_name='panda_hand', max_step=0.01)
    request.header.frame_id = 'panda_link0'
    request.start_state.joint_state.name = JOINTS
    request.start_state.joint_state.position = [float(v) for v in start]
    for position in positions:
        pose = Pose()
        set_pose(pose, position, rotation)
        request.waypoints.append(pose)
    service = client.node.create_client(GetCartesianPath, f'{node}/compute_cartesian_path')
    assert service.wait_for_service(timeout_sec=10.0)
    response = client.calls.call(service, request, 30.0)
    assert response.error_code.val == moveit_code('SUCCESS') and response.fraction == 1.0
    return response.solution.joint_trajectory


def goal_yaml(trajectory) -> str:
    """A FollowJointTrajectory goal of `trajectory`, as `ros2 action send_goal` takes it."""
    def point(p) -> str:
        return (f'{{positions: {list(p.positions)}, velocities: {list(p.velocities)}, '
                f'accelerations: {list(p.accelerations)}, time_from_start: '
                f'{{sec: {p.time_from_start.sec}, nanosec: {p.time_from_start.nanosec}}}}}')
    points = ', '.join(point(p) for p in trajectory.points)
    return f'{{trajectory: {{joint_names: {list(trajectory.joint_names)}, points: [{points}]}}}}'


@pytest.mark.parametrize('joints, says', [
    (list(reversed(JOINTS)), 'differ from controller /joint_trajectory_controller'),
    (JOINTS[:6] + ['other_joint'], 'differ from controller /joint_trajectory_controller'),
])
def test_a_joint_order_other_than_the_controllers_is_refused(trajectory_robot, tmp_path, joints, says):
    """loink_node started against the running controller with controller_joints in another
    order, or other joints: it exits with one line naming both lists."""
    shell, client, node = trajectory_robot
    value = '[' + ','.join(joints) + ']'
    run = mock_robot.Shell(f'ros2 run loink_ros loink_node --ros-args --params-file config/panda_full.yaml '
                           f'-r __ns:=/refused_{os.getpid()} -p command_output:=joint_trajectory '
                           f'-p "controller_joints:={value}"', tmp_path / 'refused.log')
    code = run.wait(60.0)
    run.stop()
    lines = [line for line in run.output().splitlines() if line.startswith('loink_node:')]
    assert code == 1 and len(lines) == 1 and says in lines[0], run.output()[-2000:]


def test_a_controller_of_other_joints_is_refused(tmp_path):
    """A controller that does not answer, and given joints that are not the model's."""
    run = mock_robot.Shell(f'ros2 run loink_ros loink_node --ros-args --params-file config/panda_full.yaml '
                           f'-r __ns:=/other_{os.getpid()} -p command_output:=forward_position '
                           '-p controller:=/no_such_controller -p controller_timeout:=1.0 '
                           '-p "controller_joints:=[joint_a,joint_b]"', tmp_path / 'other.log')
    code = run.wait(60.0)
    run.stop()
    lines = [line for line in run.output().splitlines() if line.startswith('loink_node:')]
    assert code == 1 and len(lines) == 1 and "the model has" in lines[0], run.output()[-2000:]

