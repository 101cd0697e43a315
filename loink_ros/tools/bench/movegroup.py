"""`loink bench movegroup`: the plugin where MoveIt users run it, inside a running move_group
and servo_node on mock hardware (moveit_resources' Panda), LOInK (config/kinematics.yaml)
against KDL (panda_moveit_config's kinematics.yaml, as MoveIt ships it) on the same goals,
paths and streams in the same run; each solver in a fresh set of processes
(loink_ros.tools.bench.move_group_runs, in .move_group/env.sh's environment).

- OMPL pose goals among obstacles: per scene (move_group_session.SCENES), pose goals at the tip
  poses of random collision-free configurations planned from "ready" with RRTConnect (5 s):
  plans found, planning time (move_group's), the goal's posture (distance from the joint
  ranges' centres) and the path's joint-space length;
- /compute_cartesian_path through move_group: 20 cm lines and 0.5 rad rotations from random
  valid starts, 1 cm steps: completed without a jump (a joint moving more than 0.3 rad between
  points), time per path;
- Servo pose tracking (~/pose_target_cmds at 100 Hz) along the stream bench's smooth paths
  (`loink bench stream`'s, here 10 s with the fastest joint at SERVO_VELOCITY_SHARE of its
  limit, so that Servo's speed scales can follow), each from its start (moved there by
  OMPL and the JTC): flips, Servo's halt statuses, the tip's error to the pose commanded.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.tools import move_group_env, moveit_plugin
from loink_ros.tools.bench.moveit_cartesian import panda
from loink_ros.tools.bench.stream_paths import paths
from loink_ros.tools.bench.timing import load_average

SEED = 20261207
SERVO_RATE_HZ = 100.0
SERVO_SECONDS = 10.0
SERVO_VELOCITY_SHARE = 0.1
SOLVERS = ('loink', 'kdl')


def servo_cases(count: int, seed: int) -> list[dict]:
    """Smooth stream paths of panda_full: the start and panda_link8's poses at 100 Hz."""
    robot = panda()
    problem = problem_for_model(load_model(str(robot.model)))
    cases = []
    for path in paths(problem, 'smooth', count, SERVO_SECONDS, SERVO_RATE_HZ, seed,
                      SERVO_VELOCITY_SHARE):
        poses = moveit_plugin.tip_poses(path.q, robot.tip, robot.urdf)
        cases.append({'start': path.q[0].tolist(), 'poses': poses[1:].tolist()})
    return cases


def run_solver(solver: str, goals: int, cartesian: int, cases: Path | None, seed: int,
               folder: Path) -> dict:
    out = folder / f'{solver}.json'
    arguments = ['bench', '--kinematics', solver, '--goals', str(goals), '--cartesian',
                 str(cartesian), '--seed', str(seed), '--out', str(out)]
    if cases is not None:
        arguments += ['--servo-cases', str(cases)]
    done = move_group_env.run_python('loink_ros.tools.bench.move_group_runs', arguments,
                                     timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f'move_group_runs bench --kinematics {solver} failed:\n{done.stderr[-3000:]}')
    return json.loads(out.read_text())


def _ratio(a, b) -> float | None:
    return None if a is None or b in (None, 0) else a / b


def comparison(loink: dict, kdl: dict) -> dict:
    """LOInK against KDL per scene and overall, the issue's targets beside them."""
    scenes = {}
    for name, ours in loink['scenes'].items():
        theirs = kdl['scenes'][name]
        scenes[name] = {
            'plans_found': [ours['plans_found'], theirs['plans_found']],
            'planning_time_median_ratio': _ratio(ours['planning_time_s'].get('median'),
                                                 theirs['planning_time_s'].get('median')),
            'goal_posture_median_rad': [ours['goal_posture_rad'].get('median'),
                                        theirs['goal_posture_rad'].get('median')]}
    times = [s['planning_time_median_ratio'] for s in scenes.values()]
    targets = {
        'plans_found_at_least_kdl_in_every_scene': all(
            s['plans_found'][0] >= s['plans_found'][1] for s in scenes.values()),
        'lower_goal_posture_in_every_scene': all(
            s['goal_posture_median_rad'][0] < s['goal_posture_median_rad'][1] for s in scenes.values()),
        'planning_time_at_most_1.1x_kdl': all(r is not None and r <= 1.1 for r in times)}
    if loink.get('servo') and kdl.get('servo'):
        targets['servo_no_flips'] = loink['servo']['flips'] == 0
        targets['servo_tracking_error_at_most_kdl'] = (
            loink['servo']['tracking_error_m']['median'] <= kdl['servo']['tracking_error_m']['median'])
    return {'scenes': scenes, 'planning_time_median_ratio': {
        'min': min(times), 'max': max(times)} if None not in times else None, 'targets': targets}


def run(goals: int = 70, cartesian: int = 50, servo_paths: int = 5, seed: int = SEED) -> dict:
    if not move_group_env.built():
        raise FileNotFoundError(f'{move_group_env.MOVE_GROUP_ENV} missing: {move_group_env.SETUP_HINT}')
    with tempfile.TemporaryDirectory(prefix='bench_movegroup_') as name:
        folder = Path(name)
        cases = None
        if servo_paths:
            cases = folder / 'servo_cases.json'
            cases.write_text(json.dumps(servo_cases(servo_paths, seed)))
        load = load_average()
        results = {s: run_solver(s, goals, cartesian, cases, seed, folder) for s in SOLVERS}
    return {'bench': 'movegroup', 'seed': seed, 'goals_per_scene': goals,
            'cartesian_paths_per_family': cartesian, 'servo_paths': servo_paths,
            'load_average': load, **results, 'loink_vs_kdl': comparison(results['loink'], results['kdl'])}

