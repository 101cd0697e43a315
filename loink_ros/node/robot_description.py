"""The robot's URDF from the standard robot_description (parameter or latched topic).

The XML is written to a file that lives as long as the node, and the robot problem is
built from it like the `urdf` parameter's file. Before it is used, the robot must have
every model joint, with the model's limits inside the robot's own.
"""

import tempfile
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.wait_for_message import wait_for_message
from std_msgs.msg import String

from loink_ros.core.problems.arms.kinematic_problem import urdf_joint_limits
from loink_ros.core.runtime.model_file import ModelFile
from loink_ros.node.failures import StartupError

# How far (rad or m) a model limit may lie outside the robot's before it is a mismatch.
LIMIT_TOLERANCE = 1e-6
# What robot_state_publisher offers: reliable, transient local (late joiners get it).
DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The open temporary URDF files (closing one deletes it): they live as long as the process.
KEEP: list = []


def received_description(node: Node, topic: str, timeout: float) -> str:
    """The URDF XML published on `topic`, or a StartupError after `timeout` seconds."""
    name = node.resolve_topic_name(topic)
    ok, msg = wait_for_message(String, node, name, qos_profile=DESCRIPTION_QOS,
                               time_to_wait=timeout)
    if not ok or not msg.data.strip():
        raise StartupError(f'no robot description on {name} within {timeout:g} s '
                           '(robot_description_timeout); is robot_state_publisher running?')
    return msg.data


def written_urdf(xml: str) -> Path:
    """The XML in a temporary .urdf file, removed when the process ends."""
    file = tempfile.NamedTemporaryFile('w', suffix='.urdf', prefix='loink_robot_description_')
    file.write(xml)
    file.flush()
    KEEP.append(file)
    return Path(file.name)


def mismatches(model: ModelFile, limits: dict[str, tuple[float, float]]) -> list[str]:
    """How the robot differs from what the model needs; empty when it fits."""
    problem = model.problem
    found = []
    for name, lower, upper in zip(problem['joint_names'], problem['joint_lower'],
                                  problem['joint_upper']):
        if name not in limits:
            found.append(f'joint {name} is missing')
            continue
        low, high = limits[name]
        if lower < low - LIMIT_TOLERANCE or upper > high + LIMIT_TOLERANCE:
            found.append(f'{name} limits [{low:.6g}, {high:.6g}] do not contain the '
                         f"model's [{lower:.6g}, {upper:.6g}]")
    return found


def checked_urdf(xml: str, model: ModelFile) -> Path:
    """The description as a file, after checking it against the model."""
    path = written_urdf(xml)
    try:
        limits = urdf_joint_limits(path)
    except (ValueError, RuntimeError) as err:
        raise StartupError(f'robot_description is not a URDF Pinocchio reads: {err}') from None
    found = mismatches(model, limits)
    if found:
        raise StartupError(f'robot_description does not match model {model.name}: '
                           + '; '.join(found))
    return path

