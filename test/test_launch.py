"""Launch file, parameter files and MoveIt's kinematics.yaml agree with the node.

The launch file must run on Jazzy (launch 3.4) and Kilted: its source is checked against
the rules of launch 3.4 and the names that Jazzy's launch exports (../shared/ros2tools),
and it is launched as a user does, with the real `ros2` / `launch_test` commands that
set-up installs (.ros2tools; without them these tests fail, they never skip).
"""
import ast
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from background import Background

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILE = REPO / 'launch' / 'loink.launch.py'
LAUNCH_CHECK = REPO / 'test' / 'launch' / 'check_loink_launch.py'
CONFIGS = sorted((REPO / 'config').glob('*.yaml'))
NODE_CONFIGS = [path for path in CONFIGS if path.name != 'kinematics.yaml']
JAZZY_SOURCES = REPO.parent / 'shared' / 'ros2tools' / 'src'
# Where each launch module's public names are defined in the Jazzy sources.
JAZZY_MODULES = {'launch': 'launch/launch/launch/__init__.py',
                 'launch.actions': 'launch/launch/launch/actions/__init__.py',
                 'launch.substitutions': 'launch/launch/launch/substitutions/__init__.py',
                 'launch_ros.actions': 'launch_ros/launch_ros/launch_ros/actions/__init__.py',
                 'launch_ros.substitutions':
                     'launch_ros/launch_ros/launch_ros/substitutions/__init__.py'}
NO_ROS2_CLI = 'the ros2 command line is not on PATH: scripts/setup.sh installs .ros2tools ' \
              'from ../shared/ros2tools (source ./env.sh)'


def node_parameters(path: Path) -> dict:
    return yaml.safe_load(path.read_text())['/**']['ros__parameters']


def launch_imports(tree: ast.Module) -> dict[str, str]:
    """Name -> module of every name the launch file imports from launch / launch_ros."""
    return {alias.asname or alias.name: node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            and node.module.split('.')[0] in ('launch', 'launch_ros')
            for alias in node.names}


def test_launch_file_is_valid_python():
    compile(LAUNCH_FILE.read_text(), str(LAUNCH_FILE), 'exec')


def test_substitution_arguments_are_flat():
    # launch 3.4 normalises each part of a substitution list to str or Substitution only:
    # a list inside the list ([model, '.yaml']) raises TypeError on Jazzy.
    tree = ast.parse(LAUNCH_FILE.read_text())
    substitutions = {name for name in launch_imports(tree) if name.endswith('Substitution')}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, 'id', None) in substitutions:
            for argument in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(argument, (ast.List, ast.Tuple)):
                    nested = [e for e in argument.elts if isinstance(e, (ast.List, ast.Tuple))]
                    assert not nested, f'line {call.lineno}: a list inside {call.func.id}([...])'


def public_names(source: Path) -> set[str]:
    """Names a Jazzy __init__.py defines or imports."""
    names = set()
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split('.')[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


@pytest.mark.needs_setup(JAZZY_SOURCES.is_dir(),
                         f'{JAZZY_SOURCES} is missing: set-up needs ../shared/ros2tools')
def test_launch_file_uses_only_jazzy_names():
    imports = launch_imports(ast.parse(LAUNCH_FILE.read_text()))
    assert imports
    for name, module in imports.items():
        assert module in JAZZY_MODULES, f'{module} is not checked against Jazzy'
        assert name in public_names(JAZZY_SOURCES / JAZZY_MODULES[module]), \
            f'{module}.{name} does not exist in ROS 2 Jazzy'


def load_launch_module():
    try:
        import launch_ros.actions  # noqa: F401

        import launch.actions  # noqa: F401
    except ImportError:
        pytest.fail('launch and launch_ros are not importable: scripts/setup.sh installs them '
                    'into .ros2tools from ../shared/ros2tools (source ./env.sh)', pytrace=False)
    spec = importlib.util.spec_from_file_location('loink_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launch_description_declares_its_arguments():
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    module = load_launch_module()
    entities = module.generate_launch_description().entities
    arguments = {e.name for e in entities if isinstance(e, DeclareLaunchArgument)}
    assert arguments == {'model', 'config', 'namespace'}
    assert sum(isinstance(e, OpaqueFunction) for e in entities) == 1


def test_parameter_file_of_a_model_name_and_of_a_path(tmp_path):
    module = load_launch_module()
    shipped = Path(module.parameter_file('panda', ''))
    assert shipped.name == 'panda.yaml' and shipped.parent.name == 'config'
    assert node_parameters(shipped) == node_parameters(REPO / 'config' / 'panda.yaml')
    model = tmp_path / 'my_arm.json'
    with pytest.raises(RuntimeError, match='my_arm.yaml does not exist'):
        module.parameter_file(str(model), '')
    (tmp_path / 'my_arm.yaml').write_text('/**:\n  ros__parameters: {}\n')
    assert module.parameter_file(str(model), '') == str(tmp_path / 'my_arm.yaml')
    with pytest.raises(RuntimeError, match='config:= .*missing.yaml does not exist'):
        module.parameter_file('panda', str(tmp_path / 'missing.yaml'))
    with pytest.raises(RuntimeError, match='no_such_model.yaml does not exist'):
        module.parameter_file('no_such_model', '')


@pytest.mark.needs_setup(shutil.which('launch_test') is not None, NO_ROS2_CLI)
def test_launch_testing_serves_every_shipped_model():
    # Each shipped model is launched, serves its printed solve example and exits 0.
    result = subprocess.run(['launch_test', str(LAUNCH_CHECK)], capture_output=True,
                            text=True, timeout=400)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    for model in ('planar3', 'panda', 'magneto'):
        assert f"test_node_serves_its_model[{model}]" in result.stdout + result.stderr


def ros2_launch(tmp_path: Path, *arguments: str) -> tuple[int, str]:
    """`ros2 launch loink_ros loink.launch.py ...` until it exits or serves; (code, output)."""
    process = Background(' '.join(['ros2 launch loink_ros loink.launch.py', *arguments]),
                         tmp_path / 'launch.log')
    process.wait_for('serving model', 60.0)
    return process.stop(), process.output()


@pytest.mark.needs_setup(shutil.which('ros2') is not None, NO_ROS2_CLI)
def test_model_path_without_parameter_file_is_an_error(tmp_path):
    model = tmp_path / 'my_arm.json'
    shutil.copy(REPO / 'models' / 'planar3.json', model)
    shutil.copy(REPO / 'models' / 'planar3.onnx', tmp_path / 'planar3.onnx')
    code, output = ros2_launch(tmp_path, f'model:={model}', 'namespace:=missing_config')
    assert code != 0 and f'{tmp_path / "my_arm.yaml"} does not exist' in output, output
    assert 'serving model' not in output


@pytest.mark.needs_setup(shutil.which('ros2') is not None, NO_ROS2_CLI)
def test_model_path_uses_the_parameter_file_beside_it(tmp_path):
    model = tmp_path / 'my_arm.json'
    shutil.copy(REPO / 'models' / 'planar3.json', model)
    shutil.copy(REPO / 'models' / 'planar3.onnx', tmp_path / 'planar3.onnx')
    parameters = yaml.safe_load((REPO / 'config' / 'planar3.yaml').read_text())
    parameters['/**']['ros__parameters']['target_topic'] = '~/targets_beside'
    (tmp_path / 'my_arm.yaml').write_text(yaml.safe_dump(parameters))
    code, output = ros2_launch(tmp_path, f'model:={model}', 'namespace:=beside_config')
    assert code == 0 and f'from {model}' in output, output
    # The printed streaming example names the file's topic, not the built-in default.
    assert '/beside_config/loink_node/targets_beside' in output, output


@pytest.mark.parametrize('path', NODE_CONFIGS, ids=lambda p: p.name)
def test_parameter_file_sets_every_parameter_validly(path):
    from loink_ros.node.parameters import SPECS, refusal_reason
    values = node_parameters(path)
    assert set(values) == set(SPECS)
    for name, value in values.items():
        spec = SPECS[name]
        if isinstance(spec.default, tuple):   # arrays: a YAML list, [] arriving as None
            assert value is None or isinstance(value, list), name
        else:
            assert type(value) is type(spec.default), name
        assert refusal_reason(name, value) is None, name
        if spec.low is not None:
            assert spec.low <= value <= spec.high, name
    assert values['model'] == path.stem


def test_kinematics_yaml_names_the_panda_nodes_model():
    """In-process, on the model the panda_full node serves, for the group it names."""
    kinematics = yaml.safe_load((REPO / 'config' / 'kinematics.yaml').read_text())
    panda = node_parameters(REPO / 'config' / 'panda_full.yaml')
    group = kinematics[panda['group_name']]
    plugin = (REPO / 'loink_kinematics' / 'loink_kinematics_plugin.xml').read_text()
    assert f'<class name="{group["kinematics_solver"]}"' in plugin
    assert group['loink_model'] == panda['model'] and 'loink_service' not in group
    assert group['position_only_ik'] == panda['position_only_ik']


def test_kinematics_yaml_sets_only_what_the_plugin_reads():
    """Each entry is MoveIt's own (kinematics_solver*) or one the plugin declares, with the
    plugin's default's type, so that a typo or a stale name cannot pass silently."""
    kinematics = yaml.safe_load((REPO / 'config' / 'kinematics.yaml').read_text())
    source = (REPO / 'loink_kinematics' / 'src' / 'loink_kinematics_plugin.cpp').read_text()
    declared = {name: kind for kind, name in
                re.findall(r'groupParameter<([\w:]+)>\(node, group_name, "(\w+)"', source)}
    types = {'bool': bool, 'double': float, 'int': int, 'std::string': str}
    for name, value in kinematics['panda_arm'].items():
        if name.startswith('kinematics_solver'):
            continue
        assert name in declared, name
        assert isinstance(value, types[declared[name]]), name
