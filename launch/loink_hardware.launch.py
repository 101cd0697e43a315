"""`ros2 launch loink_ros loink_hardware.launch.py [model:=panda_full]
[command_output:=joint_trajectory|forward_position] [controller:=NAME] [mock_hardware:=true]`.

loink_node streaming to a ros2_control controller (docs/HARDWARE.md): its parameter file
(loink.launch.py's rule) with `command_output` and `controller` set from the arguments. With
`mock_hardware:=true` it also starts the robot on a desk: the model's URDF with a mock-hardware
ros2_control block on /robot_description (robot_description_publisher), ros2_control_node
with `controllers` (default config/ros2_control/<model's robot>.yaml), and the spawner for
joint_state_broadcaster and the controller. On a real robot, its bringup starts
ros2_control; this file then starts loink_node only (mock_hardware:=false, the default).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch_ros.actions import Node

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

# The controller each command output drives by default (loink_ros/node/command_output.py).
CONTROLLERS = {'joint_trajectory': 'joint_trajectory_controller',
               'forward_position': 'forward_position_controller'}
SHARE = get_package_share_directory('loink_ros')


def argument(context: LaunchContext, name: str) -> str:
    return LaunchConfiguration(name).perform(context)


def nodes(context: LaunchContext) -> list[Node]:
    """loink_node, and with mock_hardware the robot's ros2_control on a desk."""
    from loink_ros.core.runtime.model_file import load_model
    loink_launch = _loink_launch()
    model = argument(context, 'model')
    if model.endswith('.json'):
        model = os.path.abspath(os.path.expanduser(model))
    output = argument(context, 'command_output')
    if output not in CONTROLLERS:
        raise RuntimeError(f'command_output:={output!r}: use one of {", ".join(CONTROLLERS)}')
    controller = argument(context, 'controller') or CONTROLLERS[output]
    config = loink_launch.parameter_file(model, argument(context, 'config'))
    loink = Node(package='loink_ros', executable='loink_node', name='loink_node',
                 namespace=LaunchConfiguration('namespace'), output='screen',
                 parameters=[config, {'model': model, 'command_output': output,
                                      'controller': controller}])
    if argument(context, 'mock_hardware').lower() not in ('true', '1'):
        return [loink]
    robot = load_model(model).problem['robot']
    controllers = argument(context, 'controllers') or os.path.join(
        SHARE, 'config', 'ros2_control', f'{robot}.yaml')
    if not os.path.isfile(controllers):
        raise RuntimeError(f'controllers file {controllers} does not exist; pass controllers:=')
    spawn = ['--controller-manager', '/controller_manager', '--controller-manager-timeout', '30']
    return [
        Node(package='loink_ros', executable='robot_description_publisher', output='screen',
             parameters=[{'model': model, 'mock_hardware': True}]),
        Node(package='controller_manager', executable='ros2_control_node', output='screen',
             parameters=[controllers]),
        Node(package='controller_manager', executable='spawner', output='screen',
             arguments=['joint_state_broadcaster', controller, *spawn]),
        loink,
    ]


def _loink_launch():
    """loink.launch.py beside this file (its parameter-file rule)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'loink.launch.py')
    spec = importlib.util.spec_from_file_location('loink_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        DeclareLaunchArgument('model', default_value='panda_full',
                              description='Shipped model name or path to its .json file.'),
        DeclareLaunchArgument('config', default_value='',
                              description='loink_node parameter file; empty: as loink.launch.py.'),
        DeclareLaunchArgument('namespace', default_value='loink',
                              description='Namespace of loink_node.'),
        DeclareLaunchArgument('command_output', default_value='joint_trajectory',
                              description='joint_trajectory (joint_trajectory_controller) or '
                                          'forward_position (a forward position controller).'),
        DeclareLaunchArgument('controller', default_value='',
                              description='The controller to drive; empty: '
                                          'joint_trajectory_controller or '
                                          'forward_position_controller.'),
        DeclareLaunchArgument('mock_hardware', default_value='false',
                              description='true: also start ros2_control on mock hardware.'),
        DeclareLaunchArgument('controllers', default_value='',
                              description="ros2_control's controller file (mock_hardware); "
                                          "empty: config/ros2_control/<robot>.yaml."),
        OpaqueFunction(function=nodes),
    ])
