"""The core stays free of ROS, and its runtime free of torch."""
import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / 'loink_ros' / 'core'
RUNTIME_MODULES = ['loink_ros.core.runtime.solver', 'loink_ros.core.runtime.tracking',
                   'loink_ros.core.runtime.model_file']

PROBE = '''
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'rclpy', 'rosidl_runtime_py'))
print(json.dumps(heavy))
'''


def imported_heavy_modules(*modules: str) -> list[str]:
    result = subprocess.run([sys.executable, '-c', PROBE, *modules], cwd=REPO,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_runtime_imports_neither_torch_nor_rclpy():
    assert imported_heavy_modules(*RUNTIME_MODULES) == []


def test_the_probe_does_see_torch():
    # Guards the test above: importing the training side does pull torch in.
    assert 'torch' in imported_heavy_modules('loink_ros.core.training')


def imported_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
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
