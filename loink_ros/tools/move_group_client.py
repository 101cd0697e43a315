"""A client of move_group and servo_node (loink_ros.tools.move_group_stack) as a MoveIt user's
code calls them: /compute_fk, /check_state_validity, /apply_planning_scene,
/plan_kinematic_path, /execute_trajectory, /compute_cartesian_path, Servo's command topics.
Runs in .move_group/env.sh's environment (the whole of moveit_msgs)."""

from __future__ import annotations

import threading
import time
import xml.etree.ElementTree as ElementTree

import numpy as np
import rclpy
from geometry_msgs.msg import Pose, PoseStamped, TwistStamped
from moveit_msgs.action import ExecuteTrajectory
from moveit_msgs.msg import (
    BoundingVolume,
    CollisionObject,
    Constraints,
    MotionPlanRequest,
    OrientationConstraint,
    PlanningScene,
    PositionConstraint,
    RobotState,
    ServoStatus,
)
from moveit_msgs.srv import (
    ApplyPlanningScene,
    GetCartesianPath,
    GetMotionPlan,
    GetPositionFK,
    GetStateValidity,
    ServoCommandType,
)
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from shape_msgs.msg import SolidPrimitive
from std_msgs.msg import String
from std_srvs.srv import SetBool

from loink_ros.tools.move_group_stack import BASE, GROUP, JOINTS, TIP

SUCCESS = 1
# Seconds after which a new client's first request is sent again (MoveGroupClient.call).
RESENDS = (0.5, 1.0, 2.0)


def pose_message(pose: np.ndarray) -> Pose:
    """(x, y, z, qx, qy, qz, qw) as a Pose."""
    message = Pose()
    message.position.x, message.position.y, message.position.z = (float(v) for v in pose[:3])
    o = message.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in pose[3:])
    return message


def pose_array(message: Pose) -> np.ndarray:
    p, o = message.position, message.orientation
    return np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])


def pose_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Position (m) and rotation (rad) between two poses."""
    dot = min(1.0, abs(float(np.dot(a[3:], b[3:]))))
    return float(np.linalg.norm(a[:3] - b[:3])), 2.0 * float(np.arccos(dot))


def arm_state(q: np.ndarray) -> RobotState:
    """The arm at `q`, every other joint as the robot has it (is_diff)."""
    state = RobotState(is_diff=True)
    state.joint_state.name = list(JOINTS)
    state.joint_state.position = [float(v) for v in q]
    return state


def _arm_joints(urdf: str) -> list:
    """The arm's <joint> elements (the URDF's joints, not a ros2_control block's)."""
    joints = {j.get('name'): j for j in ElementTree.fromstring(urdf).findall('joint')}
    return [joints[name] for name in JOINTS]


def joint_limits(urdf: str) -> np.ndarray:
    """(7, 2) lower and upper bounds of the arm's joints as MoveIt's RobotModel takes them
    from the URDF: the safety controller's soft limits where given, else <limit>."""
    rows = []
    for joint in _arm_joints(urdf):
        soft, limit = joint.find('safety_controller'), joint.find('limit')
        rows.append([float(limit.get('lower')), float(limit.get('upper'))] if soft is None else
                    [float(soft.get('soft_lower_limit')), float(soft.get('soft_upper_limit'))])
    return np.array(rows)


def velocity_limits(urdf: str) -> np.ndarray:
    return np.array([float(joint.find('limit').get('velocity')) for joint in _arm_joints(urdf)])


def box(name: str, size: tuple[float, float, float], centre: tuple[float, float, float]) -> CollisionObject:
    item = CollisionObject(id=name, operation=CollisionObject.ADD)
    item.header.frame_id = BASE
    item.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[float(s) for s in size])]
    item.primitive_poses = [pose_message(np.array([*centre, 0.0, 0.0, 0.0, 1.0]))]
    return item


def pose_goal(pose: np.ndarray, position_tolerance: float = 1e-3,
              orientation_tolerance: float = 0.01) -> Constraints:
    """A pose goal of TIP as MoveIt's MoveGroupInterface::setPoseTarget makes it."""
    position = PositionConstraint(link_name=TIP, weight=1.0)
    position.header.frame_id = BASE
    position.constraint_region = BoundingVolume(
        primitives=[SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[position_tolerance])],
        primitive_poses=[pose_message(np.array([*pose[:3], 0.0, 0.0, 0.0, 1.0]))])
    orientation = OrientationConstraint(
        link_name=TIP, orientation=pose_message(pose).orientation, weight=1.0,
        absolute_x_axis_tolerance=orientation_tolerance,
        absolute_y_axis_tolerance=orientation_tolerance,
        absolute_z_axis_tolerance=orientation_tolerance)
    orientation.header.frame_id = BASE
    return Constraints(position_constraints=[position], orientation_constraints=[orientation])


class MoveGroupClient:
    """One rclpy node spun by a background executor; calls block until answered."""

    def __init__(self, name: str = 'move_group_client'):
        rclpy.init()
        self.node = rclpy.create_node(name)
        self.states: list[tuple[float, np.ndarray]] = []   # (receipt time, arm joints)
        self.statuses: list[int] = []
        self._lock = threading.Lock()
        self.node.create_subscription(JointState, '/joint_states', self._on_state, 100)
        self.node.create_subscription(ServoStatus, '/servo_node/status',
                                      lambda m: self.statuses.append(m.code), 100)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._description = self.node.create_publisher(String, '/robot_description', latched)
        self._clients: dict[str, object] = {}
        self.twist = self.node.create_publisher(TwistStamped, '/servo_node/delta_twist_cmds', 10)
        self.pose = self.node.create_publisher(PoseStamped, '/servo_node/pose_target_cmds', 10)
        # Made once: an action client destroyed while the executor spins crashes the spin.
        self._execute = ActionClient(self.node, ExecuteTrajectory, '/execute_trajectory')
        self._executor = MultiThreadedExecutor(2)
        self._executor.add_node(self.node)
        self._spin = threading.Thread(target=self._executor.spin, daemon=True)
        self._spin.start()

    def close(self) -> None:
        self._executor.shutdown()
        self._spin.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown()

    def publish_description(self, urdf: str) -> None:
        """/robot_description, transient local, as robot_state_publisher offers it."""
        self._description.publish(String(data=urdf))

    def _on_state(self, message: JointState) -> None:
        named = dict(zip(message.name, message.position))
        if all(name in named for name in JOINTS):
            with self._lock:
                self.states.append((time.monotonic(), np.array([named[n] for n in JOINTS])))

    def current(self) -> np.ndarray:
        with self._lock:
            return self.states[-1][1].copy()

    def states_since(self, start: float) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            kept = [(t, q) for t, q in self.states if t >= start]
        return np.array([t for t, _ in kept]), np.array([q for _, q in kept])

    def call(self, kind, name: str, request, timeout: float = 60.0):
        """The reply to `request` on service `name`. A new client's first request is sent
        again after RESENDS s (the first reply wins): Fast DDS can match the request path of
        a just-discovered service before its reply path, and a reply sent between is lost."""
        client = self._clients.get(name)
        resends = RESENDS if client is None else ()
        if client is None:
            client = self._clients[name] = self.node.create_client(kind, name)
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f'{name} not offered within {timeout} s')
        done, futures = threading.Event(), []
        began = time.monotonic()
        for wait in (*resends, timeout):
            futures.append(client.call_async(request))
            futures[-1].add_done_callback(lambda _: done.set())
            if done.wait(max(0.0, min(wait, timeout - (time.monotonic() - began)))):
                break
        answered = [f for f in futures if f.done()]
        for future in futures:
            if not future.done():
                client.remove_pending_request(future)
        if not answered:
            raise TimeoutError(f'{name} did not answer within {timeout} s')
        return answered[0].result()

    def fk(self, q: np.ndarray) -> np.ndarray:
        request = GetPositionFK.Request(fk_link_names=[TIP], robot_state=arm_state(q))
        request.header.frame_id = BASE
        answer = self.call(GetPositionFK, '/compute_fk', request)
        if answer.error_code.val != SUCCESS:
            raise RuntimeError(f'/compute_fk failed: {answer.error_code.val}')
        return pose_array(answer.pose_stamped[0].pose)

    def valid(self, q: np.ndarray) -> bool:
        """Collision-free in the planning scene (and within the bounds)."""
        request = GetStateValidity.Request(robot_state=arm_state(q), group_name=GROUP)
        return bool(self.call(GetStateValidity, '/check_state_validity', request).valid)

    def set_scene(self, objects: list[CollisionObject]) -> None:
        """The world holds exactly `objects` (a diff removing every earlier one first)."""
        scene = PlanningScene(is_diff=True)
        scene.world.collision_objects = [CollisionObject(id='', operation=CollisionObject.REMOVE)]
        scene.world.collision_objects[0].header.frame_id = BASE
        answer = self.call(ApplyPlanningScene, '/apply_planning_scene', ApplyPlanningScene.Request(scene=scene))
        scene = PlanningScene(is_diff=True)
        scene.world.collision_objects = objects
        answer = self.call(ApplyPlanningScene, '/apply_planning_scene', ApplyPlanningScene.Request(scene=scene))
        if not answer.success:
            raise RuntimeError('/apply_planning_scene refused the scene')

    def plan(self, goal: Constraints, start: np.ndarray | None = None, planning_time: float = 5.0):
        """/plan_kinematic_path with RRTConnect from `start` (None: where the arm is): the
        MotionPlanResponse."""
        request = MotionPlanRequest(group_name=GROUP, pipeline_id='ompl',
                                    planner_id='RRTConnectkConfigDefault', num_planning_attempts=1,
                                    allowed_planning_time=planning_time,
                                    max_velocity_scaling_factor=1.0,
                                    max_acceleration_scaling_factor=1.0, goal_constraints=[goal])
        request.start_state = arm_state(start) if start is not None else RobotState(is_diff=True)
        answer = self.call(GetMotionPlan, '/plan_kinematic_path',
                           GetMotionPlan.Request(motion_plan_request=request),
                           timeout=planning_time + 30.0)
        return answer.motion_plan_response

    def execute(self, trajectory, timeout: float = 60.0) -> int:
        """The trajectory through /execute_trajectory (the JTC): MoveIt's error code."""
        if not self._execute.wait_for_server(timeout_sec=30.0):
            raise TimeoutError('no /execute_trajectory action server')
        sent = _wait(self._execute.send_goal_async(ExecuteTrajectory.Goal(trajectory=trajectory)), 30.0)
        if not sent.accepted:
            return -1
        return _wait(sent.get_result_async(), timeout).result.error_code.val

    def cartesian(self, waypoints: list[np.ndarray], start: np.ndarray | None = None,
                  max_step: float = 0.01, avoid_collisions: bool = True):
        """/compute_cartesian_path through TIP's `waypoints` (from where the arm is, when
        `start` is None): the response. No jump threshold: the caller judges the joints."""
        request = GetCartesianPath.Request(group_name=GROUP, link_name=TIP, max_step=max_step,
                                           jump_threshold=0.0, avoid_collisions=avoid_collisions,
                                           waypoints=[pose_message(w) for w in waypoints],
                                           max_velocity_scaling_factor=1.0,
                                           max_acceleration_scaling_factor=1.0)
        request.header.frame_id = BASE
        request.start_state = arm_state(start) if start is not None else RobotState(is_diff=True)
        return self.call(GetCartesianPath, '/compute_cartesian_path', request)

    def servo_mode(self, command_type: int) -> None:
        """Servo unpaused and switched to `command_type` (ServoCommandType.Request.TWIST/POSE)."""
        answer = self.call(ServoCommandType, '/servo_node/switch_command_type',
                           ServoCommandType.Request(command_type=command_type))
        if not answer.success:
            raise RuntimeError(f'servo_node refused command type {command_type}')
        self.call(SetBool, '/servo_node/pause_servo', SetBool.Request(data=False))

    def send_twist(self, linear: np.ndarray, angular: np.ndarray = np.zeros(3)) -> None:
        message = TwistStamped()
        message.header.frame_id = BASE
        message.header.stamp = self.node.get_clock().now().to_msg()
        t = message.twist
        t.linear.x, t.linear.y, t.linear.z = (float(v) for v in linear)
        t.angular.x, t.angular.y, t.angular.z = (float(v) for v in angular)
        self.twist.publish(message)

    def send_pose(self, pose: np.ndarray) -> None:
        message = PoseStamped(pose=pose_message(pose))
        message.header.frame_id = BASE
        message.header.stamp = self.node.get_clock().now().to_msg()
        self.pose.publish(message)


def _wait(future, timeout: float):
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout):
        raise TimeoutError(f'no answer within {timeout} s')
    return future.result()


def rate_loop(rate_hz: float, count: int):
    """Yields 0..count-1 at `rate_hz` (absolute deadlines: no drift)."""
    start = time.monotonic()
    for k in range(count):
        delay = start + k / rate_hz - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        yield k


def trajectory_joints(trajectory) -> np.ndarray:
    """The arm's positions at a RobotTrajectory's points, in JOINTS' order."""
    names = list(trajectory.joint_trajectory.joint_names)
    order = [names.index(n) for n in JOINTS]
    return np.array([[p.positions[i] for i in order] for p in trajectory.joint_trajectory.points])
