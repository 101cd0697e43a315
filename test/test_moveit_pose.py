"""GetPositionIK with full poses on the Panda (config/panda_full.yaml), asked as MoveIt asks:
the whole pose of panda_arm's tip, the robot state as seed, avoid_collisions, timeout."""
import importlib.util

import numpy as np
import pinocchio as pin
import pytest
from conftest import BEYOND
from node_requests import compute_ik, moveit_code, set_pose

# Set-up builds moveit_msgs: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(importlib.util.find_spec('moveit_msgs') is not None,
                                     'moveit_msgs is not importable: scripts/setup.sh builds it '
                                     'from ../shared/interfaces (source ./env.sh; on ROS: '
                                     'ros-<distro>-moveit-msgs)')

FINGERS = ['panda_finger_joint1', 'panda_finger_joint2']


@pytest.fixture(scope='module')
def panda():
    from loink_ros.core.problems.registry import make_problem
    return make_problem('panda_full')


@pytest.fixture(scope='module')
def node(panda_full_node):
    return panda_full_node


def reachable(panda, count, seed):
    return panda.sample_collision_free(count, np.random.default_rng(seed))


def pose_request(position, rotation, link='panda_hand', seed=None, timeout=0.0):
    from moveit_msgs.srv import GetPositionIK
    request = GetPositionIK.Request()
    ik = request.ik_request
    ik.group_name, ik.ik_link_name, ik.avoid_collisions = 'panda_arm', link, True
    ik.pose_stamped.header.frame_id = 'panda_link0'
    set_pose(ik.pose_stamped.pose, position, rotation)
    if seed is not None:
        ik.robot_state.joint_state.name = [f'panda_joint{i}' for i in range(1, 8)] + FINGERS
        ik.robot_state.joint_state.position = list(map(float, seed)) + [0.01, 0.01]
    ik.timeout.nanosec = int(timeout * 1e9)
    return request


def solved(response):
    return np.array(response.solution.joint_state.position[:7])


def test_full_poses_are_reached_exactly_inside_limits_and_free(node, panda):
    for q in reachable(panda, 8, 31):
        position, rotation = panda.tip_pose(q)
        response = compute_ik(node, pose_request(position, rotation))
        assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
        answer = solved(response)
        reached, turned = panda.tip_pose(answer)
        assert np.linalg.norm(reached - position) <= 1e-5
        assert np.linalg.norm(pin.log3(turned.T @ rotation)) <= 1e-4
        assert np.all(answer >= panda.lower) and np.all(answer <= panda.upper)
        assert not panda.self_collisions(answer)


def test_a_link_fixed_to_the_hand_is_served_with_its_own_pose(node, panda):
    """panda_arm's tip in MoveIt's config is panda_link8, turned 45 deg from panda_hand."""
    q = reachable(panda, 1, 32)[0]
    link8 = panda.model.getFrameId('panda_link8')
    pin.framesForwardKinematics(panda.model, panda.data, q)
    placement = panda.data.oMf[link8]
    response = compute_ik(node, pose_request(placement.translation, placement.rotation, 'panda_link8'))
    assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
    pin.framesForwardKinematics(panda.model, panda.data, solved(response))
    reached = panda.data.oMf[link8]
    assert np.linalg.norm(pin.log6(reached.actInv(placement)).vector) <= 1e-4


# Within reach (1.17 m straight up, the arm all but stretched) but the hand pointing down:
# no configuration has that pose, and that is not certain before the search.
UNSOLVABLE = ([0.0, 0.0, 1.17], np.diag([1.0, -1.0, -1.0]))


def test_an_unsolvable_pose_in_reach_times_out_within_its_timeout(node):
    import time
    began = time.monotonic()
    response = compute_ik(node, pose_request(*UNSOLVABLE, timeout=0.02))
    assert response.error_code.val == moveit_code('TIMED_OUT')
    assert 'pose error' in response.error_code.message
    assert time.monotonic() - began < 2.0
    assert compute_ik(node, pose_request(*reachable_pose(node))).error_code.val == moveit_code('SUCCESS')


@pytest.mark.parametrize('position_only', [False, True])
@pytest.mark.parametrize('case', BEYOND)
def test_poses_beyond_the_reach_get_no_ik_solution_at_once(node, reach_bound, case,
                                                            position_only):
    """NO_IK_SOLUTION well before the 1 s timeout (not TIMED_OUT after it), full pose or
    position_only_ik."""
    import math
    import time
    position = BEYOND[case](reach_bound)
    assert all(r.successful for r in node.set(position_only_ik=position_only))
    try:
        began = time.monotonic()
        response = compute_ik(node, pose_request(position, np.eye(3), timeout=1.0))
        elapsed = time.monotonic() - began
    finally:
        assert all(r.successful for r in node.set(position_only_ik=False))
    message = response.error_code.message
    assert response.error_code.val == moveit_code('NO_IK_SOLUTION'), message
    assert f"pose {math.hypot(*position):.3g} m from panda_link0, beyond the arm's reach " \
        '(at most 1.19 m' in message
    assert elapsed < 0.5, elapsed
    assert compute_ik(node, pose_request(*reachable_pose(node))).error_code.val == moveit_code('SUCCESS')


def reachable_pose(node):
    from loink_ros.core.problems.registry import make_problem
    panda = make_problem('panda_full')
    return panda.tip_pose(panda.example_configuration())


def test_joint_constraints_are_honoured(node, panda):
    from moveit_msgs.msg import JointConstraint
    q = reachable(panda, 1, 33)[0]
    position, rotation = panda.tip_pose(q)
    request = pose_request(position, rotation)
    request.ik_request.constraints.joint_constraints = [JointConstraint(
        joint_name='panda_joint1', position=float(q[0]), tolerance_above=0.05,
        tolerance_below=0.05, weight=1.0)]
    response = compute_ik(node, request)
    assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
    assert abs(solved(response)[0] - q[0]) <= 0.05 + 1e-12


@pytest.mark.parametrize('kind', ['bad_joint', 'outside_limits', 'position'])
def test_unusable_constraints_get_a_clear_code(node, kind):
    from moveit_msgs.msg import JointConstraint, PositionConstraint
    request = pose_request(*reachable_pose(node))
    constraints = request.ik_request.constraints
    if kind == 'bad_joint':
        constraints.joint_constraints = [JointConstraint(joint_name='wheel', position=0.0,
                                                         tolerance_above=0.1, tolerance_below=0.1)]
        expected, words = 'INVALID_GOAL_CONSTRAINTS', 'wheel'
    elif kind == 'outside_limits':
        constraints.joint_constraints = [JointConstraint(joint_name='panda_joint4', position=1.0,
                                                         tolerance_above=0.1, tolerance_below=0.1)]
        expected, words = 'NO_IK_SOLUTION', 'panda_joint4'
    else:
        constraints.position_constraints = [PositionConstraint(link_name='panda_hand')]
        expected, words = 'INVALID_GOAL_CONSTRAINTS', 'position constraints are not supported'
    response = compute_ik(node, request)
    assert response.error_code.val == moveit_code(expected)
    assert words in response.error_code.message


def test_seed_consistency_keeps_the_answer_near_the_seed(node, panda):
    q = reachable(panda, 1, 34)[0]
    position, rotation = panda.tip_pose(q)
    seed = np.clip(q + 0.05, panda.lower, panda.upper)
    optimal = solved(compute_ik(node, pose_request(position, rotation)))
    assert all(r.successful for r in node.set(seed_consistency=100.0))
    try:
        near = compute_ik(node, pose_request(position, rotation, seed=seed))
    finally:
        assert all(r.successful for r in node.set(seed_consistency=0.0))
    assert near.error_code.val == moveit_code('SUCCESS'), near.error_code.message
    assert np.linalg.norm(solved(near) - seed) <= np.linalg.norm(optimal - seed) + 1e-9
    assert np.linalg.norm(solved(near) - seed) < 0.2


def test_a_robot_state_beside_the_pose_continues_without_a_jump(node, panda):
    """What MoveIt's Cartesian paths, Servo and the RViz marker send: the current state as
    robot_state and a pose a step away. The answer continues from it (every joint moves a
    little), where the cost-optimal answer lies elsewhere for some of these poses."""
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(36)
    elsewhere = 0
    for q in reachable(panda, 8, 36):
        position, rotation = panda.tip_pose(q)
        step = rng.normal(size=3)
        position = position + 0.01 * step / np.linalg.norm(step)
        rotation = Rotation.from_rotvec(0.02 * rng.normal(size=3)).as_matrix() @ rotation
        response = compute_ik(node, pose_request(position, rotation, seed=q))
        assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
        assert np.abs(solved(response) - q).max() < 0.3
        optimal = solved(compute_ik(node, pose_request(position, rotation)))
        elsewhere += np.abs(optimal - q).max() > 0.3
    assert elsewhere >= 2


def test_a_continuation_with_no_answer_near_the_seed_fails_at_once(node, panda):
    """The robot state beside the pose, with joint constraints that hold two joints where
    the pose needs them to move: no answer near the seed, NO_IK_SOLUTION long before the
    timeout (not TIMED_OUT at it); a seed 7.9 rad outside a limit is no state of the arm:
    the cost-optimal answer."""
    import time

    from moveit_msgs.msg import JointConstraint
    rng = np.random.default_rng(38)
    for q in reachable(panda, 4, 38):
        position, rotation = panda.tip_pose(q)
        step = rng.normal(size=3)
        position = position + 0.01 * step / np.linalg.norm(step)
        request = pose_request(position, rotation, seed=q, timeout=2.0)
        request.ik_request.constraints.joint_constraints = [
            JointConstraint(joint_name=f'panda_joint{i + 1}', position=float(q[i]),
                            tolerance_above=0.0, tolerance_below=0.0, weight=1.0) for i in (1, 3)]
        began = time.monotonic()
        response = compute_ik(node, request)
        assert response.error_code.val == moveit_code('NO_IK_SOLUTION'), response.error_code.message
        assert 'would be a jump' in response.error_code.message
        assert time.monotonic() - began < 1.0
        outside = q.copy()
        outside[0] = panda.upper[0] + 7.9
        response = compute_ik(node, pose_request(position, rotation, seed=outside, timeout=2.0))
        assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
        optimal = compute_ik(node, pose_request(position, rotation))
        assert np.array_equal(solved(response), solved(optimal))


def test_position_only_ik_leaves_the_orientation_free(node, panda):
    q = reachable(panda, 1, 35)[0]
    position, _ = panda.tip_pose(q)
    upside = pin.exp3(np.array([np.pi, 0.0, 0.0]))  # no matter what orientation is asked
    assert all(r.successful for r in node.set(position_only_ik=True))
    try:
        response = compute_ik(node, pose_request(position, upside))
    finally:
        assert all(r.successful for r in node.set(position_only_ik=False))
    assert response.error_code.val == moveit_code('SUCCESS'), response.error_code.message
    assert np.linalg.norm(panda.tip_pose(solved(response))[0] - position) <= 1e-5


@pytest.mark.parametrize('bad', ['nan', 'zero_quaternion'])
def test_a_pose_that_is_no_pose_is_no_ik_solution(node, bad):
    request = pose_request(*reachable_pose(node))
    pose = request.ik_request.pose_stamped.pose
    if bad == 'nan':
        pose.position.y = float('nan')
    else:
        pose.orientation.x = pose.orientation.y = pose.orientation.z = pose.orientation.w = 0.0
    response = compute_ik(node, request)
    assert response.error_code.val == moveit_code('NO_IK_SOLUTION')
    assert ('NaN' in response.error_code.message) == (bad == 'nan')
    assert compute_ik(node, pose_request(*reachable_pose(node))).error_code.val == moveit_code('SUCCESS')
