"""The plugin where MoveIt users run it: inside MoveIt's own move_group (OMPL, execution on
ros2_control's mock hardware through the JTC, compute_cartesian_path) and servo_node (twist
commands, pose tracking), moveit_resources' Panda with the shipped config/kinematics.yaml.
One set of processes for every check (loink_ros.tools.bench.move_group_checks), in
.move_group/env.sh's environment (scripts/setup_move_group.sh)."""

import json

import pytest

from loink_ros.tools import move_group_env

CHECKS = ('compute_ik', 'pose_goal_planned_and_executed', 'pose_goal_among_obstacles',
          'cartesian_line', 'servo_twist', 'servo_pose_tracking')


@pytest.fixture(scope='module')
def checks(tmp_path_factory) -> dict:
    assert move_group_env.built(), f'{move_group_env.MOVE_GROUP_ENV} missing: {move_group_env.SETUP_HINT}'
    out = tmp_path_factory.mktemp('move_group') / 'checks.json'
    done = move_group_env.run_python('loink_ros.tools.bench.move_group_runs',
                                     ['checks', '--kinematics', 'loink', '--out', str(out)], timeout=400)
    assert done.returncode == 0 and out.is_file(), done.stderr[-3000:]
    return json.loads(out.read_text())


def test_move_group_and_servo_load_the_plugin_in_process(checks):
    assert checks['answers_in_process'] == {'move_group': True, 'servo_node': True}, checks['logs']


@pytest.mark.parametrize('name', CHECKS)
def test_a_moveit_user_step_works(checks, name):
    result = checks[name]
    assert result['ok'], (result, checks['logs'])
