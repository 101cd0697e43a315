"""loink_ros as a colcon package: `colcon test` runs the pytest suite, on colcon's own layout.

colcon runs pytest only for a package whose setup.py names pytest as a test dependency
(tests_require or extras_require['test']); otherwise it falls back to unittest, which
finds 0 tests here. The end-to-end test builds loink_ros with colcon into a temporary
workspace (copied and --symlink-install) and lets `colcon test` run test_ament_index.py
there, so those layout checks also run against what colcon itself installs.
"""
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = 'loink_ros'
SMALL_TEST = REPO / 'test' / 'test_ament_index.py'


def test_setup_py_declares_pytest_the_way_colcon_detects_it():
    from colcon_core.task.python.test import has_test_dependency
    from colcon_python_setup_py.package_identification.python_setup_py import get_setup_information

    assert has_test_dependency(get_setup_information(REPO / 'setup.py'), 'pytest')


def test_package_xml_declares_the_pytest_test_dependency():
    assert '<test_depend>python3-pytest</test_depend>' in (REPO / 'package.xml').read_text()


def colcon(workspace: Path, verb: str, *args: str) -> subprocess.CompletedProcess:
    command = ['colcon', '--log-base', str(workspace / 'log'), verb, '--base-paths', str(REPO),
               '--packages-select', PACKAGE, '--build-base', str(workspace / 'build'),
               '--install-base', str(workspace / 'install'), '--merge-install',
               '--event-handlers', 'console_cohesion+', 'status-', *args]
    result = subprocess.run(command, cwd=workspace, capture_output=True, text=True,
                            timeout=120, env=os.environ.copy())
    assert result.returncode == 0, f'colcon {verb}:\n{result.stdout}\n{result.stderr}'
    return result


INSTALLS = ('copy', 'symlink')


@pytest.fixture(scope='module')
def installs(tmp_path_factory) -> dict[str, Path]:
    """loink_ros built by colcon into a workspace of each kind, and `colcon test` run there,
    side by side (colcon mostly waits on its subprocesses)."""
    assert shutil.which('colcon') is not None, ('colcon is not on PATH: scripts/setup.sh '
                                                'installs it into .venv (requirements-no-ros.txt;'
                                                ' source ./env.sh)')
    workspaces = {install: tmp_path_factory.mktemp(install) for install in INSTALLS}

    def build_and_test(install: str) -> None:
        colcon(workspaces[install], 'build', *(['--symlink-install'] if install == 'symlink' else []))
        colcon(workspaces[install], 'test', '--pytest-args', str(SMALL_TEST))

    with ThreadPoolExecutor(max_workers=len(INSTALLS)) as pool:
        for done in [pool.submit(build_and_test, install) for install in INSTALLS]:
            done.result()
    return workspaces


@pytest.mark.parametrize('install', INSTALLS)
def test_colcon_test_runs_pytest_on_the_colcon_install(installs, install):
    workspace = installs[install]
    summary = subprocess.run(
        ['colcon', '--log-base', str(workspace / 'log'), 'test-result',
         '--test-result-base', str(workspace / 'build'), '--all'],
        cwd=workspace, capture_output=True, text=True, timeout=60).stdout
    match = re.search(r'Summary: (\d+) tests, (\d+) errors, (\d+) failures, (\d+) skipped',
                      summary)
    assert match, summary
    tests, errors, failures, _ = map(int, match.groups())
    assert tests > 0 and errors == 0 and failures == 0, summary
    assert (workspace / 'build' / PACKAGE / 'pytest.xml').is_file()


COMPILED_CHECK = '''
import sys
import loink_ros
from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
solver = LOInKSolver(load_model('planar3'), make_problem('planar3'))
print(loink_ros.__file__)
print(solver.runtime, solver.runtime_note)
'''


def test_the_colcon_install_builds_the_compiled_runtime(installs, tmp_path):
    site = next((installs['copy'] / 'install' / 'lib').glob('python3*/site-packages'))
    env = {**os.environ, 'PYTHONPATH': f'{site}{os.pathsep}{os.environ.get("PYTHONPATH", "")}',
           'LOINK_CACHE_DIR': str(tmp_path / 'cache')}
    out = subprocess.run(['python', '-c', COMPILED_CHECK], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    where, runtime = out.stdout.splitlines()[:2]
    assert where.startswith(str(installs['copy'] / 'install')), where
    assert runtime.startswith('compiled compiled runtime: ') and 'built in' in runtime, runtime
