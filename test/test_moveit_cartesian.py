"""MoveIt's own CartesianInterpolator (moveit_core's robot_state, what move_group's Cartesian
path service runs) driving the plugin through pluginlib with the shipped config/kinematics.yaml,
on moveit_resources' Panda: straight lines and rotations from the ready posture complete
without a jump, and `loink bench moveit-cartesian` reports both plugins. Without the MoveIt
build (scripts/setup_moveit.sh, from ../shared/moveit) every test here fails."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loink_ros.tools import moveit_plugin
from loink_ros.tools.bench import moveit_cartesian

# Set-up builds the plugin: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(
    moveit_plugin.built(),
    f'no MoveIt build ({moveit_plugin.MOVEIT_ENV} missing): scripts/setup_moveit.sh builds it '
    'from ../shared/moveit (make test runs it; on a ROS install: colcon build)')

LOINK = 'loink_kinematics/LOInKKinematicsPlugin'
READY = [0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0]   # panda_full's example configuration


def start_text(q) -> str:
    return ' '.join(f'{v:.17g}' for v in q)


def test_lines_and_rotations_from_the_ready_posture_complete_without_a_jump(tmp_path):
    robot = moveit_cartesian.panda()
    start = start_text(READY)
    cases = [f'line {start} ' + ' '.join(str(v) for v in 0.1 * sign * axis)
             for axis in np.eye(3) for sign in (1, -1)]
    cases += [f'rotate {start} ' + ' '.join(str(v) for v in axis) + ' 0.5' for axis in np.eye(3)]
    results = moveit_cartesian.run_plugin(robot, LOINK, moveit_cartesian.loink_parameters(robot.model),
                                          cases, tmp_path)
    for case, result in zip(cases, results):
        states = np.array(result['states'])
        assert result['fraction'] == pytest.approx(1.0), case
        assert len(states) >= 10, case   # 1 cm or 0.035 rad per waypoint
        assert np.abs(np.diff(states, axis=0)).max() <= moveit_cartesian.JUMP, case


def test_loink_bench_moveit_cartesian_reports_both_plugins(tmp_path):
    out = tmp_path / 'bench.json'
    done = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'bench', 'moveit-cartesian',
                           '--tasks', '10', '--servo-paths', '1', '--json', str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    for family in moveit_cartesian.FAMILIES:
        figures = report['families'][family]
        assert figures['loink']['paths'] == figures['kdl']['paths'] > 0
        assert figures['loink']['paths_with_a_jump'] == 0
        assert 0.0 <= figures['loink']['completed'] <= 1.0
    for plugin in ('loink', 'kdl'):
        assert report['servo'][plugin]['calls'] == 1000
    assert report['servo']['loink']['flips'] == 0
    assert str(Path.home()) not in out.read_text()


def test_loink_bench_public_paths_reports_every_family_and_the_reconfiguration(tmp_path):
    """`loink bench public-paths` small: each family's plans against KDL's interpolator, why
    each stopped plan stopped, and the reconfiguration path's stop at joint 1's limit."""
    from loink_ros.tools.bench import public_paths
    out = tmp_path / 'public.json'
    done = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'bench', 'public-paths',
                           '--tasks', '1', '--json', str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    for family in public_paths.FAMILIES:
        figures = report['families'][family]
        assert figures['paths'] == 1
        plan = figures['plan']
        stopped = round(1.0 - plan['completed'])
        assert sum(plan['stopped_because'].values()) == stopped
        assert plan['valid'] == plan['completed']   # every completed plan valid by CppFlow's step
    reconfiguration = report['reconfiguration']['plan']
    assert not reconfiguration['complete'] and 'panda_joint1 at its upper limit' in reconfiguration['reason']
