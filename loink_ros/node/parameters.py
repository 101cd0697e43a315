"""The node's parameters: declarations, validation and a snapshot of their values."""

from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import NameValidationException, ParameterException, ParameterUninitializedException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.validate_topic_name import validate_topic_name

from loink_ros.core.runtime.cartesian_path import UNTIMED_MAX_JOINT_STEP, UNTIMED_SMOOTHING
from loink_ros.core.runtime.requests import MAX_SAMPLES
from loink_ros.core.runtime.solver import RUNTIMES
from loink_ros.node.command_output import OUTPUTS
from loink_ros.node.executors import EXECUTORS
from loink_ros.node.failures import StartupError, one_line


@dataclass(frozen=True)
class Settings:
    """All parameter values at one moment; a callback reads one snapshot per request."""

    model: str
    urdf: str
    robot_description: str
    robot_description_topic: str
    robot_description_timeout: float
    smoothing: float
    refine: bool
    task_tolerance: float
    inverse_tolerance: float
    inverse_max_iterations: int
    bounds_margin: float
    stream_timeout: float
    target_topic: str
    solution_topic: str
    joint_states_topic: str
    pose_target_topic: str
    pose_tracking_topic: str
    pose_tip_link: str
    velocity_scale: float
    command_output: str
    command_topic: str
    controller: str
    controller_joints: tuple[str, ...]
    controller_timeout: float
    controller_manager: str
    controller_check_period: float
    command_rate: float
    command_horizon: float
    command_lead: float
    resync_tolerance: float
    joint_states_max_age: float
    joint_limits_file: str
    moveit_service: str
    cartesian_path_service: str
    cartesian_path_smoothing: float
    cartesian_path_max_joint_step: float
    group_name: str
    max_samples: int
    ik_timeout: float
    position_only_ik: bool
    rotation_tolerance: float
    seed_consistency: float
    diagnostics_period: float
    executor: str
    executor_threads: int
    runtime: str


@dataclass(frozen=True)
class Spec:
    """Default, description and limits of one parameter."""

    default: str | float | int | bool
    description: str
    live: bool = False          # settable while the node runs; otherwise read-only
    low: float | None = None    # inclusive range, shown by `ros2 param describe`
    high: float | None = None
    positive: bool = False      # strictly above zero
    required: bool = False      # a string that must not be empty
    choices: tuple[str, ...] = ()   # the values a string may take
    ros_name: str = ''          # 'topic' or 'service': the value must resolve as one
    strings: bool = False       # an array default (): of strings, not of doubles


SPECS: dict[str, Spec] = {
    'model': Spec('planar3', 'Shipped model name or path to its .json file.', required=True),
    'urdf': Spec('', "URDF file of the robot; empty: robot_description, else the model's own."),
    'robot_description': Spec('', 'URDF XML of the robot (the standard parameter); empty: '
                              'robot_description_topic, urdf or the model\'s own URDF.'),
    'robot_description_topic': Spec('', 'Topic to wait for the URDF XML on at start-up (as '
                                    'robot_state_publisher latches it, e.g. '
                                    '/robot_description); empty: do not wait.',
                                    ros_name='topic'),
    'robot_description_timeout': Spec(10.0, 'Seconds to wait for robot_description_topic '
                                      'before start-up fails.', low=0.0, high=3600.0,
                                      positive=True),
    'smoothing': Spec(0.0, 'Streaming smoothing mu_s >= 0; 0 tracks the pointwise optimum.',
                      live=True, low=0.0, high=1000.0),
    'refine': Spec(False, 'Refine every answer on the true kinematics (a request flag can '
                   'only add it).', live=True),
    'task_tolerance': Spec(0.01, 'Largest task error (task units, m) counted as a solution.',
                           live=True, low=0.0, high=10.0, positive=True),
    'inverse_tolerance': Spec(1e-10, 'Newton tolerance of the network inverse, per layer.',
                              low=0.0, high=1e-2, positive=True),
    'inverse_max_iterations': Spec(50, 'Newton iteration cap of the network inverse, per layer.',
                                   low=1, high=10_000),
    'bounds_margin': Spec(0.0, 'Targets may exceed the training bounds by this fraction of '
                          'their range.', low=0.0, high=1.0),
    'stream_timeout': Spec(0.5, 'A target gap longer than this (s) holds the last command and '
                           "starts a new stream, from the robot's measured configuration.",
                           live=True, low=0.0, high=3600.0, positive=True),
    'target_topic': Spec('~/target', 'TaskTarget stream input.', required=True,
                         ros_name='topic'),
    'solution_topic': Spec('~/joint_solution', 'JointState output, one per target.',
                           required=True, ros_name='topic'),
    'joint_states_topic': Spec('/joint_states', "Robot joint states: a stream starts from "
                               'them, and they seed a GetPositionIK request without a robot '
                               'state; empty: off.', ros_name='topic'),
    'pose_target_topic': Spec('~/target_pose', 'geometry_msgs/PoseStamped stream input, in '
                              'the base frame or a link fixed to it (models that serve full '
                              'poses); answers go to solution_topic.', required=True,
                              ros_name='topic'),
    'pose_tracking_topic': Spec('~/pose_tracking', 'loink_msgs/PoseTracking output: each '
                                'pose-stream answer with its distance from the target.',
                                required=True, ros_name='topic'),
    'pose_tip_link': Spec('', "Link the pose stream's targets are for: the model's tip "
                          '(empty) or any link fixed to it.', live=True),
    'velocity_scale': Spec(1.0, "Both streams: share of the URDF's joint velocity limits a "
                           'command may use, at the measured rate of the targets.', live=True,
                           low=0.0, high=10.0, positive=True),
    'command_output': Spec('joint_state', 'Where stream commands go: joint_state '
                           '(solution_topic only), forward_position (std_msgs/Float64MultiArray '
                           'for a forward position controller) or joint_trajectory '
                           '(trajectory_msgs/JointTrajectory for joint_trajectory_controller); '
                           'solution_topic carries the commands in every case.',
                           choices=OUTPUTS),
    'command_topic': Spec('', "The controller's input topic; empty: <controller>/commands or "
                          '<controller>/joint_trajectory.', ros_name='topic'),
    'controller': Spec('', "The controller's node name (joints are read from its parameters); "
                       'empty: /forward_position_controller or /joint_trajectory_controller.'),
    'controller_joints': Spec((), "The controller's joints in its order; empty: read from the "
                              'controller (given, they must equal what it reports).',
                              strings=True),
    'controller_timeout': Spec(30.0, "Seconds to wait at start-up for the controller's "
                               'parameters (command outputs).', low=0.0, high=3600.0),
    'controller_manager': Spec('/controller_manager', "The controller manager whose "
                               'list_controllers says whether the controller is active (command '
                               'outputs: nothing is sent to an inactive one).'),
    'controller_check_period': Spec(0.1, 'Seconds between list_controllers calls (command '
                                    'outputs).', low=0.0, high=60.0, positive=True),
    'command_rate': Spec(0.0, 'Command outputs: commands per second from the motion; 0: '
                         "the controller manager's update_rate for forward_position, 100 for "
                         'joint_trajectory.', low=0.0, high=2000.0),
    'command_horizon': Spec(0.1, 'joint_trajectory output: seconds of the planned motion each '
                            'command carries before its stop to rest (longer than any gap '
                            'between commands).', low=0.0, high=5.0, positive=True),
    'command_lead': Spec(0.01, 'Command outputs: the motion changes for a new answer this '
                         'many seconds ahead of now, so that a controller taking a command up '
                         'late finds the same motion before it (longer than a command takes '
                         'to reach the controller).', low=0.0, high=1.0),
    'resync_tolerance': Spec(0.05, 'Command outputs: the motion restarts from the measured '
                             'state when it is farther than this (rad or m, any joint) from '
                             'every recent command.', live=True, low=0.0, high=10.0,
                             positive=True),
    'joint_states_max_age': Spec(0.1, 'Seconds after which a joint state is stale (its '
                                 'arrival, and its stamp where set): streams hold, requests '
                                 'without a robot state are refused.', live=True, low=0.0,
                                 high=3600.0, positive=True),
    'joint_limits_file': Spec('', 'A joint_limits.yaml (MoveIt and ros2_control format; a path or '
                              'package://<package>/<path>) tightening the URDF limits and giving '
                              'acceleration and jerk limits; empty: the URDF only.'),
    'moveit_service': Spec('~/compute_ik', 'Name of the moveit_msgs GetPositionIK service.',
                           required=True, ros_name='service'),
    'cartesian_path_service': Spec('~/compute_cartesian_path', 'Name of the moveit_msgs '
                                   'GetCartesianPath service (models that serve full poses).',
                                   required=True, ros_name='service'),
    'cartesian_path_smoothing': Spec(UNTIMED_SMOOTHING, 'GetCartesianPath: the weight of each '
                                     'step\'s squared joint distance beside the model\'s cost in '
                                     'the plan\'s value; 0: the cost alone (the plan glides to the '
                                     'cheapest posture as fast as each step allows).', live=True,
                                     low=0.0, high=1e6),
    'cartesian_path_max_joint_step': Spec(UNTIMED_MAX_JOINT_STEP, 'GetCartesianPath: each '
                                          'revolute joint\'s largest step (rad) between '
                                          'consecutive points where the request gives no '
                                          'revolute_jump_threshold; 0: only the continuation\'s '
                                          'box.', live=True, low=0.0, high=3.2),
    'group_name': Spec('arm', 'MoveIt planning group this model serves.', required=True),
    'max_samples': Spec(100, 'Largest count a sample request may ask for.', live=True,
                        low=1, high=MAX_SAMPLES),
    'ik_timeout': Spec(0.05, 'GetPositionIK deadline (s) when ik_request.timeout is zero.',
                       live=True, low=0.0, high=60.0, positive=True),
    'position_only_ik': Spec(False, 'GetPositionIK: solve the tip position only, the '
                             'orientation free (MoveIt\'s position_only_ik). Models whose task '
                             'is not the whole tip position are always position-only.',
                             live=True),
    'rotation_tolerance': Spec(1e-4, 'GetPositionIK: largest orientation error (rad, the '
                               'geodesic angle) counted as a solution of a full pose.',
                               live=True, low=0.0, high=3.2, positive=True),
    'seed_consistency': Spec(0.0, 'GetPositionIK: weight w of ||q - seed||^2 (rad^2) added to '
                             'the cost; 0: the cost-optimal answer, the seed only warm-starts.',
                             live=True, low=0.0, high=1e6),
    'diagnostics_period': Spec(1.0, 'Seconds between /diagnostics reports.', low=0.0,
                               high=3600.0, positive=True),
    'executor': Spec('single_threaded', 'Executor of the services: single_threaded, '
                     'multi_threaded or events (rclpy.experimental, Kilted and newer).',
                     choices=EXECUTORS),
    'executor_threads': Spec(4, 'Threads of the multi-threaded executor.', low=4, high=64),
    'runtime': Spec('compiled', 'compiled: solve in C (built once, cached; numpy if it cannot '
                    'be, with a warning); numpy: the reference path.', choices=RUNTIMES),
}


def descriptor(name: str, spec: Spec) -> ParameterDescriptor:
    """The descriptor of one parameter, with its range."""
    result = ParameterDescriptor(name=name, description=spec.description,
                                 read_only=not spec.live)
    if isinstance(spec.default, float):
        result.floating_point_range = [FloatingPointRange(from_value=spec.low,
                                                          to_value=spec.high)]
    elif isinstance(spec.default, int) and not isinstance(spec.default, bool):
        result.integer_range = [IntegerRange(from_value=spec.low, to_value=spec.high)]
    return result


def refusal_reason(name: str, value) -> str | None:
    """Why a value is refused beyond its type and range, or None when it is fine."""
    spec = SPECS[name]
    if spec.strings:
        return None
    if isinstance(spec.default, tuple):   # an empty YAML list arrives as no value
        bad = [v for v in value or () if not (v > 0 and v < float('inf'))]
        return f'{name} must hold finite values > 0, got {list(value)}' if bad else None
    if spec.positive and not value > 0:   # ranges admit their ends; these must not be 0
        return f'{name} must be > 0, got {value}'
    if spec.required and not value:
        return f'{name} must not be empty'
    if spec.choices and value not in spec.choices:
        return f'{name} must be one of {", ".join(spec.choices)}, got {value!r}'
    return None


def validate(parameters: list[Parameter]) -> SetParametersResult:
    """on-set callback: refuse the whole set when one value is unusable."""
    for parameter in parameters:
        if parameter.name not in SPECS:   # rclpy's own, e.g. use_sim_time
            continue
        reason = refusal_reason(parameter.name, parameter.value)
        if reason:
            return SetParametersResult(successful=False, reason=reason)
    return SetParametersResult(successful=True)


def declare(node: Node) -> Settings:
    """Declare every parameter (overrides come from --params-file / -p) and read them."""
    node.add_on_set_parameters_callback(validate)
    try:
        for name, spec in SPECS.items():
            # An empty array has no type of its own: declared as doubles.
            default = (Parameter.Type.STRING_ARRAY if spec.strings else
                       Parameter.Type.DOUBLE_ARRAY if spec.default == () else spec.default)
            node.declare_parameter(name, default, descriptor(name, spec))
    except ParameterException as err:
        raise StartupError(f'bad parameter: {err}') from None
    settings = read(node)
    for name, spec in SPECS.items():
        value = getattr(settings, name)
        if spec.ros_name and value:
            check_ros_name(node, name, value, spec.ros_name)
    return settings


def check_ros_name(node: Node, name: str, value: str, kind: str) -> None:
    """StartupError naming the parameter and its value unless `value` resolves as a `kind`
    ('topic' or 'service') name of `node` (its namespace, substitutions and remappings)."""
    resolve = node.resolve_service_name if kind == 'service' else node.resolve_topic_name
    try:
        validate_topic_name(value, is_service=kind == 'service')
        resolve(value)
        return
    except NameValidationException as err:
        # 'Invalid topic name: <reason>:', then the name and a caret under it.
        reason = str(err).splitlines()[0].split(': ', 1)[-1].rstrip(':')
    except _rclpy.RCLError as err:
        reason = one_line(str(err).removeprefix('failed to resolve name: '))
    raise StartupError(f'bad parameter {name}: {value!r} is not a valid ROS {kind} name: '
                       f'{reason}')


def read(node: Node) -> Settings:
    """The current values as one immutable snapshot."""
    return Settings(**{name: value(node, name) for name in SPECS})


def value(node: Node, name: str):
    """A parameter's value; an array declared without one, (); arrays as tuples."""
    try:
        result = node.get_parameter(name).value
    except ParameterUninitializedException:
        return ()
    return tuple(result or ()) if isinstance(SPECS[name].default, tuple) else result
