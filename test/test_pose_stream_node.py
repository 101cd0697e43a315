"""The pose stream of a real loink_node over DDS (panda_full): PoseStamped targets on
~/target_pose, JointState on ~/joint_solution and loink_msgs/PoseTracking on
~/pose_tracking with the target's stamp; bad targets dropped and counted, the stream going
on; the tip link, the frame, two publishers and live smoothing. (The printed
`ros2 topic pub` line is run verbatim by test_ros2_cli.py.)"""
import queue
import time

import numpy as np
import pytest
from node_requests import set_pose

from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error

REPLY_S = 10.0
# The node measures dt on arrival; the client's send interval may differ by DDS jitter.
DT_SLACK = 2.0


@pytest.fixture(scope='module')
def arm():
    return make_problem('panda_full')


@pytest.fixture(scope='module')
def stream(panda_full_node):
    """Two target publishers, and queues of the node's JointState and PoseTracking answers."""
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    from loink_msgs.msg import PoseTracking
    node, name = panda_full_node.calls.node, panda_full_node.name
    solutions, tracking = queue.Queue(), queue.Queue()
    publishers = [node.create_publisher(PoseStamped, f'{name}/target_pose', 10) for _ in range(2)]
    states = node.create_publisher(JointState, '/joint_states', 10)
    node.create_subscription(JointState, f'{name}/joint_solution', solutions.put, 100)
    node.create_subscription(PoseTracking, f'{name}/pose_tracking', tracking.put, 100)
    deadline = time.monotonic() + 10.0
    while any(p.get_subscription_count() < 1 for p in [*publishers, states]):
        assert time.monotonic() < deadline, 'node did not subscribe'
        time.sleep(0.05)
    return publishers, solutions, tracking, states


def pose_msg(position, rotation, sec, frame='panda_link0'):
    from geometry_msgs.msg import PoseStamped
    msg = PoseStamped()
    msg.header.stamp.sec, msg.header.frame_id = sec, frame
    set_pose(msg.pose, position, rotation)
    return msg


def drain(q: queue.Queue) -> None:
    while not q.empty():
        q.get_nowait()


def send_and_wait(stream, msg, publisher: int = 0):
    """Publish one target; the PoseTracking answer with its stamp."""
    publishers, _, tracking, _ = stream
    publishers[publisher].publish(msg)
    while True:
        answer = tracking.get(timeout=REPLY_S)
        if answer.header.stamp.sec == msg.header.stamp.sec:
            return answer


def diagnostics_value(panda_full_node, key: str) -> str:
    """One of the node's /diagnostics values, from its next report."""
    from diagnostic_msgs.msg import DiagnosticArray
    reports = queue.Queue()
    node = panda_full_node.calls.node
    subscription = node.create_subscription(DiagnosticArray, '/diagnostics', reports.put, 10)
    try:
        while True:
            for status in reports.get(timeout=REPLY_S).status:
                if status.name == panda_full_node.name:
                    return {kv.key: kv.value for kv in status.values}[key]
    finally:
        node.destroy_subscription(subscription)


def test_a_path_is_followed_on_target_within_the_velocity_limits(panda_full_node, stream, arm):
    """A slow joint-space path's tip poses at 50 Hz: every answer on its target, with the
    target's stamp, joint steps within the URDF's limits over the time between targets."""
    _, solutions, _, _ = stream
    drain(solutions)
    start = arm.example_configuration()
    goal = np.clip(start + 0.3, arm.lower, arm.upper)
    limits = velocity_limits(arm)
    previous, previous_time = None, None
    for k, s in enumerate(np.linspace(0.0, 1.0, 60)):
        q = start + s * (goal - start)
        position, rotation = arm.tip_pose(q)
        sent = time.monotonic()
        answer = send_and_wait(stream, pose_msg(position, rotation, 1000 + k))
        assert answer.on_target, answer.lag
        assert answer.joint_state.header.stamp.sec == 1000 + k
        assert list(answer.joint_state.name) == list(arm.joint_names)
        q_answer = np.array(answer.joint_state.position)
        error = pose_error(arm, q_answer, PoseTarget(position, rotation))
        assert np.linalg.norm(error[:3]) <= 1e-5 and np.linalg.norm(error[3:]) <= 1e-4
        assert np.all(q_answer >= arm.lower) and np.all(q_answer <= arm.upper)
        if previous is not None:
            dt = sent - previous_time
            assert np.all(np.abs(q_answer - previous) <= DT_SLACK * limits * dt + 1e-9)
        previous, previous_time = q_answer, sent
        time.sleep(0.02)
    joint_state = solutions.get(timeout=REPLY_S)
    assert list(joint_state.name) == list(arm.joint_names)


def test_nan_poses_zero_quaternions_and_moving_frames_are_dropped_and_counted(
        panda_full_node, stream, arm):
    position, rotation = arm.tip_pose(arm.example_configuration())
    before = int(diagnostics_value(panda_full_node, 'pose stream dropped'))
    publishers, _, tracking, _ = stream
    bad_nan = pose_msg([np.nan, 0.0, 0.5], rotation, 2000)
    bad_zero = pose_msg(position, rotation, 2001)
    bad_zero.pose.orientation.x = bad_zero.pose.orientation.y = 0.0
    bad_zero.pose.orientation.z = bad_zero.pose.orientation.w = 0.0
    bad_frame = pose_msg(position, rotation, 2002, frame='panda_link3')
    for msg in (bad_nan, bad_zero, bad_frame):
        publishers[0].publish(msg)
        time.sleep(0.1)
    answer = send_and_wait(stream, pose_msg(position, rotation, 2003))   # the stream goes on
    assert answer.on_target
    deadline = time.monotonic() + REPLY_S
    while int(diagnostics_value(panda_full_node, 'pose stream dropped')) < before + 3:
        assert time.monotonic() < deadline, 'the dropped targets were not counted'
    assert all(t.header.stamp.sec not in (2000, 2001, 2002) for t in list(tracking.queue))


def test_the_tip_link_parameter_and_two_publishers(panda_full_node, stream, arm):
    """Targets for panda_link8 (fixed to the tip, 45 deg about z) once pose_tip_link names it;
    answers to both publishers' targets, on target."""
    q = arm.example_configuration()
    tip_position, tip_rotation = arm.tip_pose(q)
    link8 = arm.rigid_links()['panda_link8']      # the tip in panda_link8's frame
    rotation = tip_rotation @ link8.rotation.T
    position = tip_position - rotation @ link8.translation
    assert panda_full_node.set(pose_tip_link='panda_link8')[0].successful
    try:
        for k in range(6):
            answer = send_and_wait(stream, pose_msg(position, rotation, 3000 + k), k % 2)
            assert answer.on_target and answer.position_error <= 1e-5
            q_answer = np.array(answer.joint_state.position)
            error = pose_error(arm, q_answer, PoseTarget(tip_position, tip_rotation))
            assert np.linalg.norm(error[:3]) <= 1e-5 and np.linalg.norm(error[3:]) <= 1e-4
    finally:
        assert panda_full_node.set(pose_tip_link='')[0].successful


def test_smoothing_changes_live_and_slows_the_posture_drift(panda_full_node, stream, arm):
    """A stream that starts at the robot's state (/joint_states), the same pose held: with
    mu = 0 the posture drifts towards the cost's optimum faster than with mu = 1000 (the live
    parameter takes effect in the stream)."""
    from sensor_msgs.msg import JointState
    q = arm.sample_collision_free(1, np.random.default_rng(3))[0]   # off its optimum
    position, rotation = arm.tip_pose(q)
    states = stream[3]

    def cost_drop(mu: float, first_sec: int) -> float:
        assert panda_full_node.set(smoothing=mu)[0].successful
        time.sleep(0.6)                   # past stream_timeout: the next target starts a stream
        for _ in range(5):                # ... from this state, fresh (joint_states_max_age)
            states.publish(JointState(name=list(arm.joint_names), position=q.tolist()))
            time.sleep(0.01)
        answers = [np.array(send_and_wait(stream, pose_msg(position, rotation, first_sec + k))
                            .joint_state.position) for k in range(15)]
        assert np.abs(answers[0] - q).max() < 0.1     # it started at the robot's state
        return float(arm.cost(q)[0] - arm.cost(answers[-1])[0])

    try:
        fast, slow = cost_drop(0.0, 4000), cost_drop(1000.0, 5000)
    finally:
        panda_full_node.set(smoothing=0.0)
    assert fast > 0.0 and fast > 3.0 * max(slow, 0.0)


def test_targets_in_a_frame_fixed_to_the_base_are_moved_into_it(arm):
    """PoseStreamer.target: a pose given in a link fixed to the base (the xArm7's `world`, or
    a mount 90 deg about z and 0.5 m up) is that link's placement times the pose; a link
    that moves is refused, naming the frames that are fixed."""
    from types import SimpleNamespace

    import pinocchio as pin

    from loink_ros.node.pose_streaming import DroppedTarget, PoseStreamer
    from loink_ros.node.pose_targets import PoseLinks
    xarm = make_problem('xarm7_full')
    assert {'world', 'link_base'} <= set(xarm.base_rigid_frames())
    assert set(arm.base_rigid_frames()) == {'panda_link0'}
    mount = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi / 2), np.array([0.0, 0.0, 0.5]))
    streamer = SimpleNamespace(frames={**arm.base_rigid_frames(), 'mount': mount},
                               links=PoseLinks(arm), base_frame=arm.base_frame)
    position, rotation = arm.tip_pose(arm.example_configuration())
    in_mount = mount.actInv(pin.SE3(rotation, position))
    moved = PoseStreamer.target(streamer, pose_msg(in_mount.translation, in_mount.rotation, 0,
                                                   frame='mount'), '')
    np.testing.assert_allclose(moved.position, position, atol=1e-12)
    np.testing.assert_allclose(moved.rotation, rotation, atol=1e-12)
    with pytest.raises(DroppedTarget, match="'panda_link3' is not 'panda_link0' nor fixed"):
        PoseStreamer.target(streamer, pose_msg(position, rotation, 0, frame='panda_link3'), '')
    with pytest.raises(DroppedTarget, match='pose_tip_link'):
        PoseStreamer.target(streamer, pose_msg(position, rotation, 0), 'panda_link3')
