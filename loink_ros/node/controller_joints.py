"""The joints a ros2_control controller commands, read from the controller's own parameters
and checked against the model's (the output's joint order is the controller's), and the
controller manager's update rate."""

import time

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from loink_ros.node.failures import StartupError


def remote_parameter(node: Node, owner: str, name: str, timeout: float):
    """Parameter `name` of node `owner` (rcl_interfaces ParameterValue), or None when its
    parameter service does not answer within `timeout` seconds."""
    client = node.create_client(GetParameters, f'{owner}/get_parameters')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        deadline = time.monotonic() + timeout
        if not client.wait_for_service(timeout_sec=timeout):
            return None
        future = client.call_async(GetParameters.Request(names=[name]))
        executor.spin_until_future_complete(future, max(0.1, deadline - time.monotonic()))
        if not future.done() or future.result() is None or not future.result().values:
            return None
        return future.result().values[0]
    finally:
        executor.remove_node(node)
        executor.shutdown()
        node.destroy_client(client)


def controller_joints(node: Node, controller: str, timeout: float) -> list[str] | None:
    """The controller's `joints` parameter, or None when it does not answer in time (or has
    none)."""
    value = remote_parameter(node, controller, 'joints', timeout)
    if value is None or value.type != ParameterType.PARAMETER_STRING_ARRAY:
        return None
    return list(value.string_array_value)


def update_rate(node: Node, controller_manager: str, timeout: float) -> float | None:
    """The controller manager's `update_rate` (Hz), or None when it does not answer in time."""
    value = remote_parameter(node, controller_manager, 'update_rate', timeout)
    if value is None or value.type != ParameterType.PARAMETER_INTEGER or value.integer_value <= 0:
        return None
    return float(value.integer_value)


def command_joints(model: list[str], given: list[str], controller: str,
                   read: list[str] | None) -> list[str]:
    """The output's joint order: the controller's (`read`), else `given`; StartupError, one
    line, when they differ from each other or from the model's joints."""
    if read is None and not given:
        raise StartupError(f'controller {controller} did not answer with its joints within '
                           'controller_timeout: start it first (spawner), or give '
                           'controller_joints')
    if read is not None and given and list(given) != read:
        raise StartupError(f'controller_joints {list(given)} differ from controller '
                           f"{controller}'s joints {read} (the order counts: the output is "
                           "in the controller's order)")
    joints = read if read is not None else list(given)
    if sorted(joints) != sorted(model) or len(set(joints)) != len(joints):
        missing = [j for j in model if j not in joints]
        other = [j for j in joints if j not in model]
        raise StartupError(f'controller {controller} commands {joints}; the model has {model}'
                           + (f' (missing {missing})' if missing else '')
                           + (f' (not the model\'s: {other})' if other else ''))
    return joints
