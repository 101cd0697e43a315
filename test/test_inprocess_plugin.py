"""The MoveIt plugin in-process (kinematics.yaml's loink_model, no node running): its C++
GoogleTest suite (loink_kinematics/test/test_inprocess_kinematics.cpp) on libraries built with
the documented command, `loink moveit-library`, and the node's own answers as the parity
reference. scripts/setup_moveit.sh builds the suite; without that build every test here fails."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import foreign_feature

from loink_ros.tools import moveit_plugin

REPO = Path(__file__).resolve().parents[1]
# Set-up builds the plugin: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(
    moveit_plugin.built(),
    f'no MoveIt build ({moveit_plugin.MOVEIT_ENV} missing): scripts/setup_moveit.sh builds it '
    'from ../shared/moveit (make test runs it; on a ROS install: colcon build)')

EXPECTED = {
    'InProcess.AnswersAreTheNodesToTheLast1e9',
    'InProcess.TimeoutsOf1_2_5msAreHonouredWhenEveryAnswerIsRejected',
    'InProcess.UnreachablePosesAnswerAtOnce', 'InProcess.BadInputsGetTheirCodes',
    'InProcess.ConsistencyLimitsBoundTheAnswer', 'InProcess.ASeedThatSolvesThePoseIsTheNearestAnswer',
    'InProcess.MultipleSolutionsAreDistinctAndValid', 'InProcess.ACostFunctionReranksTheAnswers',
    'InProcess.MissingCorruptAndStaleFilesAreRefusedAtInitialize',
    'InProcess.AModelOfOtherJointsIsRefused', 'InProcess.ALibraryBuiltForAnotherCpuIsRefusedNotRun',
    'InProcess.TwoGroupsInOneProcessAnswerAtOnceFromManyThreads',
    'InProcess.AGoalAskedAgainWithOtherSeedsGetsTheRankedAnswersInTurn',
    'InProcess.AFailedContinuationAnswersAtOnceOrApproximately', 'InProcess.AnApproximateCallMovesFromItsSeed',
}


def node_answers(path: Path, count: int = 40, seed: int = 20261203) -> Path:
    """panda_link8 poses of collision-free configurations and the node's answers to them:
    its pose conversion and PoseSolver (seed none, weight 0, no collision check: MoveIt's
    callback does that), as ~/solve_pose and ~/compute_ik give them."""
    from geometry_msgs.msg import Pose

    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.pose_solver import PoseRequest, PoseSolver
    from loink_ros.core.runtime.solver import LOInKSolver
    from loink_ros.node.pose_targets import PoseLinks
    model = load_model('panda_full')
    solver = PoseSolver(LOInKSolver(model, problem_for_model(model)))
    links = PoseLinks(solver.problem)
    configurations = solver.problem.sample_collision_free(count, np.random.default_rng(seed))
    rows = []
    for row in moveit_plugin.tip_poses(configurations):
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = row[:3]
        o = pose.orientation
        o.x, o.y, o.z, o.w = row[3:]
        answer = solver.solve(PoseRequest(links.target(pose, 'panda_link8', False)))
        assert answer.success, answer.reason
        rows.append([*row, *answer.q])
    return moveit_plugin.write_rows(path, np.array(rows))


def foreign_cpu_library(cache: Path, monkeypatch) -> tuple[str, Path]:
    """panda_full's library as a CPU with a feature this one lacks would build it: its check
    requires that feature (the rest is this CPU's build)."""
    from loink_ros.core.compiled import cpu_features
    from loink_ros.core.compiled.model_library import build_library
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    feature = foreign_feature()
    with monkeypatch.context() as patch:
        patch.setenv('LOINK_CACHE_DIR', str(cache))
        patch.setattr(cpu_features, 'native_features', lambda compiler: (feature,))
        model = load_model('panda_full')
        return feature, build_library(model, problem_for_model(model)).path


def seed_cache(folder: Path, names: list[str]) -> None:
    """Copies of set-up's current libraries of `names` (built there when missing or stale), so
    that the documented command below finds them current instead of building them again
    (building is tested in test_model_library)."""
    from loink_ros.core.compiled.model_library import build_library
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    folder.mkdir(parents=True)
    for name in names:
        model = load_model(name)
        path = build_library(model, problem_for_model(model)).path
        shutil.copy(path, folder / path.name)


def test_the_plugin_in_process_passes_its_cpp_suite(tmp_path, monkeypatch):
    assert moveit_plugin.built(), f'{moveit_plugin.MOVEIT_ENV} missing: {moveit_plugin.SETUP_HINT}'
    feature, foreign = foreign_cpu_library(tmp_path / 'foreign', monkeypatch)
    cache = tmp_path / 'cache'
    seed_cache(cache / 'moveit', ['panda_full', 'xarm7_full'])
    env = {**os.environ, 'LOINK_CACHE_DIR': str(cache)}
    built = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'moveit-library',
                            'panda_full', 'xarm7_full'], env=env, capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    assert len(list((cache / 'moveit').glob('*.so'))) == 2, built.stdout
    report = tmp_path / 'gtest.xml'
    extra = {'LOINK_CACHE_DIR': str(cache),
             'LOINK_PANDA_URDF': str(moveit_plugin.panda_urdf()),
             'LOINK_PANDA_SRDF': str(REPO / 'loink_kinematics' / 'test' / 'panda_groups.srdf'),
             'LOINK_MODEL': str(REPO / 'models' / 'panda_full.json'),
             'LOINK_OTHER_MODEL': str(REPO / 'models' / 'xarm7_full.json'),
             'LOINK_FOREIGN_LIBRARY': str(foreign), 'LOINK_FOREIGN_FEATURE': feature,
             'LOINK_PARITY': str(node_answers(tmp_path / 'parity.txt'))}
    out, ran = moveit_plugin.run_gtest_suite('test_inprocess_kinematics', report, extra)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-4000:]
    assert set(ran) == EXPECTED and moveit_plugin.all_passed(ran)
    assert 'parity: 40 of 40 within 1e-9' in out.stdout, out.stdout


# Seed 18's first 20 poses hold one whose cost-optimal answer self-collides, on both arms (so
# the callback has something to reject; the checks below hold either way).
@pytest.mark.parametrize('robot', ['panda', 'xarm7'])
def test_loink_bench_moveit_plugin_times_the_plugin_against_trac_ik(tmp_path, robot):
    assert moveit_plugin.built(), f'{moveit_plugin.MOVEIT_ENV} missing: {moveit_plugin.SETUP_HINT}'
    out = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'bench', 'moveit-plugin',
                          '--robot', robot, '--tasks', '20', '--seed', '18', '--json', '-'],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout)
    assert report['poses'] == 20 and report['timeout_s'] > 0 and report['robot'] == robot
    meshes = report['robot_model_meshes']
    assert meshes['links_with_collision_meshes'] == meshes['urdf_links_with_collision_meshes'] > 0
    # Committed figures name no folder of the machine that measured them.
    assert not any(Path(p).is_absolute() for p in (report['model'], meshes['urdf'],
                                                    report['group']['srdf']))
    plugin = report['plugin']
    assert plugin['success'] >= 19 / 20
    assert sum(plugin['moveit_error_codes'].values()) == 20
    assert 0 < plugin['time_ms']['median'] <= plugin['time_ms']['p99'] <= plugin['time_ms']['max']
    assert plugin['regret']['poses'] >= 19 and plugin['regret']['median'] >= -1e-9
    assert 0.0 <= report['trac_ik_speed']['success'] <= 1.0
    for key in ('plugin_with_collision_callback', 'trac_ik_speed_with_collision_callback'):
        section = report[key]
        assert sum(section['moveit_error_codes'].values()) == 20
        # Every SUCCESS answer passed the checker, which is the judge's own check.
        assert section['success_answers_colliding'] == 0
        assert section['callback_calls']['total'] >= section['moveit_error_codes'].get('1', 0)
    callback = report['plugin_with_collision_callback']
    assert callback['success'] >= 19 / 20
    collided = callback['poses_whose_uncallbacked_answer_collided']
    assert collided['with_a_rejection_here'] == collided['poses']
    assert callback['callback_calls']['rejections'] >= collided['poses']
    assert 0 < callback['checker_round_trip_ms']['median']
    threads = report['threads']
    assert threads['threads'] == 8 and threads['calls'] == 20 and threads['answers_per_s'] > 0
    assert threads['every_answer_valid'] and threads['succeeded'] >= 19
    ratios = report['plugin_over_trac_ik_time']
    assert ratios['min'] <= ratios['median'] <= ratios['max']
    # Where the time goes: the phases cover the whole solve, and every answer comes from a start.
    phases = report['phases']
    assert phases['poses'] == 20 and phases['starts'] > 0
    shares = [phases[k]['share_of_whole_mean'] for k in ('newton_ms', 'descent_ms', 'starts_and_ranking_ms')]
    assert min(shares) >= 0.0 and sum(shares) >= 1.0 - 1e-9 and shares[0] > 0.0
    assert phases['newton_steps']['reaching_the_pose_mean'] >= 1.0
    assert phases['best_answer_from_the_first_k_starts'][str(phases['starts'])] == 1.0
