"""MoveIt where its users run a kinematics plugin: ros2_control_node (mock hardware, the joint
state broadcaster, a joint_trajectory_controller), move_group (OMPL, the default
capabilities, execution through the simple controller manager) and servo_node, on
moveit_resources' Panda, with panda_arm's IK by LOInK (config/kinematics.yaml) or by KDL.

Runs in the environment of .move_group/env.sh (scripts/setup_move_group.sh: MoveIt's venv
and builds, which have the whole of moveit_msgs); imports nothing of the project's runtime.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
GROUP, BASE, TIP = 'panda_arm', 'panda_link0', 'panda_link8'
JOINTS = [f'panda_joint{i}' for i in range(1, 8)]
READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]   # the SRDF's "ready" state
KINEMATICS = ('loink', 'kdl')
CONTROLLER = 'panda_arm_controller'
# ros2_control's loop (Hz), as the Franka and UR drivers run it.
UPDATE_RATE = 250
SERVO_PERIOD = 0.01


def share(package: str) -> Path:
    """share/<package> in the first AMENT_PREFIX_PATH entry that has it."""
    for prefix in os.environ['AMENT_PREFIX_PATH'].split(':'):
        if Path(prefix, 'share', package).is_dir():
            return Path(prefix, 'share', package)
    raise FileNotFoundError(f'no share/{package} on AMENT_PREFIX_PATH: source .move_group/env.sh')


def executable(package: str, name: str) -> str:
    """lib/<package>/<name>, found as `ros2 run` finds it."""
    for prefix in os.environ['AMENT_PREFIX_PATH'].split(':'):
        if Path(prefix, 'lib', package, name).exists():
            return str(Path(prefix, 'lib', package, name))
    raise FileNotFoundError(f'no lib/{package}/{name} on AMENT_PREFIX_PATH: source .move_group/env.sh')


def panda_config(name: str) -> Path:
    return share('moveit_resources_panda_moveit_config') / 'config' / name


def kinematics(solver: str) -> dict:
    """robot_description_kinematics: the project's config/kinematics.yaml (what a user loads)
    or panda_moveit_config's (KDL)."""
    path = REPO / 'config' / 'kinematics.yaml' if solver == 'loink' else panda_config('kinematics.yaml')
    return yaml.safe_load(path.read_text())


def urdf_with_mock_hardware() -> str:
    """moveit_resources' Panda with a ros2_control block of mock hardware: the arm's joints at
    "ready" and panda_finger_joint1, so that /joint_states covers every active joint."""
    urdf = (share('moveit_resources_panda_description') / 'urdf' / 'panda.urdf').read_text()
    joints = ''.join(
        f'<joint name="{name}"><command_interface name="position"/>'
        f'<state_interface name="position"><param name="initial_value">{value}</param>'
        '</state_interface><state_interface name="velocity"/></joint>'
        for name, value in zip([*JOINTS, 'panda_finger_joint1'], [*READY, 0.0]))
    block = ('<ros2_control name="PandaMock" type="system"><hardware><plugin>'
             f'mock_components/GenericSystem</plugin></hardware>{joints}</ros2_control>')
    return urdf.replace('</robot>', block + '</robot>')


def as_floats(value):
    """A list of numbers with any float among them as floats (rcl's yaml parser refuses a
    list that mixes ints and floats; launch_ros converts the same way)."""
    if isinstance(value, dict):
        return {key: as_floats(item) for key, item in value.items()}
    numbers = isinstance(value, list) and value and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    return [float(v) for v in value] if numbers and any(isinstance(v, float) for v in value) else value


def write_parameters(path: Path, node: str, parameters: dict) -> Path:
    path.write_text(yaml.safe_dump({node: {'ros__parameters': as_floats(parameters)}},
                                   sort_keys=False, width=1000))
    return path


def description(urdf: str, solver: str) -> dict:
    """What MoveItConfigsBuilder passes to every MoveIt node."""
    return {'robot_description': urdf,
            'robot_description_semantic': panda_config('panda.srdf').read_text(),
            'robot_description_kinematics': kinematics(solver),
            'robot_description_planning': yaml.safe_load(panda_config('joint_limits.yaml').read_text())}


def move_group_parameters(urdf: str, solver: str) -> dict:
    parameters = description(urdf, solver)
    parameters.update({
        'planning_pipelines': {'pipeline_names': ['ompl']},
        'default_planning_pipeline': 'ompl',
        'ompl': yaml.safe_load(panda_config('ompl_planning.yaml').read_text()),
        'allow_trajectory_execution': True,
        'publish_planning_scene': True,
        'publish_robot_description_semantic': True,
    })
    parameters.update(yaml.safe_load(panda_config('moveit_controllers.yaml').read_text()))
    return parameters


def servo_parameters(urdf: str, solver: str) -> dict:
    """MoveIt Servo at 100 Hz onto the JTC's topic, Butterworth smoothing (its acceleration
    filter needs osqp, not built here), collision checks on."""
    parameters = description(urdf, solver)
    parameters['moveit_servo'] = {
        'move_group_name': GROUP, 'planning_frame': BASE, 'ee_frame': TIP,
        'publish_period': SERVO_PERIOD, 'command_in_type': 'speed_units',
        'scale': {'linear': 0.2, 'rotational': 0.8, 'joint': 0.5},
        'command_out_type': 'trajectory_msgs/JointTrajectory',
        'command_out_topic': f'/{CONTROLLER}/joint_trajectory',
        'publish_joint_positions': True, 'publish_joint_velocities': True,
        'publish_joint_accelerations': False,
        'use_smoothing': True,
        'smoothing_filter_plugin_name': 'online_signal_smoothing::ButterworthFilterPlugin',
        'is_primary_planning_scene_monitor': False, 'check_collisions': True,
        'incoming_command_timeout': 0.1,
    }
    return parameters


def controllers_yaml() -> dict:
    return {
        'controller_manager': {'ros__parameters': {
            'update_rate': UPDATE_RATE,
            'joint_state_broadcaster': {'type': 'joint_state_broadcaster/JointStateBroadcaster'},
            CONTROLLER: {'type': 'joint_trajectory_controller/JointTrajectoryController'}}},
        CONTROLLER: {'ros__parameters': {
            'joints': JOINTS, 'command_interfaces': ['position'],
            'state_interfaces': ['position', 'velocity'],
            'allow_nonzero_velocity_at_trajectory_end': True}},
    }


@dataclass
class MoveGroupStack:
    """The processes, started in `folder` (their logs and parameter files stay there)."""
    folder: Path
    solver: str
    urdf: str = field(default_factory=urdf_with_mock_hardware)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, command: list[str]) -> None:
        log = open(self.folder / f'{name}.log', 'w')
        self.processes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def start_hardware(self) -> None:
        """ros2_control_node and the world -> panda_link0 transform (the SRDF's virtual joint);
        the controllers are spawned once /robot_description is published (spawn_controllers)."""
        path = self.folder / 'controllers.yaml'
        path.write_text(yaml.safe_dump(controllers_yaml(), sort_keys=False))
        self.start('ros2_control_node', [executable('controller_manager', 'ros2_control_node'),
                                         '--ros-args', '--params-file', str(path)])
        self.start('static_tf', [executable('tf2_ros', 'static_transform_publisher'),
                                 '--frame-id', 'world', '--child-frame-id', BASE])

    def spawn_controllers(self) -> None:
        """The joint state broadcaster and the JTC, loaded and activated by one spawner."""
        names = ['joint_state_broadcaster', CONTROLLER]
        done = subprocess.run([executable('controller_manager', 'spawner'), *names,
                               '--controller-manager', '/controller_manager',
                               '--controller-manager-timeout', '60'],
                              capture_output=True, text=True, timeout=90)
        (self.folder / 'spawner.log').write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f'spawner {" ".join(names)} failed: {done.stderr[-500:]}')

    def start_move_group(self) -> None:
        path = write_parameters(self.folder / 'move_group.yaml', 'move_group',
                                move_group_parameters(self.urdf, self.solver))
        self.start('move_group', [executable('moveit_ros_move_group', 'move_group'),
                                  '--ros-args', '--params-file', str(path)])

    def start_servo(self) -> None:
        path = write_parameters(self.folder / 'servo.yaml', 'servo_node',
                                servo_parameters(self.urdf, self.solver))
        self.start('servo_node', [executable('moveit_servo', 'servo_node'),
                                  '--ros-args', '--params-file', str(path)])

    def log(self, name: str) -> str:
        path = self.folder / f'{name}.log'
        return path.read_text(errors='replace') if path.is_file() else ''

    def stop(self) -> dict[str, int]:
        """SIGINT to each, newest first; SIGKILL after 10 s. Their exit codes."""
        for process in reversed(self.processes.values()):
            _signal(process, signal.SIGINT)
        codes = {}
        for name, process in self.processes.items():
            try:
                codes[name] = process.wait(10)
            except subprocess.TimeoutExpired:
                _signal(process, signal.SIGKILL)
                codes[name] = process.wait()
        return codes


def _signal(process: subprocess.Popen, number: int) -> None:
    try:
        os.killpg(process.pid, number)
    except ProcessLookupError:
        pass


def wait_until(condition, timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()
