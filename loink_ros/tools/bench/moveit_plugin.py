"""`loink bench moveit-plugin`: searchPositionIK through the MoveIt plugin in-process
(loink_kinematics with kinematics.yaml's loink_model, loaded by pluginlib as move_group loads
it; no node runs) against TRAC-IK Speed on the same poses with the same timeout, on any arm
model: a shipped one (--robot panda|xarm7) or a described arm's (--model PATH, `loink robot
train`).

Poses: forward kinematics of collision-free configurations drawn uniformly in the URDF's
limits (as `loink bench pose`), of the group's tip in its base frame: for the Panda, MoveIt's
panda_arm (panda_link0 to panda_link8; the model's tip, the hand, is rigid with it); for any
other arm, a group written here, the chain from the model's base frame to its tip frame, on
the model's own URDF. MoveIt's calling pattern: seed = the joints' middle,
kinematics.yaml's kinematics_solver_timeout (5 ms, as the Setup Assistant writes it). Every
answer is judged by Pinocchio: position <= 1e-5 m, rotation <= 1e-4 rad, inside the limits.

Passes: (1) no callback, self-collisions counted apart; (2) where the model has a collision
model (an SRDF), a solution callback that rejects self-colliding answers, as the planning
scene's does in move_group: the plugin's asks a checker process (self_collision_checker.py),
TRAC-IK's is emulated here as MoveIt's TRAC-IK plugin runs it (retry from a random seed
until the timeout); (3) 8 threads share one plugin instance over the same poses, no callback:
every answer must be valid; their throughput is reported. Regret: cost over the best of a
64-start reference (`loink bench pose`'s), for each method's successes in pass 1.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import yaml
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.baselines.trac_ik import TracIk
from loink_ros.core.compiled.model_library import build_library
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import ModelFile, load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import TOLERANCE, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools import moveit_plugin
from loink_ros.tools.bench.pose import BENCH_SEED, MODELS, bench_poses, reference
from loink_ros.tools.bench.pose_phases import pose_phases
from loink_ros.tools.bench.timing import load_average, speedups

DEFAULT_POSES = 10_000
THREADS = 8
KINEMATICS_YAML = moveit_plugin.REPO / 'config' / 'kinematics.yaml'
SUCCESS, NO_IK_SOLUTION = 1, -31     # moveit_msgs/MoveItErrorCodes
# pytracik fixes a solver's timeout when it is made: TRAC-IK's retries get the solver of the
# largest multiple of this step within the time left (MoveIt's plugin passes the time left).
RETRY_STEP_S = 1e-4


@dataclass(frozen=True)
class Arm:
    """A model and the MoveIt group the plugin serves it on."""

    robot: str
    model: ModelFile
    problem: KinematicProblem
    group: str
    tip: str            # the group's tip link: rigid with the model's tip frame
    srdf: Path | None   # None: the chain from the model's base to its tip, written by the bench


def arm(robot: str, model: str | None) -> Arm:
    """--robot's shipped model, or the model file `model`; the Panda as MoveIt's panda_arm."""
    if model is None and robot not in MODELS:
        raise SystemExit(f'bench moveit-plugin: unknown --robot {robot!r}; known: '
                         f'{", ".join(MODELS)}, or --model PATH')
    loaded = load_model(model or MODELS[robot])
    problem = problem_for_model(loaded)
    if problem.name == 'panda_full':
        return Arm('panda', loaded, problem, 'panda_arm', 'panda_link8', moveit_plugin.PANDA_SRDF)
    return Arm(robot if model is None else loaded.name, loaded, problem, 'arm', problem.tip_frame, None)


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


def code_counts(codes) -> dict[str, int]:
    values, counts = np.unique(np.asarray(codes, int), return_counts=True)
    return {str(v): int(c) for v, c in zip(values, counts)}


def method_figures(problem, answers: list, poses: list[PoseTarget],
                   ms: np.ndarray) -> tuple[dict, np.ndarray, np.ndarray]:
    """Figures of a pass without callback; per pose, (reached, reached and self-colliding)."""
    judged = np.array([judge(problem, q, t) for q, t in zip(answers, poses)])
    reached = judged[:, 0]
    return {'success': float(reached.mean()),
            'self_collision_free_among_successes': float(judged[reached, 1].mean()),
            'time_ms': times(ms)}, reached, reached & ~judged[:, 1]


def urdf_collision_meshes(urdf: Path) -> int:
    """Links of the URDF with a mesh among their collision geometry."""
    return sum(1 for link in ElementTree.parse(urdf).getroot().iter('link')
               if link.find('collision/geometry/mesh') is not None)


def group_srdf(arm_: Arm, folder: Path) -> Path:
    if arm_.srdf is not None:
        return arm_.srdf
    robot = ElementTree.parse(arm_.problem.urdf).getroot().get('name')
    return moveit_plugin.chain_srdf(folder / 'group.srdf', robot, arm_.group,
                                    arm_.problem.base_frame, arm_.tip)


def plugin_pass(arm_: Arm, configurations: np.ndarray, timeout: float, folder: Path) -> dict:
    """bench_inprocess_kinematics on the group tip's poses of the configurations, the model's
    library built first (as `loink moveit-library`), with the checker where the model has a
    collision model: its output lines sorted by kind."""
    problem = arm_.problem
    library = build_library(arm_.model, problem)
    poses = moveit_plugin.tip_poses(configurations, arm_.tip, problem.urdf, problem.base_frame,
                                    problem.joint_names)
    command = ['bench_inprocess_kinematics', str(problem.urdf), str(group_srdf(arm_, folder)),
               arm_.group, problem.base_frame, arm_.tip, str(arm_.model.path),
               str(moveit_plugin.write_rows(folder / 'poses.txt', poses)), str(timeout), str(THREADS)]
    if problem.has_collision_model:
        command.append(str(moveit_plugin.checker_script(folder / 'checker.sh', arm_.model.path)))
    out = moveit_plugin.run_in_moveit_env(
        command, timeout=3600, extra_env={'LOINK_CACHE_DIR': str(library.path.parent.parent)})
    if out.returncode != 0:
        raise RuntimeError(f'bench_inprocess_kinematics exited with {out.returncode}:\n'
                           f'{out.stderr[-4000:]}')
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{')]
    kinds = ('i', 'cb_i', 'thread_i', 'threads', 'joint_names', 'links_with_collision_meshes',
             'checker_round_trip_ms')
    found = {kind: [r for r in lines if kind in r] for kind in kinds}
    expected = len(configurations) if problem.has_collision_model else 0
    if (len(found['i']) != len(configurations) or len(found['cb_i']) != expected
            or len(found['thread_i']) != len(configurations) or len(found['threads']) != 1):
        raise RuntimeError(f'{len(found["i"])} answers for {len(configurations)} poses:\n'
                           f'{out.stderr[-4000:]}')
    if found['joint_names'][0]['joint_names'] != problem.joint_names:
        raise RuntimeError(f'the plugin\'s joints {found["joint_names"][0]} are not the model\'s '
                           f'{problem.joint_names}')
    return found


def recorded_path(path: Path) -> str:
    """A path as the bench's JSON records it: relative to the repository or to site-packages,
    else the file's name, so that committed figures name no folder of the machine that ran them."""
    path = Path(path).resolve()
    if path.is_relative_to(moveit_plugin.REPO) and '.venv' not in path.parts:
        return str(path.relative_to(moveit_plugin.REPO))
    if 'site-packages' in path.parts:
        return str(Path(*path.parts[path.parts.index('site-packages'):]))
    return f'{path.name} (outside the repository)'


def robot_model_meshes(arm_: Arm, loaded: dict) -> dict:
    """The C++ RobotModel's collision meshes against the URDF's: every one must have loaded
    (package:// paths resolve through AMENT_PREFIX_PATH)."""
    out = {'urdf': recorded_path(arm_.problem.urdf), 'urdf_links_with_collision_meshes':
           urdf_collision_meshes(arm_.problem.urdf), **loaded}
    if out['links_with_collision_meshes'] != out['urdf_links_with_collision_meshes']:
        raise RuntimeError(f'MoveIt\'s RobotModel loaded meshes of {out["links_with_collision_meshes"]} '
                           f'links, the URDF has {out["urdf_links_with_collision_meshes"]}')
    return out


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


def threaded_figures(problem, threads: dict, answers: list[dict], poses: list[PoseTarget]) -> dict:
    """The threads' run: every SUCCESS answer judged as the serial ones; the others counted."""
    succeeded = [(np.array(r['q']), poses[r['thread_i']]) for r in answers if r['code'] == SUCCESS]
    valid = sum(judge(problem, q, t)[0] for q, t in succeeded)
    return {**threads, 'answers_per_s': 1e3 * threads['calls'] / threads['wall_ms'],
            'succeeded': len(succeeded), 'succeeded_and_valid': int(valid),
            'every_answer_valid': valid == len(succeeded)}


def callback_figures(problem, poses: list[PoseTarget], qs: list, codes: list[int], ms: np.ndarray,
                     calls: np.ndarray, timeout: float, plain_collided: np.ndarray) -> dict:
    """A pass with the collision callback: success = at the pose, inside the limits and free
    of self-collision by the judge; how often the callback ran and rejected."""
    judged = np.array([judge(problem, q, t) for q, t in zip(qs, poses)])
    ok = judged[:, 0] & judged[:, 1]
    succeeded = np.asarray(codes) == SUCCESS
    rejected = calls - succeeded
    late = np.flatnonzero(ms > 1e3 * timeout + 1.0)
    return {'success': float(ok.mean()), 'moveit_error_codes': code_counts(codes),
            'success_answers_colliding': int((succeeded & judged[:, 0] & ~judged[:, 1]).sum()),
            'time_ms': times(ms),
            'later_than_timeout_plus_1ms': len(late),
            'late_calls': [{'pose': int(i), 'ms': float(ms[i]), 'code': int(codes[i]),
                            'callback_calls': int(calls[i])} for i in late],
            'callback_calls': {'total': int(calls.sum()), 'max': int(calls.max()),
                               'rejections': int(rejected.sum()),
                               'poses_with_a_rejection': int((rejected > 0).sum())},
            'poses_whose_uncallbacked_answer_collided': {
                'poses': int(plain_collided.sum()),
                'with_a_rejection_here': int((plain_collided & (rejected > 0)).sum()),
                'solved_collision_free_here': int((plain_collided & ok).sum())}}


def plugin_callback_section(problem, poses, found: dict, timeout: float, plain_collided) -> dict:
    records = found['cb_i']
    round_trip = np.array(found['checker_round_trip_ms'][0]['checker_round_trip_ms'])
    calls = np.array([r['callback_calls'] for r in records])
    ms = np.array([r['plugin_ms'] for r in records])
    figures = callback_figures(problem, poses, [np.array(r['q']) if r['q'] else None for r in records],
                               [r['code'] for r in records], ms, calls, timeout, plain_collided)
    for call in figures['late_calls']:
        call['callback_ms'] = records[call['pose']]['callback_ms']
    return {**figures,
            'callback': 'bench_inprocess_kinematics asks a checker process '
                        '(loink_ros.tools.bench.self_collision_checker: problem.self_collisions) '
                        'over pipes and sets NO_IK_SOLUTION when the answer collides',
            'time_note': 'the times include every callback call, each a pipe round trip to '
                         'the checker process (its cost below); move_group\'s callback would '
                         'run in-process',
            'time_ms_less_the_callbacks': times(ms - np.array([r['callback_ms'] for r in records])),
            'checker_round_trip_ms': {**times(round_trip), 'calls': len(round_trip),
                                      'of': 'the seed, before the pass'},
            'callback_ms_per_call_in_the_pass': float(sum(r['callback_ms'] for r in records)
                                                      / max(calls.sum(), 1))}


class TracIkWithCallback:
    """MoveIt's TRAC-IK plugin (traclabs' ROS 2 one) with a solution callback: solve with the
    time left; an answer the callback rejects is retried from a random seed in the limits,
    until the timeout. The callback: problem.self_collisions, in this process."""

    def __init__(self, problem, timeout: float, rng: np.random.Generator):
        steps = int(round(timeout / RETRY_STEP_S))
        self.solvers = [TracIk(problem, 'Speed', timeout_s=k * RETRY_STEP_S)
                        for k in range(1, steps + 1)]
        self.problem, self.timeout, self.rng = problem, timeout, rng

    def solve(self, target: PoseTarget, seed: np.ndarray) -> tuple[np.ndarray | None, float, int]:
        """(the accepted answer or None, wall ms, callback calls)."""
        quaternion = matrix_quaternion(target.rotation)
        began = time.perf_counter()
        end, calls = began + self.timeout, 0
        while (left := end - time.perf_counter()) >= RETRY_STEP_S:
            solver = self.solvers[min(int(left / RETRY_STEP_S), len(self.solvers)) - 1]
            q = solver.solve(target.position, quaternion, seed).q
            if q is not None:
                calls += 1
                if not self.problem.self_collisions(q):
                    return q, 1e3 * (time.perf_counter() - began), calls
                seed = self.rng.uniform(self.problem.lower, self.problem.upper)
        return None, 1e3 * (time.perf_counter() - began), calls


def trac_callback_section(problem, poses, timeout, seed, rng, plain_collided) -> dict:
    trac = TracIkWithCallback(problem, timeout, rng)
    with threadpool_limits(1):
        out = [trac.solve(t, seed) for t in tqdm(poses, desc='trac_ik + callback', unit='pose')]
    qs = [q for q, _, _ in out]
    codes = [SUCCESS if q is not None else NO_IK_SOLUTION for q in qs]
    figures = callback_figures(problem, poses, qs, codes, np.array([ms for _, ms, _ in out]),
                               np.array([c for _, _, c in out]), timeout, plain_collided)
    return {**figures, 'callback': 'emulated as MoveIt\'s TRAC-IK plugin runs one: solve with '
                                   'the time left, on rejection retry from a random seed in the '
                                   'limits until the timeout; the check, problem.self_collisions, '
                                   f'in this process (no pipe); the time left rounded down to '
                                   f'{1e3 * RETRY_STEP_S:g} ms (pytracik solvers of fixed timeouts)'}


def not_applicable(problem) -> dict:
    return {'applicable': False,
            'why': f'{problem.name} has no collision model (no SRDF: a described arm); '
                   'nothing to reject'}


def run(count: int = DEFAULT_POSES, seed: int = BENCH_SEED, robot: str = 'panda',
        model: str | None = None) -> dict:
    began = time.perf_counter()
    arm_ = arm(robot, model)
    problem = arm_.problem
    configurations, poses = bench_poses(problem, count, seed)
    timeout = kinematics_timeout()
    before = load_average()
    wall = {}
    with TemporaryDirectory() as folder:
        start = time.perf_counter()
        found = plugin_pass(arm_, configurations, timeout, Path(folder))
        wall['plugin_passes'] = time.perf_counter() - start
    records = found['i']
    trac = TracIk(problem, 'Speed', timeout_s=timeout)
    middle = 0.5 * (problem.lower + problem.upper)
    start = time.perf_counter()
    with threadpool_limits(1):
        trac_out = [trac.solve(t.position, matrix_quaternion(t.rotation), middle)
                    for t in tqdm(poses, desc='trac_ik', unit='pose')]
    wall['trac_ik'] = time.perf_counter() - start
    plugin_ms = np.array([r['plugin_ms'] for r in records])
    plugin_q = [np.array(r['q']) if r['q'] else None for r in records]
    plugin, plugin_ok, plugin_collided = method_figures(problem, plugin_q, poses, plugin_ms)
    trac_ms = np.array([r.time_ms for r in trac_out])
    trac_q = [r.q for r in trac_out]
    trac_fig, trac_ok, trac_collided = method_figures(problem, trac_q, poses, trac_ms)
    plugin['moveit_error_codes'] = code_counts([r['code'] for r in records])
    plugin['later_than_timeout_plus_1ms'] = int((plugin_ms > 1e3 * timeout + 1.0).sum())
    trac_fig['later_than_timeout_plus_1ms'] = int((trac_ms > 1e3 * timeout + 1.0).sum())
    # TRAC-IK's epsilon bounds each twist component; the judge bounds the norms.
    trac_fig['answered'] = float(np.mean([q is not None for q in trac_q]))
    if problem.has_collision_model:
        plugin_cb = plugin_callback_section(problem, poses, found, timeout, plugin_collided)
        start = time.perf_counter()
        trac_cb = trac_callback_section(problem, poses, timeout, middle,
                                        np.random.default_rng(seed + 2), trac_collided)
        wall['trac_ik_with_callback'] = time.perf_counter() - start
    else:
        plugin_cb = trac_cb = not_applicable(problem)
    start = time.perf_counter()
    with threadpool_limits(1):
        regret = regrets(problem, PoseSolver(LOInKSolver(arm_.model, problem)),
                         {'plugin': plugin_q, 'trac_ik_speed': trac_q}, poses,
                         {'plugin': plugin_ok, 'trac_ik_speed': trac_ok},
                         np.random.default_rng(seed + 1))
    wall['reference'] = time.perf_counter() - start
    start = time.perf_counter()
    phases = pose_phases(PoseSolver(LOInKSolver(arm_.model, problem)), poses, middle)
    wall['phases'] = time.perf_counter() - start
    wall['total'] = time.perf_counter() - began
    return {
        'what': f'searchPositionIK(pose, seed = middle of the limits, timeout) through '
                f'pluginlib, in-process (loink_model: {arm_.model.path.name}), one call per pose, '
                'wall time around the call',
        'robot': arm_.robot, 'model': recorded_path(arm_.model.path), 'model_version': arm_.model.version,
        'model_source': 'shipped (models/)' if arm_.model.problem.get('description') is None
                        else 'a described arm: the model `loink robot train` wrote',
        'group': {'name': arm_.group, 'base': problem.base_frame, 'tip': arm_.tip,
                  'model_tip': problem.tip_frame,
                  'srdf': recorded_path(arm_.srdf) if arm_.srdf else 'written by the bench: the chain alone'},
        'robot_model_meshes': robot_model_meshes(arm_, found['links_with_collision_meshes'][0]),
        'poses': count, 'seed': seed, 'timeout_s': timeout,
        'timeout_from': f'{KINEMATICS_YAML.name}: panda_arm\'s kinematics_solver_timeout, for every arm',
        'load_average_before': before, 'load_average_after': load_average(),
        'wall_s': wall,
        'plugin': {**plugin, 'regret': regret['plugin']},
        'trac_ik_speed': {**trac_fig, 'regret': regret['trac_ik_speed'],
                          'note': 'pytracik in the bench process, the same poses and timeout, '
                                  'seed = the middle of the limits'},
        'regret_poses': 'every pose (the reference took wall_s.reference)',
        'plugin_with_collision_callback': plugin_cb,
        'trac_ik_speed_with_collision_callback': trac_cb,
        'plugin_over_trac_ik_time': speedups(plugin_ms, trac_ms),
        'p50_ratio': float(np.median(plugin_ms) / np.median(trac_ms)),
        'p99_ratio': float(np.percentile(plugin_ms, 99) / np.percentile(trac_ms, 99)),
        'threads': threaded_figures(problem, found['threads'][0], found['thread_i'], poses),
        'phases': phases,
    }
