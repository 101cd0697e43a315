"""`loink bench hardware`: the pose stream driving joint_trajectory_controller on a mock-hardware
Panda (docs/HARDWARE.md's launch line, ros2_control built by set-up), as JSON.

For each rate (250 and 500 Hz), `paths` of the stream bench's smooth paths (panda_full, the
fastest joint at 0.9 of its limit) are published as PoseStamped targets, each stamped when it
leaves. Measured by an outside client:
- latency: from a target's publication to the receipt of the controller command that answers
  it (the command whose positions the node's PoseTracking of that target carries), p50/p99;
- the floor: the same targets, at the same rate, through an empty relay (empty_relay.py: no
  IK, the same message types and QoS) started in the same run, and the node's p50 and p99 over
  the floor's;
- tracking: the tip (FK of /joint_states) against the target of the moment, and against the
  target `trail` earlier, `trail` being the delay that fits best (the controller trails the
  stream by the command's lead: commander.py); the share of the stream's answers on target
  (PoseTracking.on_target: where it is not, the stream itself lags, docs/STREAM.md);
- the largest speed on /joint_states over 20 and 50 ms, as a share of the velocity limit (the
  mock reports each update's command one update late, so a late update shows as a faster
  move over a short window: mock_robot.SPEED_WINDOW_S).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from loink_ros.tools import mock_robot

RATES = (250.0, 500.0)
DEFAULT_PATHS = 3
DURATION_S = 4.0
SEED = 20261205
JOINTS = [f'panda_joint{i}' for i in range(1, 8)]
# Windows the speeds on /joint_states are measured over (s): mock_robot.speeds.
SPEED_WINDOWS = (0.02, 0.05)
# Delays tried for the tip's trail behind the targets (s).
TRAILS = np.arange(0.0, 0.1001, 0.002)


def run(paths: int = DEFAULT_PATHS, duration_s: float = DURATION_S, seed: int = SEED) -> dict:
    from loink_ros.core.problems.arms.velocity_limits import velocity_limits
    from loink_ros.core.problems.registry import make_problem
    from loink_ros.tools.bench.empty_relay import empty_relay_process
    from loink_ros.tools.bench.stream_paths import paths as stream_paths
    from loink_ros.tools.node_process import isolate_ros_environment
    isolate_ros_environment()
    problem = make_problem('panda_full')
    limits = velocity_limits(problem)
    namespace = f'hw_bench_{os.getpid()}'
    with tempfile.TemporaryDirectory() as tmp:
        shell = mock_robot.Shell(mock_robot.launch_line(namespace), Path(tmp) / 'launch.log')
        relay = empty_relay_process(f'/hw_floor_{os.getpid()}')
        client = None
        try:
            if not shell.wait_for('call it with:', 120.0):
                raise RuntimeError('the hardware launch did not come up:\n' + shell.output()[-3000:])
            client = BenchClient(f'hw_bench_client_{os.getpid()}', f'/{namespace}/loink_node', relay.prefix)
            client.robot.wait_for_state()
            rates = {}
            for rate in RATES:
                chosen = stream_paths(problem, 'smooth', paths, duration_s, rate, seed)
                rates[f'{rate:g}_hz'] = measure_rate(client, problem, limits, chosen, rate)
        finally:
            if client is not None:
                client.close()
            relay.stop()
            code = shell.stop()
    return {'robot': 'panda_full', 'controller': 'joint_trajectory_controller (mock hardware)',
            'paths_per_rate': paths, 'path_seconds': duration_s, 'seed': seed,
            'launch': mock_robot.launch_line('NS'), 'launch_exit_code': code, 'rates': rates}


class BenchClient:
    """The robot's client (mock_robot.RobotClient), the node's PoseTracking, the relay's commands."""

    def __init__(self, name: str, node: str, relay: str):
        from geometry_msgs.msg import PoseStamped
        from trajectory_msgs.msg import JointTrajectory

        from loink_msgs.msg import PoseTracking
        self.robot = mock_robot.RobotClient(name, JOINTS)
        ros = self.robot.node
        self.trackings: list[tuple[float, np.ndarray, bool]] = []   # (target stamp, q, on target)
        self.relayed: list[tuple[float, float]] = []           # (target stamp, receipt)
        ros.create_subscription(PoseTracking, f'{node}/pose_tracking', self.on_tracking, 1000)
        ros.create_subscription(JointTrajectory, f'{relay}/commands', self.on_relayed, 1000)
        self.node_targets = ros.create_publisher(PoseStamped, f'{node}/target_pose', 1)
        self.relay_targets = ros.create_publisher(PoseStamped, f'{relay}/target_pose', 1)

    def on_tracking(self, msg) -> None:
        self.trackings.append((stamp_seconds(msg.header.stamp), np.array(msg.joint_state.position),
                               msg.on_target))

    def on_relayed(self, msg) -> None:
        self.relayed.append((stamp_seconds(msg.header.stamp), self.robot.now()))

    def publish(self, publisher, path, rate: float) -> np.ndarray:
        """The path's poses at `rate`, each stamped as it leaves; the stamps."""
        from geometry_msgs.msg import PoseStamped

        from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
        self.robot.wait_for_subscriber(publisher)
        stamps, next_time = [], time.monotonic()
        for position, rotation in zip(path.positions, path.rotations):
            msg = PoseStamped()
            msg.header.frame_id = 'panda_link0'
            p, o = msg.pose.position, msg.pose.orientation
            p.x, p.y, p.z = map(float, position)
            o.x, o.y, o.z, o.w = map(float, matrix_quaternion(rotation))
            now = self.robot.node.get_clock().now()
            msg.header.stamp = now.to_msg()
            publisher.publish(msg)
            stamps.append(1e-9 * now.nanoseconds)
            next_time += 1.0 / rate
            time.sleep(max(0.0, next_time - time.monotonic()))
        return np.array(stamps)

    def close(self) -> None:
        self.robot.close()


def stamp_seconds(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def measure_rate(client: BenchClient, problem, limits: np.ndarray, paths: list, rate: float) -> dict:
    latencies, floors, errors, trailed, trails, speeds, answered, published = [], [], [], [], [], [], 0, 0
    on_target = []
    for path in paths:
        client.robot.move_to(path.q[0], 2.0)
        first = len(client.robot.commands), len(client.trackings)
        stamps = client.publish(client.node_targets, path, rate)
        time.sleep(0.5)
        answers = node_latencies(client, *first)
        on_target += [flag for _, _, flag in client.trackings[first[1]:]]
        latencies += answers
        answered, published = answered + len(answers), published + len(stamps)
        times, q = client.robot.record.since(stamps[0])
        tip = np.array([problem.tip_pose(row)[0] for row in q])
        error, trail, at_trail = tracking(times, tip, stamps, path.positions)
        errors.append(error)
        trailed.append(at_trail)
        trails.append(trail)
        speeds.append([float((mock_robot.speeds(times, q, w) / limits).max()) for w in SPEED_WINDOWS])
        first_relayed = len(client.relayed)
        client.publish(client.relay_targets, path, rate)
        time.sleep(0.5)
        floors += [receipt - sent for sent, receipt in client.relayed[first_relayed:]]
    node, floor = spread_ms(np.array(latencies)), spread_ms(np.array(floors))
    return {'targets_published': published, 'targets_answered_with_a_command': answered,
            'answers_on_target_share': float(np.mean(on_target)),
            'latency_ms': node, 'floor_latency_ms': floor,
            'p50_over_floor': node['p50'] / floor['p50'], 'p99_over_floor': node['p99'] / floor['p99'],
            'tracking_error_mm': spread_ms(np.concatenate(errors)),
            'trail_ms': [1e3 * t for t in trails],
            'tracking_error_at_trail_mm': spread_ms(np.concatenate(trailed)),
            'largest_speed_share_on_joint_states': {f'over_{1e3 * w:g}_ms': max(s[i] for s in speeds)
                                                    for i, w in enumerate(SPEED_WINDOWS)}}


def node_latencies(client: BenchClient, first_command: int, first_tracking: int) -> list[float]:
    """Each answered target's time from publication to the receipt of its command: the command
    whose positions its PoseTracking carries (the same q, in the controller's order; a q
    commanded twice, the robot standing, is left out)."""
    commands = client.robot.commands[first_command:]
    receipts = client.robot.received[first_command:]
    keys = [tuple(np.round(q, 12)) for _, _, q in commands]
    twice = {key for key, count in Counter(keys).items() if count > 1}
    by_q = {key: r for key, r in zip(keys, receipts) if key not in twice}
    out = []
    for sent, q, _ in client.trackings[first_tracking:]:
        receipt = by_q.get(tuple(np.round(q, 12)))
        if receipt is not None:
            out.append(receipt - sent)
    return out


def tracking(times: np.ndarray, tip: np.ndarray, stamps: np.ndarray,
             positions: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """The tip's distance from the target of the moment; the best-fitting trail and the
    distances from the target that much earlier (while the path lasts)."""
    def distances(delay: float) -> np.ndarray:
        index = np.searchsorted(stamps, times - delay, side='right') - 1
        keep = (index >= 0) & (times <= stamps[-1])
        return np.linalg.norm(tip[keep] - positions[index[keep]], axis=1)
    trail = min(TRAILS, key=lambda d: float(np.median(distances(d))))
    return distances(0.0), float(trail), distances(trail)


def spread_ms(values: np.ndarray) -> dict:
    """p50, p99, mean and max, in ms (or mm for distances in m)."""
    v = 1e3 * np.asarray(values, float)
    if not len(v):
        return {'count': 0}
    return {'count': int(len(v)), 'p50': float(np.median(v)), 'p99': float(np.percentile(v, 99)),
            'mean': float(v.mean()), 'max': float(v.max())}
