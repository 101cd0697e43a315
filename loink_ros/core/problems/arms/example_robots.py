"""Files of the robots in the installed example-robot-data wheel (found through the
distribution, so no machine path is stored)."""

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

ROBOTS = 'cmeel.prefix/share/example-robot-data/robots'
SHARE = 'cmeel.prefix/share'   # where the URDFs' package:// meshes resolve


def wheel_file(relative: str) -> Path:
    """A file of the installed example-robot-data wheel, relative to its root."""
    try:
        path = Path(str(distribution('example-robot-data').locate_file(relative)))
    except PackageNotFoundError:
        raise FileNotFoundError('the robot files come from example-robot-data: '
                                'pip install example-robot-data==6.0.0') from None
    if not path.exists():
        raise FileNotFoundError(f'{path} missing from the example-robot-data install')
    return path


def robot_file(relative: str) -> Path:
    """A file under the wheel's robots/ folder, e.g. 'panda_description/urdf/panda.urdf'."""
    return wheel_file(f'{ROBOTS}/{relative}')


def mesh_root() -> str:
    """The folder the wheel's package:// mesh paths resolve in."""
    return str(wheel_file(SHARE))
