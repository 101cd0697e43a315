"""The background shell command the ros2 command-line tests run (loink_ros/tools/background.py)."""
from loink_ros.tools.background import REPO, Background

__all__ = ['REPO', 'Background']
