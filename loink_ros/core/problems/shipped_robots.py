"""The URDFs written for this project (planar3, magneto, arm3_continuous), shipped in
loink_ros/robots: robots of every family load them from here."""

from importlib.resources import files
from pathlib import Path


def robot_file(name: str) -> Path:
    """Path of a URDF shipped in loink_ros/robots."""
    return Path(str(files('loink_ros') / 'robots' / name))
