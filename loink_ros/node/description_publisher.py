"""`ros2 run loink_ros robot_description_publisher`: a model's URDF on `robot_description`
(reliable, transient local, as robot_state_publisher latches it), optionally with a
ros2_control block for mock hardware: what ros2_control_node and loink_node read at start-up
where no robot_state_publisher runs (docs/HARDWARE.md). It publishes no TF.

Parameters: `model` (shipped name or .json path), `urdf` (a file; empty: the model's own),
`mock_hardware` (add mock_hardware.py's block), `initial_positions` (model joint order; empty:
the model's example configuration)."""

import sys
from pathlib import Path

import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.node.mock_hardware import with_mock_hardware
from loink_ros.node.robot_description import DESCRIPTION_QOS
from loink_ros.node.spinning import serve_until, stop_on_signals


def description(node: Node) -> str:
    """The URDF text the parameters ask for."""
    model = load_model(node.declare_parameter('model', 'panda_full').value)
    urdf = node.declare_parameter('urdf', '').value
    mock = node.declare_parameter('mock_hardware', False).value
    initial = node.declare_parameter('initial_positions', Parameter.Type.DOUBLE_ARRAY).value
    problem = problem_for_model(model, Path(urdf) if urdf else None)
    text = Path(problem.urdf).read_text()
    if not mock:
        return text
    start = list(initial) if initial else list(model.problem['example_configuration'])
    return with_mock_hardware(text, list(problem.joint_names), start)


def main(args: list[str] | None = None) -> int:
    """Publish, then spin until SIGINT or SIGTERM (exit 0); a bad parameter is one line, exit 1."""
    stop = stop_on_signals()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = Node('robot_description_publisher')
    try:
        text = description(node)
    except (OSError, ValueError, KeyError) as err:
        print(f'robot_description_publisher: {err}', file=sys.stderr)
        node.destroy_node()
        rclpy.try_shutdown()
        return 1
    node.create_publisher(String, 'robot_description', DESCRIPTION_QOS).publish(String(data=text))
    node.get_logger().info(f'published {len(text)} characters on robot_description')
    serve_until(node, stop)
    return 0


if __name__ == '__main__':
    sys.exit(main())
