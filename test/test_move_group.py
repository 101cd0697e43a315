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


def test_loink_bench_movegroup_compares_both_solvers_on_the_same_goals():
    """The bench, small: both solvers' processes answer every scene's goals and the Cartesian
    paths, and the comparison reads both (Servo tracking: the checks above)."""
    from loink_ros.tools.bench import movegroup
    result = movegroup.run(goals=2, cartesian=2, servo_paths=0)
    for solver in movegroup.SOLVERS:
        scenes = result[solver]['scenes']
        assert set(scenes) == {'pillars', 'shelf', 'boxes'}
        assert all(1 <= s['plans_found'] <= s['goals'] == 2 for s in scenes.values()), scenes
        assert all(s['largest_end_error_m'] < 2e-3 for s in scenes.values()), scenes
        for family in ('lines', 'rotations'):
            assert len(result[solver]['cartesian'][family]['fractions']) == 2
    assert result['loink']['kinematics'] == 'loink' and result['kdl']['kinematics'] == 'kdl'
    ratios = result['loink_vs_kdl']['planning_time_median_ratio']
    assert 0.0 < ratios['min'] <= ratios['max'] < 100.0
