"""`loink bench moveit-cartesian`: MoveIt's own Cartesian motions through the kinematics plugin,
LOInK (the shipped config/kinematics.yaml) against KDL on the same paths in the same run.

bench_cartesian_kinematics (loink_kinematics/test) loads each plugin by pluginlib on
moveit_resources' Panda (panda_arm, tip panda_link8; `--model panda_full`, the default) or on
another model's own URDF with a group of its chain (`arm`), and runs moveit_core's
CartesianInterpolator::computeCartesianPath, what move_group's compute_cartesian_path service
and MoveGroupInterface::computeCartesianPath run: each waypoint's IK seeded with the previous
state, one attempt, the joint-space midpoints checked against the Cartesian ones (MoveIt's
default precision, 1 mm and 0.01 rad), max step 1 cm (0.035 rad). Start states are uniform in
the URDF's limits. Families:
- lines: straight tip translations of 5-30 cm in random directions;
- rotations: the tip turned in place by 0.2-1 rad about random axes;
- shapes: circles and squares of 10-30 cm in random planes through the start's tip, through
  the waypoints overload (a circle by 24 waypoints, a square by its corners);
- servo: searchPositionIK at 100 Hz seeded with the previous answer, as MoveIt Servo's pose
  tracking calls it (`return_approximate_solution`), along the pose stream bench's smooth
  paths (`loink bench stream`), the kinematics timeout (Servo's: half its 10 ms period).

Per plugin and family: paths completed (fraction 1), mean fraction, the largest joint step
between consecutive states, paths with a jump (some joint moving more than JUMP rad between
consecutive states, which lie at most 1 cm or 0.035 rad apart), the mean posture cost (the
panda_full model's cost) over the states, and the time per path (mean, median, p95; of all
paths, of the completed ones and of the others), the time per IK call by its error code (the
interpolator's calls, timed from outside the plugin: what a call that ends NO_IK_SOLUTION or
TIMED_OUT costs against the timeout); the servo loop's flips (a
step of some joint beyond JUMP rad from the previous call's answer: another branch), its
steps beyond FLIP_FACTOR x a joint's velocity limit x dt (`loink bench stream`'s flips; a
Servo-like loop has no velocity limit of its own: MoveIt Servo limits the commands after IK),
failures and call times.
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
from scipy.spatial.transform import Rotation

from loink_ros.core.compiled.model_library import build_library
from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.tools import moveit_plugin
from loink_ros.tools.bench.stream import FLIP_FACTOR
from loink_ros.tools.bench.stream_paths import paths
from loink_ros.tools.bench.timing import load_average

KDL = 'kdl_kinematics_plugin/KDLKinematicsPlugin'
GROUP, TIP = 'panda_arm', 'panda_link8'
JUMP = 0.3
SEED = 20261205
SERVO_RATE_HZ = 100.0
SERVO_DURATION_S = 10.0
FAMILIES = ('lines', 'rotations', 'shapes')
DEFAULT_LINES = 500


@dataclass(frozen=True)
class Robot:
    """The robot MoveIt loads (URDF, SRDF, the group and its tip) and the LOInK model of it."""

    urdf: Path
    srdf: Path
    model: Path
    group: str = GROUP
    tip: str = TIP


def panda() -> Robot:
    share = moveit_plugin.MOVEIT_WORK / 'install' / 'share'
    urdf = share / 'moveit_resources_panda_description' / 'urdf' / 'panda.urdf'
    srdf = share / 'moveit_resources_panda_moveit_config' / 'config' / 'panda.srdf'
    for path in (urdf, srdf):
        if not path.is_file():
            raise FileNotFoundError(f'{path} missing: {moveit_plugin.SETUP_HINT}')
    return Robot(urdf, srdf, load_model('panda_full').path)


def arm(name: str, folder: Path) -> Robot:
    """moveit_resources' Panda for 'panda_full', else the model's own URDF with a group of
    the chain from its base to its tip (an SRDF written into `folder`)."""
    if name == 'panda_full':
        return panda()
    model = load_model(name)
    problem = problem_for_model(model)
    robot = ElementTree.parse(problem.urdf).getroot().get('name')
    srdf = moveit_plugin.chain_srdf(folder / f'{name}.srdf', robot, 'arm', problem.base_frame,
                                    problem.tip_frame)
    return Robot(Path(problem.urdf), srdf, model.path, 'arm', problem.tip_frame)


def loink_parameters(model: Path) -> list[str]:
    """The shipped kinematics.yaml's panda_arm entry, loink_model as the model file's path
    (its other entries fit any arm)."""
    entry = yaml.safe_load((moveit_plugin.REPO / 'config' / 'kinematics.yaml').read_text())[GROUP]
    entry['loink_model'] = str(model)
    return [f'{k}={str(v).lower() if isinstance(v, bool) else v}' for k, v in entry.items()
            if k != 'kinematics_solver']


def kdl_parameters() -> list[str]:
    timeout = yaml.safe_load((moveit_plugin.REPO / 'config' / 'kinematics.yaml').read_text())
    return [f'kinematics_solver_timeout={timeout[GROUP]["kinematics_solver_timeout"]}']


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _pose_text(position: np.ndarray, rotation: np.ndarray) -> str:
    x, y, z, w = Rotation.from_matrix(rotation).as_quat()
    return ' '.join(f'{v:.17g}' for v in (*position, x, y, z, w))


def cases(robot: Robot, lines: int, rotations: int, shapes: int, seed: int = SEED) -> dict[str, list[str]]:
    """The families' case lines (bench_cartesian_kinematics's format), deterministic."""
    problem = problem_for_model(load_model(str(robot.model)))
    rng = np.random.default_rng(seed)

    def start() -> tuple[np.ndarray, str]:
        q = rng.uniform(problem.lower, problem.upper)
        return q, ' '.join(f'{v:.17g}' for v in q)

    out = {family: [] for family in FAMILIES}
    for _ in range(lines):
        _, q = start()
        out['lines'].append(f'line {q} ' + ' '.join(f'{v:.17g}' for v in rng.uniform(0.05, 0.30) * _unit(rng)))
    for _ in range(rotations):
        _, q = start()
        out['rotations'].append(f'rotate {q} ' + ' '.join(f'{v:.17g}' for v in _unit(rng))
                                + f' {rng.uniform(0.2, 1.0):.17g}')
    for i in range(shapes):
        q, text = start()
        pose = moveit_plugin.tip_poses(q[None], robot.tip, robot.urdf)[0]
        centre, rotation = pose[:3], Rotation.from_quat(pose[3:]).as_matrix()
        a = _unit(rng)
        b = np.cross(a, _unit(rng))
        b /= np.linalg.norm(b)
        size = rng.uniform(0.10, 0.30)
        if i % 2 == 0:   # a circle of diameter `size` through the start
            angles = np.linspace(0.0, 2.0 * np.pi, 25)[1:]
            points = [centre + 0.5 * size * ((np.cos(t) - 1.0) * a + np.sin(t) * b) for t in angles]
        else:            # a square of side `size` from the start
            points = [centre + size * a, centre + size * (a + b), centre + size * b, centre]
        waypoints = ' '.join(_pose_text(p, rotation) for p in points)
        out['shapes'].append(f'waypoints {text} {len(points)} {waypoints}')
    return out


def servo_cases(robot: Robot, count: int, seed: int = SEED) -> tuple[list[str], list[np.ndarray]]:
    """The stream bench's smooth paths, panda_link8's poses at 100 Hz, from the path's start:
    the case lines and the starts."""
    problem = problem_for_model(load_model(str(robot.model)))
    out, starts = [], []
    for path in paths(problem, 'smooth', count, SERVO_DURATION_S, SERVO_RATE_HZ, seed):
        poses = moveit_plugin.tip_poses(path.q, robot.tip, robot.urdf)
        start = ' '.join(f'{v:.17g}' for v in path.q[0])
        body = ' '.join(' '.join(f'{v:.17g}' for v in row) for row in poses[1:])
        out.append(f'servo {start} {len(poses) - 1} {body}')
        starts.append(path.q[0])
    return out, starts


def run_plugin(robot: Robot, plugin: str, parameters: list[str], lines: list[str],
               folder: Path, timeout_s: float = 3600) -> list[dict]:
    """bench_cartesian_kinematics on the case lines: one result object a case."""
    case_file = folder / f'cases-{plugin.split("/")[0]}-{len(lines)}.txt'
    case_file.write_text(''.join(line + '\n' for line in lines))
    out = moveit_plugin.run_in_moveit_env(
        ['bench_cartesian_kinematics', str(robot.urdf), str(robot.srdf), robot.group, robot.tip, plugin,
         str(case_file), *parameters], timeout=timeout_s)
    if out.returncode != 0:
        raise RuntimeError(f'bench_cartesian_kinematics {plugin} exited with {out.returncode}: '
                           f'{out.stderr[-2000:]}')
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{')]
    if len(results) != len(lines):
        raise RuntimeError(f'{plugin}: {len(results)} results for {len(lines)} cases')
    return results


def path_figures(problem, results: list[dict]) -> dict:
    """The figures of one family's paths for one plugin (module docstring)."""
    fractions = np.array([r['fraction'] for r in results])
    steps, jumped, costs = [], [], []
    for r in results:
        q = np.array(r['states'])
        step = np.abs(np.diff(q, axis=0)).max(axis=1) if len(q) > 1 else np.zeros(1)
        steps.append(float(step.max()))
        jumped.append(step.max() > JUMP)
        costs.extend(problem.cost(q))
    ms = np.array([r['ms'] for r in results])
    completed = fractions >= 1.0 - 1e-12
    jumps = int(np.sum(jumped))
    return {'paths': len(results), 'completed': float(np.mean(completed)),
            'completed_without_a_jump': float(np.mean(completed & ~np.array(jumped))),
            'mean_fraction': float(fractions.mean()),
            'no_progress': float(np.mean(fractions <= 0.0)),
            'largest_joint_step_rad': float(max(steps)), 'paths_with_a_jump': jumps,
            'mean_posture_cost': float(np.mean(costs)),
            'ms_per_path': times(ms),
            'ms_per_completed_path': times(ms[completed]),
            'ms_per_failed_path': times(ms[~completed]),
            'ms_per_ik_call': call_times(results)}


def call_times(results: list[dict]) -> dict:
    """The interpolator's IK calls, by MoveIt error code: how many, and their mean, median, p95
    and largest time (ms)."""
    ms = np.concatenate([r['call_ms'] for r in results]) if results else np.zeros(0)
    codes = np.concatenate([r['codes'] for r in results]).astype(int) if results else np.zeros(0, int)
    out = {}
    for code in sorted(set(codes.tolist()), reverse=True):
        chosen = ms[codes == code]
        out[_error_name(code)] = {
            'calls': int(len(chosen)), **times(chosen), 'max': float(chosen.max())}
    return out


def _error_name(code: int) -> str:
    from moveit_msgs.msg import MoveItErrorCodes
    names = {getattr(MoveItErrorCodes, n): n for n in dir(MoveItErrorCodes)
             if n.isupper() and isinstance(getattr(MoveItErrorCodes, n), int)}
    return names.get(code, str(code))


def times(ms: np.ndarray) -> dict:
    """Mean, median and p95 of some paths' times (ms); None where there is no path."""
    if not len(ms):
        return {'mean': None, 'median': None, 'p95': None}
    return {'mean': float(ms.mean()), 'median': float(np.median(ms)),
            'p95': float(np.percentile(ms, 95))}


def servo_figures(problem, results: list[dict], starts: list[np.ndarray]) -> dict:
    limits = velocity_limits(problem) / SERVO_RATE_HZ
    flips = fast = failures = 0
    calls = []
    for r, start in zip(results, starts):
        steps = np.abs(np.diff(np.vstack([start, r['states']]), axis=0))
        # A flip: a jump between two answers in a row; after failed calls the seed is older.
        answered = np.concatenate([[True], np.array(r['codes'][:-1]) == 1])
        flips += int(np.sum((steps.max(axis=1) > JUMP) & answered))
        fast += int(np.sum((steps / limits).max(axis=1) > FLIP_FACTOR))
        failures += int(np.sum(np.array(r['codes']) != 1))
        calls.extend(r['call_ms'])
    calls = np.array(calls)
    return {'paths': len(results), 'calls': len(calls), 'flips': flips,
            'steps_beyond_velocity_limits': fast, 'failed_calls': failures,
            'call_ms': {'median': float(np.median(calls)), 'p99': float(np.percentile(calls, 99)),
                        'max': float(calls.max())}}


def ratios(loink: dict, kdl: dict) -> dict:
    """LOInK over KDL for one family: completion and time per path."""
    return {'completed': loink['completed'] / max(kdl['completed'], 1e-12),
            'completed_without_a_jump': (loink['completed_without_a_jump']
                                         / max(kdl['completed_without_a_jump'], 1e-12)),
            'ms_per_path_mean': loink['ms_per_path']['mean'] / kdl['ms_per_path']['mean'],
            'ms_per_path_p95': loink['ms_per_path']['p95'] / kdl['ms_per_path']['p95']}


def run(lines: int = 500, rotations: int = 200, shapes: int = 100, servo: int = 20,
        model_name: str = 'panda_full', seed: int = SEED) -> dict:
    """Both plugins on the same paths of `model_name`'s arm (`arm`), the paths drawn from `seed`."""
    with TemporaryDirectory() as folder:
        robot = arm(model_name, Path(folder))
        model = load_model(str(robot.model))
        problem = problem_for_model(model)
        build_library(model, problem)   # as `loink moveit-library MODEL`
        families = cases(robot, lines, rotations, shapes, seed)
        servo_lines, servo_starts = servo_cases(robot, servo, seed)
        plugins = {'loink': ('loink_kinematics/LOInKKinematicsPlugin', loink_parameters(robot.model)),
                   'kdl': (KDL, kdl_parameters())}
        out = {'robot': f'{robot.urdf.name}, group {robot.group}, tip {robot.tip}',
               'model': Path(model_name).name, 'seed': seed,
               'kinematics_yaml': loink_parameters(Path(robot.model.name)),
               'load_average_before': load_average(), 'families': {}, 'servo': {}}
        began = time.perf_counter()
        for name, (plugin, parameters) in plugins.items():
            every = [line for family in FAMILIES for line in families[family]]
            results = run_plugin(robot, plugin, parameters, every, Path(folder))
            at = 0
            for family in FAMILIES:
                chunk = results[at:at + len(families[family])]
                at += len(chunk)
                out['families'].setdefault(family, {})[name] = path_figures(problem, chunk)
            if servo_lines:
                out['servo'][name] = servo_figures(
                    problem, run_plugin(robot, plugin, parameters, servo_lines, Path(folder)),
                    servo_starts)
    for family in FAMILIES:
        figures = out['families'][family]
        figures['ratio_loink_over_kdl'] = ratios(figures['loink'], figures['kdl'])
    out['seconds'] = time.perf_counter() - began
    out['load_average_after'] = load_average()
    return out
