"""A MoveIt user's first steps with a kinematics solver in move_group and servo_node, each a
pass or fail with its figures (`move_group_runs checks`; test_move_group asserts them)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from moveit_msgs.srv import GetPositionIK, ServoCommandType
from scipy.spatial.transform import Rotation

from loink_ros.tools.bench.move_group_session import (
    JUMP,
    SCENES,
    SEED,
    cartesian_bench,
    motion_figures,
    scene_bench,
    started,
    stop,
    work_folder,
)
from loink_ros.tools.move_group_client import (
    SUCCESS,
    MoveGroupClient,
    box,
    joint_limits,
    pose_error,
    pose_goal,
    pose_message,
    rate_loop,
    trajectory_joints,
    velocity_limits,
)
from loink_ros.tools.move_group_stack import BASE, GROUP, JOINTS, READY, TIP

IK_TARGET = [0.3, -0.5, 0.2, -2.0, 0.1, 1.8, 0.5]      # /compute_ik of its tip pose
PLAN_TARGET = [-0.4, -0.3, -0.2, -2.2, -0.1, 2.0, 1.0]  # a pose goal at its tip pose
# Plans among obstacles tried: OMPL is random, and move_group's ValidateSolution refuses a
# plan whose time-parameterised path grazes a box (both solvers: docs/MOVEIT.md); a user
# plans again.
PLAN_TRIES = 3
CONTROL_FAILED = -4
# Between and beyond the front pillars of SCENES['pillars'] (the tip at 0.71, 0, 0.32 m).
OBSTACLE_TARGET = [0.0, 0.6, 0.0, -1.5, 0.0, 2.1, 0.8]


def compute_ik(client: MoveGroupClient, limits: np.ndarray) -> dict:
    """/compute_ik of a reachable pose, seeded with the current state."""
    target = client.fk(np.array(IK_TARGET))
    request = GetPositionIK.Request()
    request.ik_request.group_name, request.ik_request.avoid_collisions = GROUP, True
    request.ik_request.robot_state.is_diff = True
    request.ik_request.pose_stamped.header.frame_id = BASE
    request.ik_request.pose_stamped.pose = pose_message(target)
    request.ik_request.ik_link_name = TIP
    request.ik_request.timeout.sec = 1
    answer = client.call(GetPositionIK, '/compute_ik', request)
    if answer.error_code.val != SUCCESS:
        return {'ok': False, 'error_code': answer.error_code.val}
    named = dict(zip(answer.solution.joint_state.name, answer.solution.joint_state.position))
    q = np.array([named[n] for n in JOINTS])
    metres, radians = pose_error(client.fk(q), target)
    inside = bool(np.all(q >= limits[:, 0]) and np.all(q <= limits[:, 1]))
    return {'ok': metres < 1e-4 and radians < 1e-3 and inside, 'error_m': metres,
            'error_rad': radians, 'inside_limits': inside}


def plan_and_execute(client: MoveGroupClient) -> dict:
    """A pose goal planned by OMPL from where the arm is, executed on the mock JTC."""
    goal = client.fk(np.array(PLAN_TARGET))
    response = client.plan(pose_goal(goal))
    if response.error_code.val != SUCCESS:
        return {'ok': False, 'error_code': response.error_code.val}
    q = trajectory_joints(response.trajectory)
    code = client.execute(response.trajectory)
    if code == CONTROL_FAILED and float(np.abs(client.current() - q[0]).max()) < 1e-6:
        # Sent before move_group's controller handle saw the JTC's action server (seconds
        # after start, DDS discovery): the arm did not move; the user's retry.
        time.sleep(1.0)
        code = client.execute(response.trajectory)
    time.sleep(0.3)
    arrived = float(np.abs(client.current() - q[-1]).max())
    metres = pose_error(client.fk(client.current()), goal)[0]
    return {'ok': code == SUCCESS and arrived < 1e-3 and metres < 2e-3, 'points': len(q),
            'execution_code': code, 'state_from_plan_end_rad': arrived, 'tip_error_m': metres}


def among_obstacles(client: MoveGroupClient) -> dict:
    """A pose goal behind boxes, from "ready": a plan found (PLAN_TRIES), every state of it
    collision-free."""
    client.set_scene([box(*item) for item in SCENES['pillars']])
    try:
        goal_q = np.array(OBSTACLE_TARGET)
        if not client.valid(goal_q):
            return {'ok': False, 'why': 'the goal configuration collides'}
        goal = client.fk(goal_q)
        for tries in range(1, PLAN_TRIES + 1):
            response = client.plan(pose_goal(goal), np.array(READY))
            if response.error_code.val == SUCCESS:
                break
        if response.error_code.val != SUCCESS:
            return {'ok': False, 'error_code': response.error_code.val, 'tries': tries}
        q = trajectory_joints(response.trajectory)
        valid = all(client.valid(row) for row in q)
        metres = pose_error(client.fk(q[-1]), goal)[0]
        return {'ok': valid and metres < 2e-3, 'points': len(q), 'all_states_valid': valid,
                'end_error_m': metres, 'tries': tries}
    finally:
        client.set_scene([])


def cartesian_line(client: MoveGroupClient) -> dict:
    """A 10 cm line down from where the arm is (an empty, is_diff start state: the current
    one, as MoveGroupInterface::computeCartesianPath sends it)."""
    now = client.current()
    end = client.fk(now)
    end[2] -= 0.10
    response = client.cartesian([end], max_step=0.005)
    q = trajectory_joints(response.solution)
    if len(q) == 0:
        return {'ok': False, 'fraction': response.fraction, 'error_code': response.error_code.val}
    steps = np.abs(np.diff(q, axis=0)).max() if len(q) > 1 else 0.0
    start_gap = float(np.abs(q[0] - now).max())
    metres = pose_error(client.fk(q[-1]), end)[0]
    return {'ok': response.fraction >= 1.0 - 1e-9 and metres < 1e-3 and steps < JUMP and start_gap < 1e-3,
            'fraction': response.fraction, 'points': len(q), 'largest_joint_step_rad': float(steps),
            'start_from_current_rad': start_gap, 'end_error_m': metres}


def servo_twist(client: MoveGroupClient, speeds: np.ndarray) -> dict:
    """Twist commands, 5 cm/s along panda_link0's x for 2 s: the tip moves along x, no flip."""
    client.servo_mode(ServoCommandType.Request.TWIST)
    time.sleep(0.5)
    before, began = client.fk(client.current()), time.monotonic()
    for _ in rate_loop(100.0, 200):
        client.send_twist(np.array([0.05, 0.0, 0.0]))
    time.sleep(0.5)
    after = client.fk(client.current())
    moved = after[:3] - before[:3]
    motion = motion_figures(*client.states_since(began), speeds)
    return {'ok': moved[0] > 0.05 and float(np.linalg.norm(moved[1:])) < 0.01 and motion['flips'] == 0,
            'moved_along_x_m': float(moved[0]), 'off_axis_m': float(np.linalg.norm(moved[1:])),
            **motion}


def servo_pose(client: MoveGroupClient, speeds: np.ndarray) -> dict:
    """Pose tracking (~/pose_target_cmds) to a pose 5 cm aside and turned 0.2 rad, sent at
    100 Hz for 3 s: the tip arrives (Servo's tolerances, 1 mm and 0.01 rad), no flip."""
    client.servo_mode(ServoCommandType.Request.POSE)
    start = client.fk(client.current())
    target = start.copy()
    target[1] += 0.05
    target[3:] = (Rotation.from_rotvec([0.0, 0.0, 0.2]) * Rotation.from_quat(start[3:])).as_quat()
    began = time.monotonic()
    for _ in rate_loop(100.0, 300):
        client.send_pose(target)
    metres, radians = pose_error(client.fk(client.current()), target)
    motion = motion_figures(*client.states_since(began), speeds)
    return {'ok': metres < 2e-3 and radians < 0.02 and motion['flips'] == 0,
            'error_m': metres, 'error_rad': radians, **motion}


def checks(solver: str, keep: Path | None = None) -> dict:
    with work_folder(keep, f'movegroup_checks_{solver}_') as folder:
        stack, client = started(folder, solver, servo=True)
        limits, speeds = joint_limits(stack.urdf), velocity_limits(stack.urdf)   # (the URDF is read)
        steps: dict[str, Callable[[], dict]] = {
            'compute_ik': lambda: compute_ik(client, limits),
            'pose_goal_planned_and_executed': lambda: plan_and_execute(client),
            'pose_goal_among_obstacles': lambda: among_obstacles(client),
            'cartesian_line': lambda: cartesian_line(client),
            'servo_twist': lambda: servo_twist(client, speeds),
            'servo_pose_tracking': lambda: servo_pose(client, speeds),
        }
        out = {}
        try:
            for name, step in steps.items():
                try:
                    out[name] = step()
                except Exception as error:   # noqa: BLE001 - one failed check, the others still run
                    out[name] = {'ok': False, 'exception': f'{type(error).__name__}: {error}'}
            # The bench's own sections, small, on the same processes (test_move_group).
            out['bench_sample'] = {'kinematics': solver,
                                   'scenes': {'pillars': scene_bench(client, limits, 'pillars', 2, SEED)},
                                   'cartesian': cartesian_bench(client, limits, 1, SEED)}
        finally:
            exits = stop(stack, client)
            out['logs'] = {name: _warnings(stack.log(name)) for name in stack.processes}
            out['exit_codes'] = exits
            # The plugin's start-up line, in both processes that load it.
            out['answers_in_process'] = {name: 'answers in-process' in stack.log(name)
                                         for name in ('move_group', 'servo_node')}
        return out


def _warnings(log: str) -> str:
    """A process's warning and error lines, the last 40."""
    return '\n'.join([line for line in log.splitlines() if '[WARN]' in line or '[ERROR]' in line][-40:])
