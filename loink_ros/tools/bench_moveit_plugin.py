"""`loink bench moveit-plugin`: searchPositionIK through the MoveIt plugin (loink_kinematics,
loaded by pluginlib as move_group loads it) against a loink_node this bench starts on
panda_full, and TRAC-IK (Speed) in-process on the same poses with the same timeout.

Poses: forward kinematics of collision-free configurations drawn uniformly in the URDF's
limits (as `loink bench pose`): panda_link8's for the plugin (panda_arm's tip), the hand's
(the model's tip, rigid with it) for TRAC-IK and the judge. The timeout is config/kinematics.yaml's
kinematics_solver_timeout. After each plugin call the C++ bench sends the same request
straight to ~/solve_pose: its round trip and the node's own time (solve_time_ms) say how the
plugin's time splits into the node, the transport and the plugin. Every answer is judged by
Pinocchio: position <= 1e-5 m, rotation <= 1e-4 rad, inside the limits; self-collisions are
counted apart (the plugin leaves collision checks to MoveIt's solution callback).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import yaml
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.baselines.trac_ik import TracIk
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.problems.rotation_chart import matrix_quaternion
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE
from loink_ros.tools import moveit_plugin
from loink_ros.tools.bench_pose import BENCH_SEED, bench_poses
from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment
from loink_ros.tools.timing import load_average, speedups

DEFAULT_POSES = 1000
KINEMATICS_YAML = moveit_plugin.REPO / 'config' / 'kinematics.yaml'
POSE_BENCH_JSON = moveit_plugin.REPO / 'docs' / 'pose_bench_panda.json'


def kinematics_timeout() -> float:
    return float(yaml.safe_load(KINEMATICS_YAML.read_text())['panda_arm']['kinematics_solver_timeout'])


def judge(problem, q: np.ndarray | None, target: PoseTarget) -> tuple[bool, bool]:
    """(at the pose and inside the limits, free of self-collision) of one answer."""
    if q is None or np.any(q < problem.lower) or np.any(q > problem.upper):
        return False, False
    error = pose_error(problem, q, target)
    reached = np.linalg.norm(error[:3]) <= TOLERANCE[0] and np.linalg.norm(error[3:]) <= TOLERANCE[1]
    return bool(reached), not problem.self_collisions(q)


def times(ms: np.ndarray) -> dict:
    return {'median': float(np.median(ms)), 'p99': float(np.percentile(ms, 99)),
            'max': float(ms.max())}


def method_figures(problem, answers: list, poses: list[PoseTarget], ms: np.ndarray) -> dict:
    judged = np.array([judge(problem, q, t) for q, t in zip(answers, poses)])
    return {'success': float(judged[:, 0].mean()),
            'self_collision_free_among_successes': float(judged[judged[:, 0], 1].mean()),
            'time_ms': times(ms)}, judged[:, 0]


def plugin_pass(configurations: np.ndarray, timeout: float, folder: Path) -> list[dict]:
    """bench_loink_kinematics against a loink_node started here, on panda_link8's poses of
    the configurations; one record per pose."""
    pose_file = moveit_plugin.write_rows(folder / 'poses.txt', moveit_plugin.tip_poses(configurations))
    isolate_ros_environment()
    node = NodeProcess(f'/loink_plugin_bench_{os.getpid()}', params_file=moveit_plugin.PANDA_CONFIG,
                       cwd=moveit_plugin.REPO)
    try:
        out = moveit_plugin.run_in_moveit_env(
            ['bench_loink_kinematics', str(moveit_plugin.panda_urdf()), str(moveit_plugin.PANDA_SRDF),
             f'{node.prefix}/solve_pose', str(pose_file), str(timeout)], timeout=1800)
    finally:
        node.stop()
    if out.returncode != 0:
        raise RuntimeError(f'bench_loink_kinematics exited with {out.returncode}:\n{out.stderr[-4000:]}')
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{')]
    if len(records) != len(configurations):
        raise RuntimeError(f'{len(records)} answers for {len(configurations)} poses:\n{out.stderr[-4000:]}')
    return records


def run(count: int = DEFAULT_POSES, seed: int = BENCH_SEED) -> dict:
    problem = make_problem('panda_full')
    configurations, poses = bench_poses(problem, count, seed)
    timeout = kinematics_timeout()
    before = load_average()
    with TemporaryDirectory() as folder:
        records = plugin_pass(configurations, timeout, Path(folder))
    trac = TracIk(problem, 'Speed', timeout_s=timeout)
    nominal = problem.example_configuration()
    with threadpool_limits(1):
        trac_out = [trac.solve(t.position, matrix_quaternion(t.rotation), nominal)
                    for t in tqdm(poses, desc='trac_ik', unit='pose')]
    plugin_ms = np.array([r['plugin_ms'] for r in records])
    plugin_q = [np.array(r['q']) if r['q'] else None for r in records]
    plugin, plugin_ok = method_figures(problem, plugin_q, poses, plugin_ms)
    trac_ms = np.array([r.time_ms for r in trac_out])
    trac_fig, trac_ok = method_figures(problem, [r.q for r in trac_out], poses, trac_ms)
    codes = {}
    for r in records:
        codes[str(r['code'])] = codes.get(str(r['code']), 0) + 1
    plugin['moveit_error_codes'] = codes
    both = plugin_ok & trac_ok
    cost = {name: float(np.median([problem.cost(q)[0] for q, ok in zip(qs, both) if ok]))
            for name, qs in (('plugin', plugin_q), ('trac_ik_speed', [r.q for r in trac_out]))}
    node_ms = np.array([r['node_ms'] for r in records])
    service_ms = np.array([r['service_ms'] for r in records])
    return {
        'what': 'searchPositionIK(pose, seed = middle of the limits, timeout) through '
                'pluginlib, one call per pose, wall time around the call',
        'poses': count, 'seed': seed, 'timeout_s': timeout,
        'load_average_before': before, 'load_average_after': load_average(),
        'plugin': plugin,
        'trac_ik_speed_same_poses': {**trac_fig, 'note': 'pytracik in this process, the same '
                                     'timeout, seed = the example configuration'},
        'plugin_over_trac_ik_time': speedups(plugin_ms, trac_ms),
        'median_cost_where_both_succeed': cost,
        'split': {
            'node_ms': times(node_ms[node_ms >= 0]),
            'service_round_trip_ms': times(service_ms),
            'node_share_of_plugin_median': float(np.median(node_ms / plugin_ms)),
            'transport_ms_median': float(np.median(service_ms - node_ms)),
            'plugin_over_round_trip_ms_median': float(np.median(plugin_ms - service_ms)),
            'how': 'after each plugin call the same request straight to ~/solve_pose '
                   '(node_ms: its solve_time_ms)'},
        'trac_ik_pose_bench': pose_bench_trac_ik(),
    }


def pose_bench_trac_ik() -> dict | str:
    """TRAC-IK's figures in docs/pose_bench_panda.json (`loink bench pose --robot panda`)."""
    if not POSE_BENCH_JSON.is_file():
        return 'docs/pose_bench_panda.json absent'
    report = json.loads(POSE_BENCH_JSON.read_text())
    return {key: report[key] for key in report if key.startswith('trac_ik')} or 'no trac_ik entries'
