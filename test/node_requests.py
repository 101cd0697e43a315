"""Requests to a loink_node under test, shared by the test modules that send them: poses
from a position and a rotation matrix, the node's services called, error codes by name."""


def set_pose(pose, position, rotation) -> None:
    """Fill a geometry_msgs/Pose with `position` (m) and the quaternion of `rotation` (3 x 3)."""
    from loink_ros.core.problems.arms.rotation_chart import matrix_quaternion
    p, o = pose.position, pose.orientation
    p.x, p.y, p.z = map(float, position)
    o.x, o.y, o.z, o.w = map(float, matrix_quaternion(rotation))


def call(node, srv, name: str, **fields):
    """The node's service `name` of type `srv`, called with a request made of `fields`."""
    return node.call(srv, name, srv.Request(**fields))


def compute_ik(node, request):
    """moveit_msgs/GetPositionIK at the node's ~/compute_ik."""
    from moveit_msgs.srv import GetPositionIK
    return node.call(GetPositionIK, 'compute_ik', request)


def solve_pose(node, request):
    """loink_msgs/SolvePose at the node's ~/solve_pose."""
    from loink_msgs.srv import SolvePose
    return node.call(SolvePose, 'solve_pose', request)


def moveit_code(name: str) -> int:
    """A moveit_msgs/MoveItErrorCodes value by name."""
    from moveit_msgs.msg import MoveItErrorCodes
    return getattr(MoveItErrorCodes, name)


def loink_code(name: str) -> int:
    """A loink_msgs/ErrorCode value by name."""
    from loink_msgs.msg import ErrorCode
    return getattr(ErrorCode, name)
