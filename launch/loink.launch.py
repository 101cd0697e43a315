"""`ros2 launch loink_ros loink.launch.py model:=panda [config:=FILE] [namespace:=loink]`.

Works on ROS 2 Jazzy (launch 3.4) and Kilted. The parameter file is, unless `config`
names one:
- for a model name (`model:=panda`): config/<name>.yaml in this package's share;
- for a model path (`model:=/path/my_arm.json`): my_arm.yaml beside the .json.
A parameter file that does not exist stops the launch with an error naming it; the node
never falls back to built-in defaults. The `model` argument overrides the file's `model`.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch_ros.actions import Node

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration


def parameter_file(model: str, config: str) -> str:
    """The parameter file for a model name or .json path (module docstring)."""
    if config:
        path = os.path.abspath(os.path.expanduser(config))
        given = 'config:='
    elif model.endswith('.json'):
        path = os.path.abspath(os.path.expanduser(model))[:-len('.json')] + '.yaml'
        given = 'the parameter file beside the model'
    else:
        path = os.path.join(get_package_share_directory('loink_ros'), 'config', f'{model}.yaml')
        given = f'the shipped parameter file of model {model!r}'
    if not os.path.isfile(path):
        raise RuntimeError(f'{given} {path} does not exist; pass config:=<parameter file>')
    return path


def loink_node(context: LaunchContext) -> list[Node]:
    """The node, once the arguments are known."""
    model = LaunchConfiguration('model').perform(context)
    if model.endswith('.json'):
        model = os.path.abspath(os.path.expanduser(model))
    config = parameter_file(model, LaunchConfiguration('config').perform(context))
    return [Node(package='loink_ros', executable='loink_node', name='loink_node',
                 namespace=LaunchConfiguration('namespace'), output='screen',
                 parameters=[config, {'model': model}])]


def generate_launch_description() -> LaunchDescription:
    """One loink_node in the given namespace."""
    return LaunchDescription([
        DeclareLaunchArgument('model', default_value='planar3',
                              description='Shipped model name or path to its .json file.'),
        DeclareLaunchArgument('config', default_value='',
                              description='Parameter file; empty: config/<model>.yaml of '
                                          'the package, or <model>.yaml beside a .json.'),
        DeclareLaunchArgument('namespace', default_value='loink',
                              description='Namespace of the node.'),
        OpaqueFunction(function=loink_node),
    ])
