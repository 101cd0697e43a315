"""The command lines a user types to call a running node, printed at start-up."""

import numpy as np
from rclpy.node import Node

from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
from loink_ros.core.runtime.solver import LOInKSolver

# `ros2 param set` waits 1 s for the node by default; a ros2 daemon that has just started
# may take longer to discover it ('Node not found').
PARAM_WAIT_S = 10


def flow_list(values: np.ndarray) -> str:
    """A YAML flow list of values rounded to 3 decimals, never `-0.0`."""
    return '[' + ', '.join(repr(round(float(v), 3) + 0.0) for v in values) + ']'


def usage_lines(node: Node, solver: LOInKSolver, target_topic: str, serves_poses: bool,
                pose_target_topic: str | None = None,
                cartesian_path_service: str | None = None) -> list[str]:
    """`ros2 service call` / `ros2 topic pub` lines for this node's model and names; the
    task is the model's example (the task of a known-good configuration), so they succeed;
    with `serves_poses` also ~/solve_pose, for the tip's pose there, with a
    `pose_target_topic` the pose stream of that pose, and with a `cartesian_path_service` a
    path from there: 10 cm down and 10 cm across."""
    task = flow_list(solver.example_task())
    service = node.resolve_service_name
    poses = [pose_line(service('~/solve_pose'), solver)] if serves_poses else []
    if cartesian_path_service:
        poses.append(cartesian_line(service(cartesian_path_service), solver, node))
    if pose_target_topic:
        poses.append(f'ros2 topic pub --rate 100 {node.resolve_topic_name(pose_target_topic)} '
                     f'geometry_msgs/msg/PoseStamped "{example_pose(solver)}"')
    return [*poses,
        f"ros2 service call {service('~/solve')} loink_msgs/srv/Solve "
        f"\"{{task: {task}, refine: true}}\"",
        f"ros2 service call {service('~/sample')} loink_msgs/srv/Sample "
        f"\"{{task: {task}, count: 5, spread: 0.5, refine: true}}\"",
        f"ros2 service call {service('~/get_model_info')} loink_msgs/srv/GetModelInfo",
        f"ros2 topic pub --rate 20 {node.resolve_topic_name(target_topic)} "
        f"loink_msgs/msg/TaskTarget \"{{task: {task}}}\"",
        f"ros2 param set {node.get_fully_qualified_name()} smoothing 5.0 --timeout {PARAM_WAIT_S}",
    ]


def example_pose(solver: LOInKSolver) -> str:
    """A PoseStamped, as YAML, of the tip at the model's example configuration."""
    problem = solver.problem
    q = solver.model.example_configuration
    position, rotation = problem.tip_pose(problem.example_configuration() if q is None else q)
    p = [round(float(v), 3) + 0.0 for v in position]
    o = [round(float(v), 3) + 0.0 for v in matrix_quaternion(rotation)]
    return (f"{{header: {{frame_id: {problem.base_frame}}}, pose: {{position: {{x: {p[0]}, "
            f"y: {p[1]}, z: {p[2]}}}, orientation: {{x: {o[0]}, y: {o[1]}, z: {o[2]}, "
            f"w: {o[3]}}}}}}}")


def cartesian_line(service: str, solver: LOInKSolver, node: Node) -> str:
    """GetCartesianPath from the model's example configuration: its tip 10 cm down, then 10 cm
    along y, in 1 cm steps, free of self-collision (down: the examples hold the arm high, where
    a path up leaves the reach)."""
    problem = solver.problem
    q = solver.model.example_configuration
    q = problem.example_configuration() if q is None else q
    position, rotation = problem.tip_pose(q)
    o = [round(float(v), 3) + 0.0 for v in matrix_quaternion(rotation)]
    orientation = f'orientation: {{x: {o[0]}, y: {o[1]}, z: {o[2]}, w: {o[3]}}}'
    points = [position + [0.0, 0.0, -0.1], position + [0.0, 0.1, -0.1]]
    waypoints = ', '.join(f'{{position: {{x: {p[0]}, y: {p[1]}, z: {p[2]}}}, {orientation}}}'
                          for p in (np.round(point, 3) + 0.0 for point in points))
    group = node.get_parameter('group_name').value
    return (f'ros2 service call {service} moveit_msgs/srv/GetCartesianPath "{{header: '
            f'{{frame_id: {problem.base_frame}}}, start_state: {{joint_state: {{name: '
            f'{list(problem.joint_names)}, position: {flow_list(q)}}}}}, group_name: {group}, '
            f'link_name: {problem.tip_frame}, waypoints: [{waypoints}], max_step: 0.01, '
            f'avoid_collisions: true}}"')


def pose_line(service: str, solver: LOInKSolver) -> str:
    """~/solve_pose of the tip's pose at the model's example configuration, 3 answers."""
    return (f'ros2 service call {service} loink_msgs/srv/SolvePose '
            f'"{{pose: {example_pose(solver)}, count: 3, avoid_collisions: true}}"')
