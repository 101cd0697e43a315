"""The core stays free of ROS, its runtime free of torch, onnxruntime and tqdm, the node
free of Pinocchio, and the runtime's maps free of their solvers."""
import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / 'loink_ros' / 'core'
RUNTIME = CORE / 'runtime'
RUNTIME_MODULES = ['loink_ros.core.runtime.solver', 'loink_ros.core.runtime.tracking',
                   'loink_ros.core.runtime.model_file']
# Off the runtime's import path: ROS; torch (training only); onnxruntime and tqdm (on demand);
# scipy (with the first model) and pinocchio (with a robot problem), for a fast import.
HEAVY = ('rclpy', 'rosidl_runtime_py', 'torch', 'onnxruntime', 'tqdm', 'scipy', 'pinocchio')
MAPS = ['orthogonal_map.py', 'monotone_map.py', 'bilip_map.py', 'cost_head_map.py']
SOLVERS = ['newton_inverse', 'davis_yin_inverse', 'network_inverse']

PROBE = f'''
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})
print(json.dumps(heavy))
'''


def imported_heavy_modules(*modules: str) -> list[str]:
    result = subprocess.run([sys.executable, '-c', PROBE, *modules], cwd=REPO,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_runtime_imports_none_of_the_heavy_packages():
    assert imported_heavy_modules(*RUNTIME_MODULES) == []


def test_the_probe_does_see_torch_onnxruntime_and_tqdm():
    # Guards the test above: the training side pulls in torch and tqdm, the ONNX forward
    # onnxruntime.
    heavy = imported_heavy_modules('loink_ros.core.training',
                                   'loink_ros.core.runtime.onnx_forward')
    assert {'torch', 'onnxruntime', 'tqdm'} <= {m.split('.')[0] for m in heavy}


def imported_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f'{node.module}.{alias.name}' for alias in node.names}
    return names


def test_no_core_file_imports_ros():
    files = sorted(CORE.rglob('*.py'))
    assert len(files) > 10
    offenders = {}
    for path in files:
        ros = {n for n in imported_names(path)
               if n.split('.')[0] in ('rclpy', 'loink_msgs', 'rosidl_runtime_py', 'ament_index_python')}
        text = path.read_text()
        if ros or "import_module('rclpy" in text or '__import__("rclpy' in text:
            offenders[str(path.relative_to(REPO))] = sorted(ros)
    assert offenders == {}


def test_baselines_serve_only_tools_and_tests():
    # The product (core and node) never depends on what it is measured against.
    product = sorted(CORE.rglob('*.py')) + sorted((REPO / 'loink_ros' / 'node').rglob('*.py'))
    offenders = [str(path.relative_to(REPO)) for path in product
                 if any(n.startswith('loink_ros.baselines') for n in imported_names(path))]
    assert offenders == []
    tools = sorted((REPO / 'loink_ros' / 'tools').rglob('*.py'))
    assert any(n.startswith('loink_ros.baselines') for p in tools for n in imported_names(p))


def test_no_node_file_imports_pinocchio():
    # Frames and URDF limits are the core problem's business; the node asks the problem.
    files = sorted((REPO / 'loink_ros' / 'node').rglob('*.py'))
    assert len(files) > 5
    offenders = [str(path.relative_to(REPO)) for path in files
                 if any(n.split('.')[0] == 'pinocchio' for n in imported_names(path))]
    assert offenders == []


def test_the_maps_do_not_import_their_solvers():
    # Maps are evaluated forward; the inverse solvers (runtime/*_inverse.py) build on them.
    offenders = {}
    for name in MAPS:
        solvers = {n for n in imported_names(RUNTIME / name)
                   if n.startswith('loink_ros.core.runtime.') and n.endswith('_inverse')}
        if solvers:
            offenders[name] = sorted(solvers)
    assert offenders == {}
    solver_imports = set().union(*(imported_names(RUNTIME / f'{s}.py') for s in SOLVERS))
    assert 'loink_ros.core.runtime.monotone_map' in solver_imports
