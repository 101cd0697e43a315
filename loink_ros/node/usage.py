"""The command lines a user types to call a running node, printed at start-up."""

import numpy as np
from rclpy.node import Node

from loink_ros.core.runtime.solver import LOInKSolver


def flow_list(values: np.ndarray) -> str:
    """A YAML flow list of values rounded to 3 decimals, never `-0.0`."""
    return '[' + ', '.join(repr(round(float(v), 3) + 0.0) for v in values) + ']'


def usage_lines(node: Node, solver: LOInKSolver, target_topic: str) -> list[str]:
    """`ros2 service call` / `ros2 topic pub` lines for this node's model and names; the
    task is the model's example (the task of a known-good configuration), so they succeed."""
    task = flow_list(solver.example_task())
    service = node.resolve_service_name
    return [
        f"ros2 service call {service('~/solve')} loink_msgs/srv/Solve "
        f"\"{{task: {task}, refine: true}}\"",
        f"ros2 service call {service('~/sample')} loink_msgs/srv/Sample "
        f"\"{{task: {task}, count: 5, spread: 0.5, refine: true}}\"",
        f"ros2 service call {service('~/get_model_info')} loink_msgs/srv/GetModelInfo",
        f"ros2 topic pub --rate 20 {node.resolve_topic_name(target_topic)} "
        f"loink_msgs/msg/TaskTarget \"{{task: {task}}}\"",
        f"ros2 param set {node.get_fully_qualified_name()} smoothing 5.0",
    ]
