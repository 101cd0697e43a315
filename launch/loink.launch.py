"""`ros2 launch loink_ros loink.launch.py model:=panda [config:=FILE] [namespace:=loink]`.

The parameters come from config/<model>.yaml in the package share unless `config` names
another file; the `model` argument overrides the file's model (a name or a .json path).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """One loink_node in the given namespace."""
    model = LaunchConfiguration('model')
    shipped_config = PathJoinSubstitution([FindPackageShare('loink_ros'), 'config',
                                           [model, '.yaml']])
    return LaunchDescription([
        DeclareLaunchArgument('model', default_value='planar3',
                              description='Shipped model name or path to its .json file.'),
        DeclareLaunchArgument('config', default_value=shipped_config,
                              description='Parameter file (default: config/<model>.yaml).'),
        DeclareLaunchArgument('namespace', default_value='loink',
                              description='Namespace of the node.'),
        Node(package='loink_ros', executable='loink_node', name='loink_node',
             namespace=LaunchConfiguration('namespace'), output='screen',
             parameters=[LaunchConfiguration('config'), {'model': model}]),
    ])
