"""~/solve_pose (loink_msgs/SolvePose) on a real node: ranked full-pose answers, fresh
attempts, and a clear code for every bad request, the node serving on."""

import numpy as np
import pinocchio as pin
import pytest

from loink_ros.core.problems.registry import make_problem


@pytest.fixture(scope='module')
def panda():
    return make_problem('panda_full')


def request(position, rotation, **fields):
    from loink_msgs.srv import SolvePose
    from loink_ros.core.problems.rotation_chart import matrix_quaternion
    frame = fields.pop('frame', 'panda_link0')
    msg = SolvePose.Request(**fields)
    msg.pose.header.frame_id = frame
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = map(float, position)
    o.x, o.y, o.z, o.w = map(float, matrix_quaternion(rotation))
    return msg


def call(node, msg):
    from loink_msgs.srv import SolvePose
    return node.call(SolvePose, 'solve_pose', msg)


def code(name):
    from loink_msgs.msg import ErrorCode
    return getattr(ErrorCode, name)


def test_ranked_answers_reach_the_pose_cheapest_first(panda_full_node, panda):
    q = panda.sample_collision_free(1, np.random.default_rng(41))[0]
    position, rotation = panda.tip_pose(q)
    response = call(panda_full_node, request(position, rotation, count=4, avoid_collisions=True))
    assert response.success and response.error_code == code('SUCCESS'), response.message
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
    again = call(panda_full_node, request(position, rotation, count=4, avoid_collisions=True))
    assert [s.joint_state.position for s in again.solutions] == \
        [s.joint_state.position for s in response.solutions]
    fresh = call(panda_full_node, request(position, rotation, count=2, attempt=3))
    assert fresh.success and len(fresh.solutions) >= 1


def test_a_narrowed_joint_range_is_kept(panda_full_node, panda):
    q = panda.sample_collision_free(1, np.random.default_rng(42))[0]
    lower, upper = panda.lower.copy(), panda.upper.copy()
    lower[1], upper[1] = q[1] - 0.05, q[1] + 0.05
    response = call(panda_full_node, request(*panda.tip_pose(q), count=3,
                                             joint_lower=lower.tolist(), joint_upper=upper.tolist()))
    assert response.success, response.message
    for solution in response.solutions:
        assert lower[1] <= solution.joint_state.position[1] <= upper[1]


@pytest.mark.parametrize('case', ['nan', 'frame', 'link', 'count', 'weight_without_seed',
                                  'range', 'unreachable'])
def test_bad_requests_get_a_clear_code_and_the_node_serves_on(panda_full_node, panda, case):
    position, rotation = panda.tip_pose(panda.example_configuration())
    expected = {'nan': 'INVALID_POSE', 'frame': 'INVALID_FRAME', 'link': 'INVALID_LINK',
                'count': 'INVALID_COUNT', 'weight_without_seed': 'INVALID_SEED_STATE',
                'range': 'INVALID_SEED_STATE', 'unreachable': 'NO_SOLUTION'}[case]
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
        msg.pose.pose.position.x, msg.timeout.nanosec = 2.0, 20_000_000
    response = call(panda_full_node, msg)
    assert not response.success and response.error_code == code(expected), response.message
    assert response.message
    assert call(panda_full_node, request(position, rotation)).success


def test_models_without_the_whole_tip_position_refuse(planar3_node):
    response = call(planar3_node, request([0.2, 0.0, 0.5], np.eye(3), frame='base_link'))
    assert response.error_code == code('POSE_NOT_SERVED') and 'tip_x' in response.message
