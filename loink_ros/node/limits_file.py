"""The node's joint limits: the URDF's, with the joint_limits_file parameter's file applied
(core/motion/joint_limits.py). The file is a path or a `package://<package>/<path>` URI, as
ROS users name files in other packages."""

from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

from loink_ros.core.motion.joint_limits import JointLimits, JointLimitsError, joint_limits
from loink_ros.core.problems.arms.velocity_limits import velocity_limits

PACKAGE_URI = 'package://'


def resolve(name: str) -> Path:
    """The file a joint_limits_file value names; JointLimitsError for an unknown package."""
    if not name.startswith(PACKAGE_URI):
        return Path(name).expanduser()
    package, _, rest = name[len(PACKAGE_URI):].partition('/')
    try:
        return Path(get_package_share_directory(package)) / rest
    except PackageNotFoundError:
        raise JointLimitsError(f'joint_limits_file {name}: package {package!r} is not '
                               'installed') from None


def node_joint_limits(problem, file: str) -> JointLimits:
    """The problem's joint limits with `file` applied; ValueError (one line) for a URDF without
    velocity limits or an unusable file."""
    return joint_limits(list(problem.joint_names), problem.lower, problem.upper,
                        velocity_limits(problem), resolve(file) if file else None)
