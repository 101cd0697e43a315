"""The command lines a user types to call a running node, printed at start-up."""

import numpy as np
from rclpy.node import Node

from loink_ros.core.runtime.solver import LOInKSolver


def usage_lines(node: Node, solver: LOInKSolver, target_topic: str) -> list[str]:
    """`ros2 service call` / `ros2 topic pub` lines for this node's model and names."""
    model = solver.model
    task = np.round(0.5 * (model.task_lower + model.task_upper), 3).tolist()
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
