"""The pieces of `loink bench movegroup` and test_move_group's checks that run against a live
move_group and servo_node (loink_ros.tools.move_group_stack): the processes started and
stopped, the scenes, and each section's measures (OMPL goals, Cartesian paths, Servo
tracking). Runs in .move_group/env.sh's environment."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from moveit_msgs.msg import Constraints, JointConstraint
from moveit_msgs.srv import GetPositionIK, ServoCommandType
from scipy.spatial.transform import Rotation

from loink_ros.tools.move_group_client import (
    SUCCESS,
    MoveGroupClient,
    box,
    pose_error,
    pose_goal,
    rate_loop,
    trajectory_joints,
)
from loink_ros.tools.move_group_stack import JOINTS, READY, MoveGroupStack, wait_until

# Obstacles (name, size, centre in panda_link0, m), none touching the arm at "ready".
SCENES = {
    'pillars': [('pillar_left', (0.1, 0.1, 0.9), (0.5, 0.3, 0.45)),
                ('pillar_right', (0.1, 0.1, 0.9), (0.5, -0.3, 0.45)),
                ('pillar_back', (0.1, 0.1, 0.9), (-0.35, 0.35, 0.45))],
    'shelf': [('board', (0.35, 0.9, 0.02), (0.6, 0.0, 0.45)),
              ('back', (0.02, 0.9, 0.8), (0.8, 0.0, 0.4)),
              ('side', (0.35, 0.02, 0.8), (0.6, -0.45, 0.4))],
    'boxes': [('box_front', (0.2, 0.2, 0.3), (0.55, 0.0, 0.15)),
              ('box_left', (0.3, 0.2, 0.2), (0.1, 0.45, 0.6)),
              ('box_right', (0.2, 0.3, 0.5), (0.2, -0.5, 0.25))],
}
# A joint moving more than this between consecutive states: a flip (as moveit-cartesian).
JUMP = 0.3
SEED = 20261207
SERVO_RATE_HZ = 100.0
HALTS = {2: 'halt_for_singularity', 5: 'halt_for_collision', 6: 'joint_bound', -1: 'invalid'}


def started(folder: Path, solver: str, servo: bool) -> tuple[MoveGroupStack, MoveGroupClient]:
    """ros2_control_node, the controllers, move_group (and servo_node), ready to call."""
    stack = MoveGroupStack(folder, solver)
    client = MoveGroupClient(f'move_group_runs_{solver}')
    try:
        stack.start_hardware()
        client.publish_description(stack.urdf)
        stack.spawn_controllers()
        stack.start_move_group()
        if servo:
            stack.start_servo()
        client.call(GetPositionIK, '/compute_ik', GetPositionIK.Request(), timeout=90.0)
        if not wait_until(lambda: len(client.states) > 10, 30.0):
            raise RuntimeError('no /joint_states from the joint_state_broadcaster')
        # move_group answers before it has the world -> panda_link0 transform.
        if not wait_until(lambda: _answers_fk(client), 30.0, step=0.2):
            raise RuntimeError('move_group answered no /compute_fk within 30 s')
    except Exception:
        stop(stack, client)
        raise
    return stack, client


def _answers_fk(client: MoveGroupClient) -> bool:
    try:
        client.fk(np.array(READY))
        return True
    except RuntimeError:
        return False


def stop(stack: MoveGroupStack, client: MoveGroupClient) -> dict[str, int]:
    client.close()
    return stack.stop()


def random_goals(client: MoveGroupClient, limits: np.ndarray, count: int,
                 rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """(configuration, tip pose) of `count` collision-free configurations in the scene."""
    goals = []
    while len(goals) < count:
        q = rng.uniform(limits[:, 0], limits[:, 1])
        if client.valid(q):
            goals.append((q, client.fk(q)))
    return goals


def plan_figures(client: MoveGroupClient, goal: np.ndarray, centre: np.ndarray) -> dict:
    response = client.plan(pose_goal(goal), np.array(READY))
    found = response.error_code.val == SUCCESS and len(response.trajectory.joint_trajectory.points) > 0
    figures = {'found': found, 'error_code': response.error_code.val,
               'planning_time_s': response.planning_time}
    if found:
        q = trajectory_joints(response.trajectory)
        figures['posture_rad'] = float(np.linalg.norm(q[-1] - centre))
        figures['path_length_rad'] = float(np.sum(np.linalg.norm(np.diff(q, axis=0), axis=1)))
        figures['end_error_m'] = pose_error(client.fk(q[-1]), goal)[0]
    return figures


def summary(values: list[float]) -> dict:
    if not values:
        return {}
    return {'median': float(np.median(values)), 'p90': float(np.percentile(values, 90)),
            'mean': float(np.mean(values))}


def scene_bench(client: MoveGroupClient, limits: np.ndarray, name: str, goals: int,
                seed: int) -> dict:
    client.set_scene([box(*item) for item in SCENES[name]])
    if not client.valid(np.array(READY)):
        raise RuntimeError(f'scene {name} collides with the arm at ready')
    rng = np.random.default_rng([seed, sorted(SCENES).index(name)])
    centre = limits.mean(axis=1)
    runs = [plan_figures(client, pose, centre) for _, pose in random_goals(client, limits, goals, rng)]
    found = [r for r in runs if r['found']]
    return {'goals': goals, 'plans_found': len(found),
            'failures_by_code': _count(r['error_code'] for r in runs if not r['found']),
            'planning_time_s': summary([r['planning_time_s'] for r in runs]),
            'goal_posture_rad': summary([r['posture_rad'] for r in found]),
            'path_length_rad': summary([r['path_length_rad'] for r in found]),
            'largest_end_error_m': max((r['end_error_m'] for r in found), default=None)}


def _count(codes) -> dict[str, int]:
    counted: dict[str, int] = {}
    for code in codes:
        counted[str(code)] = counted.get(str(code), 0) + 1
    return counted


def cartesian_cases(client: MoveGroupClient, limits: np.ndarray, family: str, count: int,
                    rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """(start, end pose): lines of 20 cm or rotations in place of 0.5 rad, random directions."""
    cases = []
    for q, pose in random_goals(client, limits, count, rng):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        end = pose.copy()
        if family == 'lines':
            end[:3] += 0.2 * axis
        else:
            end[3:] = (Rotation.from_rotvec(0.5 * axis) * Rotation.from_quat(pose[3:])).as_quat()
        cases.append((q, end))
    return cases


def cartesian_bench(client: MoveGroupClient, limits: np.ndarray, count: int, seed: int) -> dict:
    client.set_scene([])
    out = {}
    for index, family in enumerate(('lines', 'rotations')):
        rng = np.random.default_rng([seed, 100 + index])
        completed = jumps = 0
        seconds, fractions, largest = [], [], 0.0
        for start, end in cartesian_cases(client, limits, family, count, rng):
            began = time.perf_counter()
            response = client.cartesian([end], start)
            seconds.append(time.perf_counter() - began)
            q = trajectory_joints(response.solution)
            step = float(np.abs(np.diff(np.vstack([start, q]), axis=0)).max()) if len(q) else 0.0
            largest = max(largest, step)
            jumps += step > JUMP
            completed += response.fraction >= 1.0 - 1e-9 and step <= JUMP
            fractions.append(round(response.fraction, 4))
        out[family] = {'paths': count, 'completed_without_a_jump': completed / count,
                       'paths_with_a_jump': int(jumps), 'largest_joint_step_rad': largest,
                       'time_per_path_s': summary(seconds), 'fractions': fractions}
    return out


def move_to(client: MoveGroupClient, q: np.ndarray) -> None:
    """The arm to `q`, planned by OMPL from where it is and executed on the JTC."""
    goal = Constraints(joint_constraints=[
        JointConstraint(joint_name=n, position=float(v), tolerance_above=1e-3,
                        tolerance_below=1e-3, weight=1.0) for n, v in zip(JOINTS, q)])
    response = client.plan(goal)
    if response.error_code.val != SUCCESS:
        raise RuntimeError(f'no plan to the start: {response.error_code.val}')
    code = client.execute(response.trajectory)
    if code != SUCCESS:
        raise RuntimeError(f'moving to the start failed: {code}')


def motion_figures(times: np.ndarray, q: np.ndarray, speed_limits: np.ndarray) -> dict:
    """Flips and speeds in the arm's recorded states."""
    if len(q) < 2:
        return {'states': int(len(q)), 'flips': 0, 'largest_joint_step_rad': 0.0}
    steps = np.abs(np.diff(q, axis=0))
    # Speeds over 20 ms: the receipt times of single states are too noisy to divide by.
    span = max(1, int(round(0.02 * (len(times) - 1) / max(times[-1] - times[0], 1e-9))))
    speeds = np.abs(q[span:] - q[:-span]) / np.maximum(times[span:] - times[:-span], 1e-9)[:, None]
    return {'states': int(len(q)), 'flips': int(np.sum(steps.max(axis=1) > JUMP)),
            'largest_joint_step_rad': float(steps.max()),
            'largest_speed_over_limit': float((speeds / speed_limits).max()) if len(speeds) else 0.0}


def servo_track(client: MoveGroupClient, poses: np.ndarray, speed_limits: np.ndarray) -> dict:
    """Servo's pose tracking fed `poses` at SERVO_RATE_HZ: the motion, the halts, the tip's
    error to the pose commanded (sampled at 10 Hz) and at the end after 1 s."""
    client.servo_mode(ServoCommandType.Request.POSE)
    began, statuses = time.monotonic(), len(client.statuses)
    sampled, errors = [], []
    for k in rate_loop(SERVO_RATE_HZ, len(poses)):
        client.send_pose(poses[k])
        if k % 10 == 0:
            sampled.append((k, client.current()))
    for _ in rate_loop(SERVO_RATE_HZ, int(SERVO_RATE_HZ)):
        client.send_pose(poses[-1])
    times, q = client.states_since(began)
    errors = [pose_error(client.fk(state), poses[k])[0] for k, state in sampled]
    final = pose_error(client.fk(client.current()), poses[-1])
    halts = _count(HALTS[c] for c in client.statuses[statuses:] if c in HALTS)
    return {**motion_figures(times, q, speed_limits), 'halt_statuses': halts,
            'tracking_error_m': summary(errors), 'final_error_m': final[0], 'final_error_rad': final[1]}


def servo_bench(client: MoveGroupClient, cases: list[dict], speed_limits: np.ndarray) -> dict:
    client.set_scene([])
    runs = []
    for case in cases:
        move_to(client, np.array(case['start']))
        runs.append(servo_track(client, np.array(case['poses']), speed_limits))
    return {'paths': len(runs), 'flips': sum(r['flips'] for r in runs),
            'paths_with_a_halt': sum(bool(r['halt_statuses']) for r in runs),
            'largest_speed_over_limit': max((r['largest_speed_over_limit'] for r in runs), default=0.0),
            'tracking_error_m': summary([r['tracking_error_m']['median'] for r in runs]),
            'final_error_m': summary([r['final_error_m'] for r in runs]), 'runs': runs}


@contextmanager
def work_folder(keep: Path | None, prefix: str) -> Iterator[Path]:
    """`keep` (made if missing; the processes' logs and parameter files stay there), else a
    temporary folder."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as name:
        yield Path(name)
