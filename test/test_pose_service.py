"""~/solve_pose (loink_msgs/SolvePose) on a real node: ranked full-pose answers, fresh
attempts, and a clear code for every bad request, the node serving on."""

import math
import time

import numpy as np
import pinocchio as pin
import pytest
from conftest import BEYOND
from node_requests import loink_code, set_pose, solve_pose

from loink_ros.core.problems.registry import make_problem


@pytest.fixture(scope='module')
def panda():
    return make_problem('panda_full')


def request(position, rotation, **fields):
    """A SolvePose request for `position` (m) and `rotation` (3 x 3) in panda_link0."""
    from loink_msgs.srv import SolvePose
    frame = fields.pop('frame', 'panda_link0')
    msg = SolvePose.Request(**fields)
    msg.pose.header.frame_id = frame
    set_pose(msg.pose.pose, position, rotation)
    return msg


def seconds(value):
    from builtin_interfaces.msg import Duration
    return Duration(sec=int(value), nanosec=round(value % 1 * 1e9))


def test_ranked_answers_reach_the_pose_cheapest_first(panda_full_node, panda):
    q = panda.sample_collision_free(1, np.random.default_rng(41))[0]
    position, rotation = panda.tip_pose(q)
    response = solve_pose(panda_full_node, request(position, rotation, count=4, avoid_collisions=True))
    assert response.success and response.error_code == loink_code('SUCCESS'), response.message
    assert 1 <= len(response.solutions) <= 4
    assert len(response.rotation_errors) == len(response.solutions)
    costs = [s.cost for s in response.solutions]
    assert costs == sorted(costs)
    for solution, angle in zip(response.solutions, response.rotation_errors):
        answer = np.array(solution.joint_state.position)
        reached, turned = panda.tip_pose(answer)
        assert np.linalg.norm(reached - position) <= 1e-5 and angle <= 1e-4
        assert np.linalg.norm(pin.log3(turned.T @ rotation)) <= 1e-4
        assert np.all(answer >= panda.lower) and np.all(answer <= panda.upper)
        assert not panda.self_collisions(answer)
    again = solve_pose(panda_full_node, request(position, rotation, count=4, avoid_collisions=True))
    assert [s.joint_state.position for s in again.solutions] == \
        [s.joint_state.position for s in response.solutions]
    fresh = solve_pose(panda_full_node, request(position, rotation, count=2, attempt=3))
    assert fresh.success and len(fresh.solutions) >= 1


def test_a_narrowed_joint_range_is_kept(panda_full_node, panda):
    q = panda.sample_collision_free(1, np.random.default_rng(42))[0]
    lower, upper = panda.lower.copy(), panda.upper.copy()
    lower[1], upper[1] = q[1] - 0.05, q[1] + 0.05
    response = solve_pose(panda_full_node, request(*panda.tip_pose(q), count=3,
                                             joint_lower=lower.tolist(), joint_upper=upper.tolist()))
    assert response.success, response.message
    for solution in response.solutions:
        assert lower[1] <= solution.joint_state.position[1] <= upper[1]


# Within reach (1.17 m straight up, the arm all but stretched) but the hand pointing down:
# no configuration has that pose, and that is not certain before the search.
UNSOLVABLE = ([0.0, 0.0, 1.17], np.diag([1.0, -1.0, -1.0]))


@pytest.mark.parametrize('case', ['nan', 'frame', 'link', 'count', 'weight_without_seed',
                                  'range', 'unsolvable'])
def test_bad_requests_get_a_clear_code_and_the_node_serves_on(panda_full_node, panda, case):
    position, rotation = panda.tip_pose(panda.example_configuration())
    expected = {'nan': 'INVALID_POSE', 'frame': 'INVALID_FRAME', 'link': 'INVALID_LINK',
                'count': 'INVALID_COUNT', 'weight_without_seed': 'INVALID_SEED_STATE',
                'range': 'INVALID_SEED_STATE', 'unsolvable': 'NO_SOLUTION'}[case]
    msg = request(position, rotation)
    if case == 'nan':
        msg.pose.pose.position.x = float('nan')
    elif case == 'frame':
        msg.pose.header.frame_id = 'world'
    elif case == 'link':
        msg.link = 'panda_link3'
    elif case == 'count':
        msg.count = 100_000
    elif case == 'weight_without_seed':
        msg.seed_weight = 10.0
    elif case == 'range':
        msg.joint_lower, msg.joint_upper = [0.0] * 6, [1.0] * 6
    else:
        msg = request(*UNSOLVABLE, timeout=seconds(0.02))
    response = solve_pose(panda_full_node, msg)
    assert not response.success and response.error_code == loink_code(expected), response.message
    assert response.message
    assert solve_pose(panda_full_node, request(position, rotation)).success


@pytest.mark.parametrize('position_only', [False, True])
@pytest.mark.parametrize('case', BEYOND)
def test_poses_beyond_the_reach_are_refused_at_once(panda_full_node, panda, reach_bound, case,
                                                    position_only):
    position = BEYOND[case](reach_bound)
    msg = request(position, np.eye(3), timeout=seconds(1.0), position_only=position_only)
    began = time.monotonic()
    response = solve_pose(panda_full_node, msg)
    elapsed = time.monotonic() - began
    assert response.error_code == loink_code('POSE_UNREACHABLE'), response.message
    assert not response.success and not response.solutions and not response.rotation_errors
    assert "from panda_link0, beyond the arm's reach (at most 1.19 m" in response.message
    assert f'pose {math.hypot(*position):.3g} m' in response.message
    assert elapsed < 0.5, elapsed  # the timeout is 1 s: no search ran
    assert solve_pose(panda_full_node, request(*panda.tip_pose(panda.example_configuration()))).success


def test_a_pose_of_another_link_is_checked_as_the_hand_it_puts_there(panda_full_node, panda):
    """panda_hand_tcp 5 m away, pointing back to the base, puts panda_hand 5.1 m away (the
    tcp is 0.1034 m along the hand's z)."""
    pointing_back = pin.rpy.rpyToMatrix(0.0, -np.pi / 2, 0.0)
    msg = request([5.0, 0.0, 0.0], pointing_back, link='panda_hand_tcp', timeout=seconds(1.0))
    response = solve_pose(panda_full_node, msg)
    assert response.error_code == loink_code('POSE_UNREACHABLE'), response.message
    assert 'pose of panda_hand_tcp puts panda_hand 5.1 m from panda_link0' in response.message


def test_a_pose_just_inside_the_reach_is_searched(panda_full_node, reach_bound):
    """1 mm inside the bound: maybe reachable, so not refused (the search decides)."""
    response = solve_pose(panda_full_node, request([0.0, 0.0, reach_bound - 1e-3], np.eye(3),
                                             timeout=seconds(0.02)))
    assert response.error_code != loink_code('POSE_UNREACHABLE'), response.message


@pytest.mark.parametrize('scale', [1e300, 1e-300])
def test_a_quaternion_of_any_length_is_its_rotation(panda_full_node, panda, scale):
    position, rotation = panda.tip_pose(panda.example_configuration())
    msg = request(position, rotation)
    o = msg.pose.pose.orientation
    o.x, o.y, o.z, o.w = o.x * scale, o.y * scale, o.z * scale, o.w * scale
    response = solve_pose(panda_full_node, msg)
    assert response.success, response.message


def test_models_without_the_whole_tip_position_refuse(planar3_node):
    response = solve_pose(planar3_node, request([0.2, 0.0, 0.5], np.eye(3), frame='base_link'))
    assert response.error_code == loink_code('POSE_NOT_SERVED') and 'tip_x' in response.message
