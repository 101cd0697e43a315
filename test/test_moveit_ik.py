"""moveit_msgs/GetPositionIK, asked exactly as MoveIt's srv_kinematics_plugin asks.

The plugin sends the group name, the whole robot's joint state (joints outside the group
included, the seed in the group's joints), pose_stamped in the group's base frame,
ik_link_name = the group's tip, avoid_collisions = true and timeout 0. Position-only: the
planar3 model's task is the tip's x, so only pose.position.x counts.
"""
import importlib.util
import math

import numpy as np
import pytest
from node_requests import compute_ik, moveit_code

# Set-up builds moveit_msgs: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(importlib.util.find_spec('moveit_msgs') is not None,
                                     'moveit_msgs is not importable: scripts/setup.sh builds it '
                                     'from ../shared/interfaces (source ./env.sh; on ROS: '
                                     'ros-<distro>-moveit-msgs)')

GROUP = 'planar3_arm'   # config/planar3.yaml
# A robot around the planar arm: the group's joints plus a rail and a gripper.
ROBOT_JOINTS = ['rail', 'shoulder', 'elbow', 'wrist', 'gripper']
ROBOT_POSITIONS = [0.25, 0.1, -0.2, 0.3, -0.04]
NAN = float('nan')


@pytest.fixture(scope='module')
def robot():
    from loink_ros.core.problems.arms.planar3 import Planar3Problem
    return Planar3Problem()


def ik_request(x=0.2, group=GROUP, link='tip', frame='base_link', names=ROBOT_JOINTS,
               positions=ROBOT_POSITIONS):
    from moveit_msgs.srv import GetPositionIK
    request = GetPositionIK.Request()
    ik = request.ik_request
    ik.group_name, ik.ik_link_name, ik.avoid_collisions = group, link, True
    ik.robot_state.joint_state.name = list(names)
    ik.robot_state.joint_state.position = list(positions)
    ik.pose_stamped.header.frame_id = frame
    ik.pose_stamped.pose.position.x = x
    ik.pose_stamped.pose.position.z = 0.7     # not part of this model's task: ignored
    return request


def test_solves_the_group_and_echoes_the_rest(planar3_node, robot):
    response = compute_ik(planar3_node, ik_request(0.2))
    assert response.error_code.val == moveit_code('SUCCESS') and response.error_code.source == 'loink'
    state = response.solution.joint_state
    assert list(state.name) == ROBOT_JOINTS
    assert (state.position[0], state.position[4]) == (0.25, -0.04)
    assert robot.task(np.array(state.position[1:4]))[0, 0] == pytest.approx(0.2, abs=1e-8)


@pytest.mark.parametrize('frame', ['', 'base_link', '/base_link'])
def test_base_frame_spellings(planar3_node, frame):
    assert compute_ik(planar3_node, ik_request(frame=frame)).error_code.val == moveit_code('SUCCESS')


def test_seed_only_warm_starts(planar3_node):
    answers = [compute_ik(planar3_node, ik_request(-0.1, positions=[0.0, *seed, 0.0]))
               for seed in ([0.0, 0.0, 0.0], [0.7, -1.0, 0.9])]
    np.testing.assert_allclose(answers[0].solution.joint_state.position,
                               answers[1].solution.joint_state.position, atol=1e-8)


BAD = {
    'other group': ({'group': 'other_arm'}, 'INVALID_GROUP_NAME'),
    'other link': ({'link': 'hand'}, 'INVALID_LINK_NAME'),
    'other frame': ({'frame': 'world'}, 'FRAME_TRANSFORM_FAILURE'),
    'lengths differ': ({'positions': ROBOT_POSITIONS[:4]}, 'INVALID_ROBOT_STATE'),
    'NaN in state': ({'positions': [0.25, 0.1, NAN, 0.3, 0.0]}, 'INVALID_ROBOT_STATE'),
    'group joint missing': ({'names': ['rail', 'shoulder', 'elbow', 'gripper'],
                             'positions': [0.0] * 4}, 'INVALID_ROBOT_STATE'),
    'out of reach': ({'x': 3.0}, 'NO_IK_SOLUTION'),
    'NaN pose': ({'x': NAN}, 'NO_IK_SOLUTION'),
}


@pytest.mark.parametrize('case', BAD)
def test_bad_request_gets_its_code_then_served(planar3_node, case):
    fields, expected = BAD[case]
    response = compute_ik(planar3_node, ik_request(**fields))
    assert response.error_code.val == moveit_code(expected) and response.error_code.message
    assert compute_ik(planar3_node, ik_request()).error_code.val == moveit_code('SUCCESS')


def test_multi_tip_request_is_refused(planar3_node):
    request = ik_request()
    request.ik_request.ik_link_names = ['tip']
    request.ik_request.pose_stamped_vector = [request.ik_request.pose_stamped]
    assert compute_ik(planar3_node, request).error_code.val == moveit_code('INVALID_LINK_NAME')


def test_timed_out_above_task_tolerance(planar3_node):
    """No answer within the tolerance before the deadline (ik_timeout: timeout 0): TIMED_OUT."""
    assert all(r.successful for r in planar3_node.set(refine=False, task_tolerance=1e-12))
    try:
        response = compute_ik(planar3_node, ik_request(0.3))
        assert response.error_code.val == moveit_code('TIMED_OUT')
        assert 'task_tolerance' in response.error_code.message
    finally:
        assert all(r.successful for r in planar3_node.set(refine=True, task_tolerance=0.005))
    assert compute_ik(planar3_node, ik_request(0.3)).error_code.val == moveit_code('SUCCESS')


def test_panda_arm_request(panda_node):
    """panda_arm's tip panda_link8 sits where the model's panda_hand is: both are served."""
    from loink_msgs.srv import GetModelInfo
    from loink_ros.core.problems.registry import make_problem
    info = panda_node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
    panda = make_problem('panda')
    lower, upper = np.asarray(info.joint_lower), np.asarray(info.joint_upper)
    rng = np.random.default_rng(3)
    targets = []
    while len(targets) < 5:
        position = panda.task(rng.uniform(lower, upper))[0]
        if np.all(position > info.task_lower) and np.all(position < info.task_upper):
            targets.append(position)
    names = list(info.joint_names) + ['panda_finger_joint1', 'panda_finger_joint2']
    seed = list(0.5 * (lower + upper)) + [0.04, 0.04]
    for link, target in zip(['panda_link8', 'panda_hand'] * 3, targets):
        request = ik_request(group='panda_arm', link=link, frame=info.base_frame, names=names,
                             positions=seed)
        point = request.ik_request.pose_stamped.pose.position
        point.x, point.y, point.z = map(float, target)
        response = compute_ik(panda_node, request)
        assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
        state = response.solution.joint_state
        assert list(state.name) == names and list(state.position[7:]) == [0.04, 0.04]
        reached = panda.task(np.array(state.position[:7]))[0]
        assert np.linalg.norm(reached - target) <= 0.002 + 1e-9
        assert not math.isnan(sum(state.position))


@pytest.mark.parametrize('case', ['just_beyond', '5_m'])
def test_positions_beyond_the_reach_get_no_ik_solution_at_once(panda_node, case):
    """config/panda.yaml is position-only: the certified reach of the hand (1.19 m) plus
    task_tolerance (0.002 m) decides, well before the 1 s timeout."""
    import time

    from loink_msgs.srv import GetModelInfo
    from loink_ros.core.problems.arms.reach import reach
    from loink_ros.core.problems.registry import make_problem
    info = panda_node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
    panda = make_problem('panda')
    position = {'just_beyond': [0.0, 0.0, reach(panda).bound + 0.002 + 1e-3],
                '5_m': [3.0, 0.0, 4.0]}[case]
    request = ik_request(group='panda_arm', link='panda_link8', frame=info.base_frame,
                         names=list(info.joint_names),
                         positions=list(0.5 * (np.asarray(info.joint_lower)
                                               + np.asarray(info.joint_upper))))
    request.ik_request.timeout.sec = 1
    point = request.ik_request.pose_stamped.pose.position
    point.x, point.y, point.z = position
    began = time.monotonic()
    response = compute_ik(panda_node, request)
    assert time.monotonic() - began < 0.5
    message = response.error_code.message
    assert response.error_code.val == moveit_code('NO_IK_SOLUTION'), message
    assert f'pose of panda_link8 puts panda_hand {math.hypot(*position):.3g} m from ' \
        f"{info.base_frame}, beyond the arm's reach (at most 1.19 m" in message
    point.x, point.y, point.z = map(float, panda.task(panda.example_configuration())[0])
    response = compute_ik(panda_node, request)
    assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message


# A hand position by the base where the Panda model's optimum has the fingers on link 1.
COLLIDING_OPTIMUM = (0.1611, -0.0153, 0.159)


@pytest.mark.parametrize('avoid', [True, False])
def test_avoid_collisions_takes_the_next_free_sample(panda_node, avoid):
    from loink_msgs.srv import GetModelInfo
    from loink_ros.core.problems.arms.panda import PandaProblem
    info = panda_node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
    panda = PandaProblem()
    request = ik_request(group='panda_arm', link='panda_hand', frame=info.base_frame,
                         names=list(info.joint_names),
                         positions=list(0.5 * (np.asarray(info.joint_lower)
                                               + np.asarray(info.joint_upper))))
    request.ik_request.avoid_collisions = avoid
    point = request.ik_request.pose_stamped.pose.position
    point.x, point.y, point.z = COLLIDING_OPTIMUM
    response = compute_ik(panda_node, request)
    assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
    q = np.array(response.solution.joint_state.position)
    assert np.linalg.norm(panda.task(q)[0] - COLLIDING_OPTIMUM) < 1e-6
    assert bool(panda.self_collisions(q)) is not avoid
