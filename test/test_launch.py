"""Launch file, parameter files and MoveIt's kinematics.yaml agree with the node."""
import importlib.util
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILE = REPO / 'launch' / 'loink.launch.py'
CONFIGS = sorted((REPO / 'config').glob('*.yaml'))
NODE_CONFIGS = [path for path in CONFIGS if path.name != 'kinematics.yaml']


def node_parameters(path: Path) -> dict:
    return yaml.safe_load(path.read_text())['/**']['ros__parameters']


def test_launch_file_is_valid_python():
    compile(LAUNCH_FILE.read_text(), str(LAUNCH_FILE), 'exec')


def test_launch_description_builds():
    # Imported, not looked up: the repo's own launch/ folder is a namespace package `launch`.
    try:
        from launch.actions import DeclareLaunchArgument
        from launch_ros.actions import Node
    except ImportError:
        pytest.skip('launch and launch_ros are not installed here (no registry has them, '
                    'ROS_ENV.md): the launch file is for real ROS 2 installs')
    spec = importlib.util.spec_from_file_location('loink_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entities = module.generate_launch_description().entities
    arguments = {e.name: e for e in entities if isinstance(e, DeclareLaunchArgument)}
    assert set(arguments) == {'model', 'config', 'namespace'}
    assert [type(e) for e in entities if isinstance(e, Node)] == [Node]


@pytest.mark.parametrize('path', NODE_CONFIGS, ids=lambda p: p.name)
def test_parameter_file_sets_every_parameter_validly(path):
    from loink_ros.node.parameters import SPECS, refusal_reason
    values = node_parameters(path)
    assert set(values) == set(SPECS)
    for name, value in values.items():
        spec = SPECS[name]
        assert type(value) is type(spec.default), name
        assert refusal_reason(name, value) is None, name
        if spec.low is not None:
            assert spec.low <= value <= spec.high, name
    assert values['model'] == path.stem


def test_kinematics_yaml_points_at_the_panda_node():
    from loink_ros.tools.bench_node import resolve
    kinematics = yaml.safe_load((REPO / 'config' / 'kinematics.yaml').read_text())
    panda = node_parameters(REPO / 'config' / 'panda.yaml')
    group = kinematics[panda['group_name']]
    assert group['kinematics_solver'] == 'srv_kinematics_plugin/SrvKinematicsPlugin'
    # The launch file's default namespace is /loink and the node is named loink_node.
    assert group['kinematics_solver_service_name'] == resolve(panda['moveit_service'], '/loink')
