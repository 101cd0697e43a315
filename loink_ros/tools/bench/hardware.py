"""`loink bench hardware`: loink_node's streams driving ros2_control's controllers on a
mock-hardware Panda (docs/HARDWARE.md's launch line, ros2_control built by set-up), for each
command output (joint_trajectory: joint_trajectory_controller; forward_position:
position_controllers/JointGroupPositionController; one launch each), as JSON; and the
scenarios test/test_hardware.py runs, measured the same way (tools/motion_measures.py).

Smooth paths, per rate (250 and 500 Hz; run first): `paths` of the stream bench's smooth
paths (panda_full, the fastest joint at 0.9 of its velocity limit) as PoseStamped targets,
each stamped as it leaves, the robot moved to each path's start first, each path eased in
from rest over RAMP_S (`from_rest`: a target that starts at speed cannot be followed within
the acceleration limits):
- latency: from a target's publication (its stamp) to the arrival (DDS reception time) of
  the first controller command after its answer's PoseTracking arrived: the node commands
  each answer at its next cycle (motion_measures.answer_latencies); p50/p99. The floor: the
  same targets through an empty relay (empty_relay.py: no IK, the same message types and QoS)
  in the same run; the node's p50 and p99 over the floor's, against TODAY's (before the
  motion layer, measured with callback times: a little slower on both sides);
- tracking: the tip (FK of /joint_states, each at the previous message's stamp) against the
  target of the moment, and against the target `trail` earlier, `trail` being the delay that
  fits best; the share of the stream's answers on target (PoseTracking.on_target);
- the peaks of the commands and of /joint_states, as for the scenarios.

Scenarios (targets at 100 Hz; the task stream's last, since a node that never holds after it
leaves the robot to nothing else): `from_rest_beyond_reach_pose` and `_task` (from rest at
READY, a target leaving the tip at 1 m/s until it lies beyond the reach), `controller_off_on`
(the output's controller deactivated mid-path through the controller manager's
switch_controller, reactivated 1.5 s later), `broadcaster_off_on` (the same for
joint_state_broadcaster: /joint_states stop), `target_jump` (a pose target that jumps 1 m),
and on the trajectory controller `cartesian_path` (a MoveGroupInterface-shaped
GetCartesianPath request, empty start state with is_diff, its trajectory sent as a
FollowJointTrajectory goal).

Measures, each as a fraction of its joint's limit (URDF plus config/joint_limits/panda.yaml):
- commands: trajectory commands' largest |velocity|, |acceleration| and |jerk| along their
  points, their seams (each message's first point against the previous one's trajectory, in
  cycles of motion at the velocity limit; over 1 is a jump), and how many the controller
  refused (points not strictly increasing in time); forward commands carry no time, so their
  per-cycle peaks (timed by DDS source timestamps) carry the node's sampling-to-sending delay,
  and their velocity over FORWARD_WINDOW_S is the figure checked;
- /joint_states: divided differences at the controller's rate (each message's positions at
  the previous message's stamp), peaks and the 99th percentiles of acceleration and jerk,
  and the same over STATE_STRIDE updates; jumps (a step beyond 1.5 times the velocity limit).

`targets` says, per output, whether the issue's targets hold: commands within COMMAND_SLACK of
every limit (forward: velocity over the window within FORWARD_SLACK), none refused,
/joint_states within STATE_SLACK (strictly, and over STATE_STRIDE updates but for 1 % of the
samples), no jump in any scenario, and the tracking error's p50 within 1.5 times today's at
the same rate; and which scenarios could not run (their error is in their entry).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from loink_ros.tools import mock_robot
from loink_ros.tools import motion_measures as mm

RATES = (250.0, 500.0)
DEFAULT_PATHS = 3
DURATION_S = 4.0
SEED = 20261205
JOINTS = [f'panda_joint{i}' for i in range(1, 8)]
READY = np.array([0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0])   # the launch's start
LIMITS_FILE = mock_robot.REPO / 'config' / 'joint_limits' / 'panda.yaml'
SCENARIO_RATE = 100.0
# How long a scenario's controller or broadcaster stays off (s), and when it goes off.
OFF_S, OFF_AT_S = 1.5, 1.0
# How long the path's last pose is streamed after it (s): the robot, stopped while the
# controller was off, catches up before the stream ends (stream_timeout then brakes it).
HOLD_S = 2.0
# Trajectory commands: divided differences of exact samples, but time_from_start is rounded
# to 1 ns and points lie as close as 10 us (online_generator.KNOT_GAP): up to 1e-4 of a value.
COMMAND_SLACK = 1.0 + 1e-4
# Forward commands carry no time (motion_measures): their velocity over FORWARD_WINDOW_S, where
# the node's unseen delays between sampling and sending (up to 2.5 ms at each end) weigh 5 %.
FORWARD_WINDOW_S, FORWARD_SLACK = 0.1, 1.05
# /joint_states: the controller's interpolation between points and the loop's timing.
STATE_SLACK = 1.05
# /joint_states are also differenced over this many updates (20 ms): their stamps lie tens of
# microseconds from when the controller sampled (motion_measures.joint_state_peaks), which
# over one update (4 ms) shows as up to 1.3 to 1.8 times the acceleration limit where the
# commands sampled at the same stamps keep it (measured here); over 20 ms, about 1 %.
STATE_STRIDE = 5
# Commands sent this close are one motion: trajectory seams are measured, forward commands
# differenced (farther apart, the node sent nothing: at rest, or its controller inactive).
SEAM_GAP_S = 0.1
# Today's figures (docs/hardware_bench.json before the motion layer): the node's latency p50
# over the empty relay's and the tracking error's p50 (mm), per rate; the target allows 1.5x.
TODAY = {'250_hz': {'p50_over_floor': 2.02, 'tracking_error_p50_mm': 5.16},
         '500_hz': {'p50_over_floor': 3.31, 'tracking_error_p50_mm': 5.05}}
TRACKING_ALLOWANCE = 1.5
# The smooth paths start at speed (0.9 of a joint's velocity limit); the bench streams them
# from rest, easing in along the path over this long (s; 3x the path's speed / RAMP_S of
# acceleration at most: within the Panda's limits on these paths).
RAMP_S = 0.5


def run(paths: int = DEFAULT_PATHS, duration_s: float = DURATION_S, seed: int = SEED) -> dict:
    from loink_ros.core.problems.registry import make_problem
    from loink_ros.tools.node_process import isolate_ros_environment
    isolate_ros_environment()
    problem = make_problem('panda_full')
    limits = panda_limits(problem)
    outputs = {}
    for output in mock_robot.OUTPUTS:
        outputs[output] = run_output(output, problem, limits, paths, duration_s, seed)
        outputs[output]['targets'] = targets_met(outputs[output])
    return {'robot': 'panda_full', 'controllers': 'ros2_control 4.25 / ros2_controllers 4.20, mock hardware',
            'controller_rate_hz': 1.0 / mock_robot.PERIOD,
            'limits': {'velocity': limits.velocity.tolist(), 'acceleration': limits.acceleration.tolist(),
                       'jerk': limits.jerk.tolist(), 'source': 'URDF + config/joint_limits/panda.yaml'},
            'slack': {'commands': COMMAND_SLACK, 'joint_states': STATE_SLACK},
            'today': TODAY, 'paths_per_rate': paths, 'path_seconds': duration_s, 'seed': seed,
            'launch': mock_robot.launch_line('NS', 'OUTPUT'), 'outputs': outputs}


def panda_limits(problem):
    """The node's limits for panda_full: the URDF's, with config/joint_limits/panda.yaml."""
    from loink_ros.core.motion.joint_limits import joint_limits
    from loink_ros.core.problems.arms.velocity_limits import velocity_limits
    return joint_limits(list(problem.joint_names), problem.lower, problem.upper,
                        velocity_limits(problem), LIMITS_FILE)


def run_output(output: str, problem, limits, paths: int, duration_s: float, seed: int) -> dict:
    """One launch of `output`: every scenario, then the smooth paths at each rate."""
    from loink_ros.tools.bench.empty_relay import empty_relay_process
    from loink_ros.tools.bench.stream_paths import paths as stream_paths
    namespace = f'hw_bench_{os.getpid()}'
    with tempfile.TemporaryDirectory() as tmp:
        shell = mock_robot.Shell(mock_robot.launch_line(namespace, output), Path(tmp) / 'launch.log')
        relay = empty_relay_process(f'/hw_floor_{os.getpid()}')
        client = None
        try:
            if not shell.wait_for('call it with:', 120.0):
                raise RuntimeError('the hardware launch did not come up:\n' + shell.output()[-3000:])
            client = BenchClient(f'hw_bench_client_{os.getpid()}', output, f'/{namespace}/loink_node',
                                 relay.prefix)
            client.robot.wait_for_state()
            rates = {}
            for rate in RATES:
                chosen = [from_rest(problem, path, rate)
                          for path in stream_paths(problem, 'smooth', paths, duration_s, rate, seed)]
                rates[f'{rate:g}_hz'] = measure_rate(client, problem, limits, chosen, rate)
            scenarios = {name: measured_scenario(name, client, problem, limits) for name in scenario_names(output)}
        finally:
            if client is not None:
                client.close()
            relay.stop()
            code = shell.stop()
    return {'launch_exit_code': code, 'scenarios': scenarios, 'smooth_paths': rates}


def from_rest(problem, path, rate: float):
    """`path` streamed from rest: at time t, its sample at s(t), where s eases in from 0 to
    the path's own pace over RAMP_S (s' = 3u^2 - 2u^3, u = t / RAMP_S) and keeps it after.
    A target that starts at speed asks an arm at rest for an unbounded acceleration: any
    motion within the limits trails it until it has caught up, which at 0.9 of the velocity
    limit takes about a second and would dominate the tracking figure."""
    times = np.arange(np.ceil((path.times[-1] + RAMP_S / 2) * rate) + 1) / rate
    u = np.minimum(times / RAMP_S, 1.0)
    s = np.minimum(np.where(times < RAMP_S, RAMP_S * (u ** 3 - 0.5 * u ** 4), times - RAMP_S / 2),
                   path.times[-1])
    q = np.stack([np.interp(s, path.times, column) for column in path.q.T], axis=1)
    poses = [problem.tip_pose(row) for row in q]
    return replace(path, times=times, q=q, positions=np.array([p for p, _ in poses]),
                   rotations=np.array([r for _, r in poses]),
                   reachable=np.ones(len(times), dtype=bool))


def measured_scenario(name: str, client: BenchClient, problem, limits) -> dict:
    """A scenario's measures, or why it could not run (a finding, the bench goes on)."""
    try:
        return measure(client.robot, run_scenario(name, client.robot, client.node, problem), limits)
    except (RuntimeError, TimeoutError, ValueError, IndexError) as err:
        return {'error': f'{type(err).__name__}: {err}'}


def scenario_names(output: str) -> list[str]:
    """The scenarios of an output; the task stream's last (a node that never holds after it
    leaves the robot to nothing else)."""
    names = ['from_rest_beyond_reach_pose', 'controller_off_on', 'broadcaster_off_on', 'target_jump']
    planned = ['cartesian_path'] if output == 'joint_trajectory' else []
    return names + planned + ['from_rest_beyond_reach_task']


@dataclass
class Run:
    """One scenario on the robot: its span (ROS time, s), named moments, and the span in which
    the controller was off (left out of /joint_states: the mock stops dead when its
    controller is deactivated mid-motion, ros2_control's doing)."""

    name: str
    began: float
    ended: float
    events: dict[str, float] = field(default_factory=dict)
    off: tuple[float, float] | None = None
    final: tuple[np.ndarray, np.ndarray] | None = None    # the last target's tip position and rotation
    start: np.ndarray | None = None                        # the robot's state at the start
    facts: dict = field(default_factory=dict)              # what else the scenario found
    planned: object = None                                 # cartesian_path: the JointTrajectory run


def run_scenario(name: str, client: mock_robot.RobotClient, node: str, problem) -> Run:
    if name.startswith('from_rest_beyond_reach_'):
        return from_rest_beyond_reach(client, node, problem, name.rsplit('_', 1)[1])
    if name == 'controller_off_on':
        return switched_off_mid_path(client, node, problem, client.controller.lstrip('/'))
    if name == 'broadcaster_off_on':
        return switched_off_mid_path(client, node, problem, mock_robot.BROADCASTER)
    if name == 'target_jump':
        return target_jump(client, node, problem)
    return cartesian_path(client, node, problem)


def pose_message(position: np.ndarray, rotation: np.ndarray):
    from geometry_msgs.msg import PoseStamped

    from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
    msg = PoseStamped()
    msg.header.frame_id = 'panda_link0'
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = map(float, position)
    o.x, o.y, o.z, o.w = map(float, matrix_quaternion(rotation))
    return msg


def target_publisher(client: mock_robot.RobotClient, node: str, stream: str):
    """A publisher of the pose stream's or the task stream's targets."""
    from geometry_msgs.msg import PoseStamped

    from loink_msgs.msg import TaskTarget
    if stream == 'pose':
        return client.kept('publisher', PoseStamped, f'{node}/target_pose')
    return client.kept('publisher', TaskTarget, f'{node}/target')


def from_rest_beyond_reach(client: mock_robot.RobotClient, node: str, problem, stream: str) -> Run:
    """From rest at READY, a target leaving the tip along +x at 1 m/s for 2 s (1.5 m, beyond
    the reach): the pose stream approaches its closest answer on the branch, the task stream's
    answers stop being solutions: either way the robot stops."""
    from loink_msgs.msg import TaskTarget
    start = client.move_to(READY, 2.0)
    position, rotation = problem.tip_pose(READY)
    goals = [position + np.array([min(0.01 * k, 1.5), 0.0, 0.0]) for k in range(200)]
    messages = ([pose_message(g, rotation) for g in goals] if stream == 'pose' else
                [TaskTarget(task=[float(v) for v in g]) for g in goals])
    publisher = target_publisher(client, node, stream)
    stamps = mock_robot.stream(client, publisher, messages, SCENARIO_RATE)
    time.sleep(0.8)     # stream_timeout (0.5 s): the node holds
    return Run(f'from_rest_beyond_reach_{stream}', stamps[0], client.now(), start=start)


def switched_off_mid_path(client: mock_robot.RobotClient, node: str, problem, controller: str) -> Run:
    """The pose stream along a smooth path (4 s at 100 Hz), then its last pose for HOLD_S (the
    robot catches up); `controller` deactivated at 1 s and reactivated 1.5 s later through
    switch_controller."""
    from loink_ros.tools.bench.stream_paths import paths
    path = paths(problem, 'smooth', 1, 4.0, SCENARIO_RATE, SEED)[0]
    start = client.move_to(path.q[0], 2.0)
    events: dict[str, float] = {}

    def switch(activate: bool) -> None:
        key = 'on' if activate else 'off'
        events[f'{key}_sent'], events[key] = client.switch_controllers([controller] if activate else [],
                                                                       [] if activate else [controller])
    poses = list(zip(path.positions, path.rotations))
    poses += [poses[-1]] * round(HOLD_S * SCENARIO_RATE)
    publisher = target_publisher(client, node, 'pose')
    stamps = mock_robot.stream(client, publisher, [pose_message(p, r) for p, r in poses],
                               SCENARIO_RATE, [(OFF_AT_S, lambda: switch(False)),
                                               (OFF_AT_S + OFF_S, lambda: switch(True))])
    time.sleep(0.8)
    name = 'broadcaster_off_on' if controller == mock_robot.BROADCASTER else 'controller_off_on'
    off = None if name == 'broadcaster_off_on' else (events['off_sent'], events['on'] + 2 * mock_robot.PERIOD)
    return Run(name, stamps[0], client.now(), events, off, (path.positions[-1], path.rotations[-1]), start)


# The target that jumps: the tip pointing down, 1 m apart along y.
JUMP_FROM, JUMP_TO = np.array([0.5, -0.5, 0.4]), np.array([0.5, 0.5, 0.4])
DOWN = np.diag([1.0, -1.0, -1.0])


def target_jump(client: mock_robot.RobotClient, node: str, problem) -> Run:
    """From rest at READY, the pose target at JUMP_FROM for 1.5 s, then at JUMP_TO (1 m away)
    for 2.5 s."""
    start = client.move_to(READY, 2.0)
    goals = [JUMP_FROM] * 150 + [JUMP_TO] * 250
    publisher = target_publisher(client, node, 'pose')
    stamps = mock_robot.stream(client, publisher, [pose_message(g, DOWN) for g in goals], SCENARIO_RATE)
    time.sleep(0.8)
    return Run('target_jump', stamps[0], client.now(), {'jump': float(stamps[150])},
               final=(JUMP_TO, DOWN), start=start)


def cartesian_path(client: mock_robot.RobotClient, node: str, problem) -> Run:
    """MoveGroupInterface's computeCartesianPath, as it asks (empty start state, is_diff: the
    current state), from rest at READY: 0.15 m along y then 0.15 m down; the trajectory sent as
    a FollowJointTrajectory goal (MoveIt's execution). The run's `events` has the first point's
    distance from the measured state (rad) and the goal's error code."""
    start = client.move_to(READY, 2.0)
    position, rotation = problem.tip_pose(start)
    end = position + np.array([0.0, 0.15, -0.15])
    trajectory = plan_path(client, node, None, [position + np.array([0.0, 0.15, 0.0]), end], rotation)
    first = np.array(trajectory.points[0].positions)[[list(trajectory.joint_names).index(j) for j in JOINTS]]
    began = client.now()
    code = follow(client, trajectory)
    time.sleep(0.3)
    return Run('cartesian_path', began, client.now(), final=(end, rotation), start=start,
               facts={'first_point_from_measured_rad': float(np.abs(first - start).max()),
                      'follow_joint_trajectory_error_code': code}, planned=trajectory)


def plan_path(client: mock_robot.RobotClient, node: str, start: np.ndarray | None, positions, rotation):
    """~/compute_cartesian_path through `positions` (the tip's rotation kept): from `start`, or
    where `start` is None as MoveGroupInterface asks (empty start state, is_diff: the current
    state). Its joint trajectory; RuntimeError unless all of it was planned."""
    from moveit_msgs.srv import GetCartesianPath
    request = GetCartesianPath.Request(group_name='panda_arm', link_name='panda_hand', max_step=0.01,
                                       avoid_collisions=True)
    request.header.frame_id = 'panda_link0'
    if start is None:
        request.start_state.is_diff = True
    else:
        request.start_state.joint_state.name = JOINTS
        request.start_state.joint_state.position = [float(v) for v in start]
    request.waypoints = [pose_message(position, rotation).pose for position in positions]
    response = client.calls.request(GetCartesianPath, f'{node}/compute_cartesian_path', request, 30.0)
    if response.error_code.val != 1 or response.fraction != 1.0:   # MoveItErrorCodes.SUCCESS
        raise RuntimeError(f'compute_cartesian_path: code {response.error_code.val}, '
                           f'fraction {response.fraction}')
    return response.solution.joint_trajectory


def follow(client: mock_robot.RobotClient, trajectory, timeout: float = 30.0) -> int:
    """Send `trajectory` as a FollowJointTrajectory goal and wait for its result: its error
    code (0: SUCCESSFUL); RuntimeError where the goal is refused."""
    from concurrent.futures import Future

    from control_msgs.action import FollowJointTrajectory
    action = client.kept('action', FollowJointTrajectory, f'{mock_robot.JTC}/follow_joint_trajectory')
    if not action.wait_for_server(timeout_sec=10.0):
        raise TimeoutError('follow_joint_trajectory did not appear')
    accepted: Future = Future()
    action.send_goal_async(FollowJointTrajectory.Goal(trajectory=trajectory)).add_done_callback(
        lambda f: accepted.set_result(f.result()))
    handle = accepted.result(timeout=10.0)
    if not handle.accepted:
        raise RuntimeError('the trajectory controller refused the goal')
    result: Future = Future()
    handle.get_result_async().add_done_callback(lambda f: result.set_result(f.result()))
    return int(result.result(timeout=timeout).result.error_code)


def planned_command(trajectory) -> mm.TrajectoryCommand:
    """A planned trajectory as a command (stamp 0: times from its start), in JOINTS order."""
    order = [list(trajectory.joint_names).index(j) for j in JOINTS]
    points = trajectory.points

    def column(name: str) -> np.ndarray:
        return np.array([np.array(getattr(p, name))[order] for p in points])
    return mm.TrajectoryCommand(0.0, 0.0, np.array([mock_robot.duration_seconds(p.time_from_start) for p in points]),
                                column('positions'), column('velocities'), column('accelerations'))


def command_peaks(client: mock_robot.RobotClient, began: float, ended: float, limits) -> tuple[mm.Peaks, dict]:
    """The stream's commands in [began, ended]: their peaks (jumps: trajectory seams over one
    cycle, or forward steps beyond mm.JUMP) and, for trajectories, the largest seam (cycles)
    and how many the controller refused (mm.refused)."""
    if client.output == 'forward_position':
        times, q = client.forward_commands(began, ended)
        window = mm.window_velocity(mm.split(times, q, SEAM_GAP_S), FORWARD_WINDOW_S, limits.velocity)
        return mm.forward_peaks(times, q, SEAM_GAP_S, limits), {'velocity_over_window': window}
    commands = client.trajectory_commands(began, ended)
    steps = mm.trajectory_steps(commands, limits.velocity, mock_robot.PERIOD, SEAM_GAP_S)
    seams = mm.Peaks(jumps=int(np.sum(steps > 1.0)))
    return mm.trajectory_peaks(commands, limits) | seams, {
        'largest_seam_cycles': float(steps.max()) if len(steps) else 0.0,
        'refused_by_controller': len(mm.refused(commands)), 'messages': len(commands)}


def state_peaks(client: mock_robot.RobotClient, began: float, ended: float, limits,
                off: tuple[float, float] | None = None, stride: int = 1) -> mm.Peaks:
    """/joint_states stamped in [began, ended], those in `off` left out, differenced over
    `stride` updates (motion_measures.joint_state_peaks)."""
    stamps, q = client.record.since(began, ended)
    if off is not None:
        keep = (stamps < off[0]) | (stamps > off[1])
        stamps, q = stamps[keep], q[keep]
    return mm.joint_state_peaks(stamps, q, mock_robot.PERIOD, limits, stride)


def measure(client: mock_robot.RobotClient, run: Run, limits) -> dict:
    """A scenario's peaks, and what its test checks besides (module docstring)."""
    if run.planned is not None:
        planned = planned_command(run.planned)
        commands, facts = mm.trajectory_peaks([planned], limits), {'refused_by_controller': len(mm.refused([planned]))}
    else:
        commands, facts = command_peaks(client, run.began, run.ended, limits)
    out = {'commands': {**commands.as_dict(), **facts},
           'joint_states': state_peaks(client, run.began, run.ended, limits, run.off).as_dict(),
           'joint_states_over_stride': state_peaks(client, run.began, run.ended, limits, run.off,
                                                   STATE_STRIDE).as_dict(),
           'seconds': run.ended - run.began, **run.facts,
           'events_s': {key: t - run.began for key, t in run.events.items()}}
    if 'on' in run.events:
        out['first_command_after_on_cycles'] = first_command_cycles(client, run.events['on'], limits)
    return out


def first_command_cycles(client: mock_robot.RobotClient, after: float, limits) -> float:
    """The first command after `after` (a reactivation): how far from the measured state
    then, in cycles of motion at the velocity limit."""
    t, q = client.first_command_after(after)
    return mm.cycles_from(q, client.record.before(t), limits.velocity, mock_robot.PERIOD)


class BenchClient:
    """The robot's client (mock_robot.RobotClient), the node's PoseTracking, the relay's commands."""

    def __init__(self, name: str, output: str, node: str, relay: str):
        from geometry_msgs.msg import PoseStamped
        from trajectory_msgs.msg import JointTrajectory

        from loink_msgs.msg import PoseTracking
        self.robot = mock_robot.RobotClient(name, JOINTS, output)
        self.node = node
        ros = self.robot.node
        self.trackings: list[tuple[float, float, bool]] = []   # (target stamp, receipt, on target)
        self.relayed: list[tuple[float, float]] = []           # (target stamp, receipt)
        timed = self.robot.timed.node     # callbacks that read DDS timestamps
        timed.create_subscription(PoseTracking, f'{node}/pose_tracking', self.on_tracking, 1000)
        timed.create_subscription(JointTrajectory, f'{relay}/commands', self.on_relayed, 1000)
        self.node_targets = ros.create_publisher(PoseStamped, f'{node}/target_pose', 1)
        self.relay_targets = ros.create_publisher(PoseStamped, f'{relay}/target_pose', 1)

    def on_tracking(self, msg, info) -> None:
        self.trackings.append((mock_robot.stamp_seconds(msg.header.stamp),
                               mock_robot.info_seconds(info, 'received_timestamp'), msg.on_target))

    def on_relayed(self, msg, info) -> None:
        self.relayed.append((mock_robot.stamp_seconds(msg.header.stamp),
                             mock_robot.info_seconds(info, 'received_timestamp')))

    def close(self) -> None:
        self.robot.close()


def measure_rate(client: BenchClient, problem, limits, paths: list, rate: float) -> dict:
    robot = client.robot
    latencies, floors, errors, trailed, trails, on_target, published, refused = [], [], [], [], [], [], 0, 0
    window, delays = 0.0, []
    commands, states, strided = mm.Peaks(), mm.Peaks(), mm.Peaks()
    for path in paths:
        robot.move_to(path.q[0], 2.0)
        first = len(client.trackings)
        messages = [pose_message(p, r) for p, r in zip(path.positions, path.rotations)]
        stamps = mock_robot.stream(robot, client.node_targets, messages, rate)
        time.sleep(0.5)
        ended = robot.now()
        answered = np.array(client.trackings[first:]).reshape(-1, 3)
        latencies.append(mm.answer_latencies(answered[:, 0], answered[:, 1], robot.command_receipts(stamps[0])))
        on_target += list(answered[:, 2].astype(bool))
        published += len(stamps)
        times, q = robot.record.since(stamps[0], ended)
        # /joint_states message k shows update k-1's command (motion_measures): tip at the previous stamp.
        tip = np.array([problem.tip_pose(row)[0] for row in q[1:]])
        error, trail, at_trail = mm.tracking(times[:-1], tip, stamps, path.positions)
        errors.append(error)
        trailed.append(at_trail)
        trails.append(trail)
        peaks, facts = command_peaks(robot, stamps[0], ended, limits)
        refused += facts.get('refused_by_controller', 0)
        window = max(window, facts.get('velocity_over_window', 0.0))
        commands, states = commands | peaks, states | state_peaks(robot, stamps[0], ended, limits)
        strided = strided | state_peaks(robot, stamps[0], ended, limits, stride=STATE_STRIDE)
        if robot.output == 'forward_position':
            delays.append(mm.command_to_state(*robot.forward_commands(stamps[0], ended),
                                              *robot.record.since(stamps[0], ended)))
        first_relayed = len(client.relayed)
        mock_robot.stream(robot, client.relay_targets, messages, rate)
        time.sleep(0.5)
        floors += [receipt - sent for sent, receipt in client.relayed[first_relayed:]]
    node, floor = mm.spread(np.concatenate(latencies)), mm.spread(np.array(floors))
    return {'targets_published': published, 'answers_with_a_command': node['count'],
            'answers_on_target_share': float(np.mean(on_target)),
            'latency_ms': node, 'floor_latency_ms': floor,
            'p50_over_floor': node['p50'] / floor['p50'], 'p99_over_floor': node['p99'] / floor['p99'],
            'tracking_error_mm': mm.spread(np.concatenate(errors)),
            'trail_ms': [1e3 * t for t in trails],
            'tracking_error_at_trail_mm': mm.spread(np.concatenate(trailed)),
            'commands': {**commands.as_dict(), **({'velocity_over_window': window}
                                                  if robot.output == 'forward_position' else
                                                  {'refused_by_controller': refused})},
            'joint_states': states.as_dict(), 'joint_states_over_stride': strided.as_dict(),
            **({'command_to_state_ms': delay_percentiles(np.concatenate(delays))} if delays else {})}


def delay_percentiles(delays: np.ndarray) -> dict:
    """p5, p50 and p95 of delays (s) in ms, and the p5-p95 spread in controller periods."""
    p5, p50, p95 = np.percentile(1e3 * delays, [5, 50, 95])
    return {'count': len(delays), 'p5': float(p5), 'p50': float(p50), 'p95': float(p95),
            'spread_periods': float((p95 - p5) / (1e3 * mock_robot.PERIOD))}


def targets_met(result: dict) -> dict:
    """The issue's targets for one output (module docstring)."""
    failed = [name for name, m in result['scenarios'].items() if 'error' in m]
    measured = [m for m in result['scenarios'].values() if 'error' not in m] + list(result['smooth_paths'].values())

    def peak(part: dict) -> float:
        return max(part['velocity'], part['acceleration'], part['jerk'])

    def commands_within(part: dict) -> bool:
        if 'velocity_over_window' in part:      # forward commands: only that is measurable
            return part['velocity_over_window'] <= FORWARD_SLACK
        return peak(part) <= COMMAND_SLACK
    return {'scenarios_failed': failed,
            'commands_within_limits': all(commands_within(m['commands']) for m in measured),
            'joint_states_within_slack': all(peak(m['joint_states']) <= STATE_SLACK for m in measured),
            'joint_states_within_slack_over_stride_but_1_percent': all(
                max(m['joint_states_over_stride']['velocity'], m['joint_states_over_stride']['acceleration_p99'],
                    m['joint_states_over_stride']['jerk_p99']) <= STATE_SLACK for m in measured),
            'no_jumps': all(m['joint_states']['jumps'] == 0 and ('velocity_over_window' in m['commands']
                                                                 or m['commands']['jumps'] == 0) for m in measured),
            'no_command_refused': all(not m['commands'].get('refused_by_controller') for m in measured),
            'tracking_p50_within_allowance': all(
                m['tracking_error_mm']['p50'] <= TRACKING_ALLOWANCE * TODAY[rate]['tracking_error_p50_mm']
                for rate, m in result['smooth_paths'].items())}
