"""MoveIt's own kinematics-plugin test harness (moveit_kinematics' test_kinematics_plugin, built
by ../shared/moveit's `harness` step, which scripts/setup_moveit.sh runs) on moveit_resources'
Panda, panda_arm up to panda_link8: KDL as the control, then loink_kinematics in-process (as
config/kinematics.yaml sets it) and as the client of a real loink_node on panda_full. Every
upstream test must run and pass, none skipped; the upstream tests and their thresholds are
used unchanged. Without the MoveIt build (scripts/setup_moveit.sh, from ../shared/moveit)
every test here fails."""
import os
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import yaml

from loink_ros.tools import moveit_plugin
from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment

# Set-up builds the plugin: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(
    moveit_plugin.built(),
    f'no MoveIt build ({moveit_plugin.MOVEIT_ENV} missing): scripts/setup_moveit.sh builds it '
    'from ../shared/moveit (make test runs it; on a ROS install: colcon build)')

UPSTREAM = {'getFK', 'randomWalkIK', 'unitIK', 'searchIK', 'searchIKWithCallback', 'getIK',
            'getIKMultipleSolutions', 'getNearestIKSolution'}
# panda-kdl-test.yaml's test counts, each at least 100 (it leaves the last three at 0).
COUNTS = {'num_fk_tests': 100, 'num_ik_tests': 100, 'num_ik_cb_tests': 100,
          'num_ik_multiple_tests': 100, 'num_nearest_ik_tests': 100}
HARNESS_BINARY = moveit_plugin.MOVEIT_WORK / 'install/lib/moveit_kinematics/test_kinematics_plugin'


def run_harness(folder: Path, plugin: str, parameters: dict,
                prefix: Path | str | None = None) -> subprocess.CompletedProcess:
    """../shared/moveit/run_harness.sh on `plugin` with `parameters` merged over the test
    config; its gtest.xml, log and params.yaml land in folder/run."""
    assert HARNESS_BINARY.is_file(), f'{HARNESS_BINARY} missing: {moveit_plugin.SETUP_HINT}'
    extra = folder / 'extra.yaml'
    extra.write_text(yaml.safe_dump(parameters))
    isolate_ros_environment()
    env = {**os.environ, 'OUT_DIR': str(folder / 'run')}
    if prefix is not None:
        env['PLUGIN_PREFIX'] = str(prefix)
    return subprocess.run(['bash', str(moveit_plugin.SHARED_MOVEIT / 'run_harness.sh'),
                           str(moveit_plugin.MOVEIT_WORK), plugin, str(extra)],
                          env=env, capture_output=True, text=True, timeout=900)


def assert_every_upstream_test_passed(out: subprocess.CompletedProcess, folder: Path,
                                      context: str = '') -> None:
    """All of UPSTREAM ran and passed by gtest's XML; `context` goes with a failure."""
    report = folder / 'run' / 'gtest.xml'
    assert report.is_file(), out.stdout[-6000:] + out.stderr[-3000:] + context
    cases = {c.get('name'): c for c in ElementTree.parse(report).getroot().iter('testcase')}
    assert set(cases) == UPSTREAM, out.stdout[-3000:] + context
    failed = {name: [f.get('message', '')[:500] for f in case.iter('failure')]
              for name, case in cases.items()
              if case.get('status') != 'run' or case.get('result') != 'completed'
              or case.find('failure') is not None or case.find('skipped') is not None}
    assert not failed, f'{failed}{context}'
    assert out.returncode == 0, out.stdout[-3000:] + context


def loink_ros_prefix(folder: Path) -> Path:
    """An install prefix holding loink_ros alone (its ament index entry and share/, where the
    shipped models are), as a ROS workspace with both packages has it; no libraries, so
    that the closure's moveit_msgs in .colcon/install stays out of MoveIt's process."""
    prefix = folder / 'loink_ros_prefix'
    index = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True)
    (index / 'loink_ros').write_text('')
    (prefix / 'share' / 'loink_ros').symlink_to(
        moveit_plugin.REPO / '.colcon' / 'install' / 'share' / 'loink_ros')
    return prefix


def test_kdl_the_control_passes_every_upstream_test(tmp_path):
    out = run_harness(tmp_path, 'kdl_kinematics_plugin/KDLKinematicsPlugin', COUNTS)
    assert_every_upstream_test_passed(out, tmp_path)


def test_loink_kinematics_in_process_passes_every_upstream_test(tmp_path):
    """config/kinematics.yaml's panda_arm entry as it is (loink_model: panda_full, in-process,
    nothing else running), on the library scripts/setup_moveit.sh built."""
    kinematics = yaml.safe_load((moveit_plugin.REPO / 'config' / 'kinematics.yaml').read_text())
    group = {k: v for k, v in kinematics['panda_arm'].items() if not k.startswith('kinematics_solver')}
    assert group['loink_model'] == 'panda_full'
    out = run_harness(tmp_path, 'loink_kinematics/LOInKKinematicsPlugin',
                      {**COUNTS, 'robot_description_kinematics': {'panda_arm': group}},
                      prefix=f'{loink_ros_prefix(tmp_path)}:{moveit_plugin.REPO / ".moveit" / "install"}')
    assert_every_upstream_test_passed(out, tmp_path)
    assert 'answers in-process from' in (tmp_path / 'run' / 'harness.log').read_text()


def test_loink_kinematics_passes_every_upstream_test_against_a_real_node(tmp_path):
    # The plugin as a client of a node of its own; initialize waits for it to come up.
    isolate_ros_environment()
    node = NodeProcess(f'/loink_harness_{os.getpid()}', params_file=moveit_plugin.PANDA_CONFIG,
                       cwd=moveit_plugin.REPO)
    group = {'loink_service': f'{node.prefix}/solve_pose', 'service_wait': 120.0}
    try:
        out = run_harness(tmp_path, 'loink_kinematics/LOInKKinematicsPlugin',
                          {**COUNTS, 'robot_description_kinematics': {'panda_arm': group}},
                          prefix=moveit_plugin.REPO / '.moveit' / 'install')
    finally:
        _, node_log = node.stop()
    assert_every_upstream_test_passed(out, tmp_path, '\nloink_node:\n' + node_log[-3000:])
