"""The plugin where MoveIt users run it: inside MoveIt's own move_group (OMPL, execution on
ros2_control's mock hardware through the JTC, compute_cartesian_path) and servo_node (twist
commands, pose tracking), moveit_resources' Panda with the shipped config/kinematics.yaml.
One set of processes for every check (loink_ros.tools.bench.move_group_checks), in
.move_group/env.sh's environment (scripts/setup_move_group.sh)."""

import json

import pytest

from loink_ros.tools import move_group_env

# Set-up builds move_group: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(
    move_group_env.built(),
    f'no move_group build ({move_group_env.MOVE_GROUP_ENV} missing): {move_group_env.SETUP_HINT} '
    'from ../shared/move_group')

CHECKS = ('compute_ik', 'pose_goal_planned_and_executed', 'pose_goal_among_obstacles',
          'cartesian_line', 'servo_twist', 'servo_pose_tracking')


@pytest.fixture(scope='module')
def checks(tmp_path_factory) -> dict:
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



def test_the_benchs_sections_measure_a_scene_and_cartesian_paths(checks):
    """`loink bench movegroup`'s sections, small, on the same processes: a scene's goals
    planned, one line and one rotation, and the comparison read from two results."""
    from loink_ros.tools.bench.movegroup import comparison
    sample = checks['bench_sample']
    scene = sample['scenes']['pillars']
    assert 1 <= scene['plans_found'] <= scene['goals'] == 2, scene
    assert scene['largest_end_error_m'] < 2e-3 and scene['planning_time_s']['median'] > 0.0, scene
    for family in ('lines', 'rotations'):
        assert len(sample['cartesian'][family]['fractions']) == 1
        assert sample['cartesian'][family]['paths_with_a_jump'] == 0, sample['cartesian']
    compared = comparison(sample, sample)
    assert compared['planning_time_median_ratio'] == {'min': 1.0, 'max': 1.0}
    assert compared['targets']['plans_found_at_least_kdl_in_every_scene']
    assert not compared['targets']['lower_goal_posture_in_every_scene']   # equal is not lower
