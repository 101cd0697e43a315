"""`loink bench moveit-plugin`: searchPositionIK through the MoveIt plugin in-process
(loink_kinematics with kinematics.yaml's loink_model, loaded by pluginlib as move_group loads
it; no node runs) against TRAC-IK Speed on the same poses with the same timeout.

Poses: forward kinematics of collision-free configurations drawn uniformly in the URDF's
limits (as `loink bench pose`): panda_link8's for the plugin (panda_arm's tip), the hand's
(the model's tip, rigid with it) for TRAC-IK and the judge. MoveIt's calling pattern: seed =
the joints' middle, kinematics.yaml's kinematics_solver_timeout (5 ms, as the Setup Assistant
writes it), no callback. Every answer is judged by Pinocchio: position <= 1e-5 m, rotation
<= 1e-4 rad, inside the limits; self-collisions are counted apart (the plugin leaves them to
MoveIt's solution callback). Regret: cost over the best of a 64-start reference
(`loink bench pose`'s), for each method's successes. Then 8 threads share one plugin
instance over the same poses: every answer must be valid; their throughput is reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import yaml
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.baselines.trac_ik import TracIk
from loink_ros.core.compiled.model_library import build_library
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.problems.rotation_chart import matrix_quaternion
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools import moveit_plugin
from loink_ros.tools.bench_pose import BENCH_SEED, bench_poses, reference
from loink_ros.tools.timing import load_average, speedups

DEFAULT_POSES = 1000
THREADS = 8
KINEMATICS_YAML = moveit_plugin.REPO / 'config' / 'kinematics.yaml'


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


def plugin_pass(configurations: np.ndarray, timeout: float, folder: Path) -> tuple[list[dict], dict]:
    """bench_inprocess_kinematics on panda_link8's poses of the configurations, the model's
    library built first (as `loink moveit-library panda_full`); one record per pose, and the
    threads' run."""
    model = load_model('panda_full')
    library = build_library(model, problem_for_model(model))
    pose_file = moveit_plugin.write_rows(folder / 'poses.txt', moveit_plugin.tip_poses(configurations))
    out = moveit_plugin.run_in_moveit_env(
        ['bench_inprocess_kinematics', str(moveit_plugin.panda_urdf()), str(moveit_plugin.PANDA_SRDF),
         'panda_arm', 'panda_link0', 'panda_link8', str(model.path), str(pose_file), str(timeout),
         str(THREADS)], timeout=3600,
        extra_env={'LOINK_CACHE_DIR': str(library.path.parent.parent)})
    if out.returncode != 0:
        raise RuntimeError(f'bench_inprocess_kinematics exited with {out.returncode}:\n{out.stderr[-4000:]}')
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{')]
    records = [r for r in lines if 'i' in r]
    threaded = [r for r in lines if 'thread_i' in r]
    threads = [r for r in lines if 'threads' in r]
    if len(records) != len(configurations) or len(threaded) != len(records) or len(threads) != 1:
        raise RuntimeError(f'{len(records)} answers for {len(configurations)} poses:\n{out.stderr[-4000:]}')
    return records, {**threads[0], 'answers': threaded}


def regrets(problem, pose_solver, answers, poses, ok, rng) -> dict:
    """Cost over the reference's best, per method, where that method succeeded."""
    best = [reference(pose_solver, t, rng, [q for q, good in zip(qs, flags) if good])
            for t, qs, flags in tqdm(zip(poses, zip(*answers.values()), zip(*ok.values())),
                                     total=len(poses), desc='reference', unit='pose')]
    out = {}
    for name, qs in answers.items():
        r = np.array([(problem.cost(q)[0] - b) / b for q, b, good in zip(qs, best, ok[name])
                      if good and np.isfinite(b)])
        out[name] = {'median': float(np.median(r)), 'p95': float(np.percentile(r, 95)),
                     'max': float(r.max()), 'poses': int(len(r))}
    return out


def threaded_figures(problem, threads: dict, poses: list[PoseTarget]) -> dict:
    """The threads' run: every SUCCESS answer judged as the serial ones; the others counted."""
    answers = threads.pop('answers')
    succeeded = [(np.array(r['q']), poses[r['thread_i']]) for r in answers if r['code'] == 1]
    valid = sum(judge(problem, q, t)[0] for q, t in succeeded)
    return {**threads, 'answers_per_s': 1e3 * threads['calls'] / threads['wall_ms'],
            'succeeded': len(succeeded), 'succeeded_and_valid': int(valid),
            'every_answer_valid': valid == len(succeeded)}


def run(count: int = DEFAULT_POSES, seed: int = BENCH_SEED) -> dict:
    model = load_model('panda_full')
    problem = problem_for_model(model)
    configurations, poses = bench_poses(problem, count, seed)
    timeout = kinematics_timeout()
    before = load_average()
    with TemporaryDirectory() as folder:
        records, threads = plugin_pass(configurations, timeout, Path(folder))
    trac = TracIk(problem, 'Speed', timeout_s=timeout)
    middle = 0.5 * (problem.lower + problem.upper)
    with threadpool_limits(1):
        trac_out = [trac.solve(t.position, matrix_quaternion(t.rotation), middle)
                    for t in tqdm(poses, desc='trac_ik', unit='pose')]
    plugin_ms = np.array([r['plugin_ms'] for r in records])
    plugin_q = [np.array(r['q']) if r['q'] else None for r in records]
    plugin, plugin_ok = method_figures(problem, plugin_q, poses, plugin_ms)
    trac_ms = np.array([r.time_ms for r in trac_out])
    trac_q = [r.q for r in trac_out]
    trac_fig, trac_ok = method_figures(problem, trac_q, poses, trac_ms)
    codes = {}
    for r in records:
        codes[str(r['code'])] = codes.get(str(r['code']), 0) + 1
    plugin['moveit_error_codes'] = codes
    plugin['later_than_timeout_plus_1ms'] = int((plugin_ms > 1e3 * timeout + 1.0).sum())
    pose_solver = PoseSolver(LOInKSolver(model, problem))
    regret = regrets(problem, pose_solver, {'plugin': plugin_q, 'trac_ik_speed': trac_q}, poses,
                     {'plugin': plugin_ok, 'trac_ik_speed': trac_ok}, np.random.default_rng(seed + 1))
    return {
        'what': 'searchPositionIK(pose, seed = middle of the limits, timeout) through '
                'pluginlib, in-process (loink_model: panda_full), one call per pose, wall time '
                'around the call',
        'poses': count, 'seed': seed, 'timeout_s': timeout,
        'load_average_before': before, 'load_average_after': load_average(),
        'plugin': {**plugin, 'regret': regret['plugin']},
        'trac_ik_speed': {**trac_fig, 'regret': regret['trac_ik_speed'],
                          'note': 'pytracik in the bench process, the same poses and timeout, '
                                  'seed = the middle of the limits'},
        'plugin_over_trac_ik_time': speedups(plugin_ms, trac_ms),
        'p50_ratio': float(np.median(plugin_ms) / np.median(trac_ms)),
        'p99_ratio': float(np.percentile(plugin_ms, 99) / np.percentile(trac_ms, 99)),
        'threads': threaded_figures(problem, threads, poses),
    }
