"""The MoveIt kinematics plugin (loink_kinematics): its C++ GoogleTest suite
(loink_kinematics/test/test_loink_kinematics.cpp) against a real loink_node on panda_full,
which the suite starts, stops and restarts itself. scripts/setup_moveit.sh builds it against
../shared/moveit's MoveIt pieces; without that build every test here fails."""
import os

import numpy as np
import pytest

from loink_ros.tools import moveit_plugin

# Set-up builds the plugin: missing, every test here fails (never skips; conftest.py).
pytestmark = pytest.mark.needs_setup(
    moveit_plugin.built(),
    f'no MoveIt build ({moveit_plugin.MOVEIT_ENV} missing): scripts/setup_moveit.sh builds it '
    'from ../shared/moveit (make test runs it; on a ROS install: colcon build)')

EXPECTED = {
    'Loading.ByItsDeclaredName', 'Plugin.InitializesPandaArm', 'Plugin.RedundancyIsTheCostsNotDiscretised',
    'Plugin.RefusesAGroupThatIsNoChain',
    'Plugin.BadParametersAreRefusedAndAnIntegerToleranceIsTaken',
    'Plugin.ForwardKinematicsAgreesWithPinocchio', 'Plugin.ReachablePosesSucceedInsideTheLimits',
    'Plugin.GetPositionIKAnswersNearTheSeed', 'Plugin.GetPositionIKGivesBackASeedThatSolvesThePose',
    'Plugin.ConsistencyLimitsBoundTheAnswer', 'Plugin.AFailedContinuationAnswersAtOnceOrApproximately',
    'Plugin.AnApproximateCallMovesFromItsSeed',
    'Plugin.PositionOnlyIKLeavesTheOrientationFree',
    'Plugin.UnreachablePoseGivesNoSolutionWithinTheTimeout',
    'Plugin.TheTimeoutIsHonouredForReachablePosesToo',
    'Plugin.BadRequestsGetTheirCodesAndTheNodeKeepsServing',
    'Plugin.ARejectedAnswerGivesTheNextRankedOne', 'Plugin.RejectingEveryAnswerEndsWithinTheTimeout',
    'Plugin.ManyThreadsAtOnceNeverDeadlock', 'StoppedNode.GivesAnErrorCodeWithinTheTimeoutAndRecovers',
}


def fk_reference(path, count=24, seed=20261202):
    """Collision-free Panda configurations and panda_link8's pose by Pinocchio."""
    from loink_ros.core.problems.registry import make_problem
    configurations = make_problem('panda_full').sample_collision_free(
        count, np.random.default_rng(seed))
    return moveit_plugin.write_rows(
        path, np.hstack([configurations, moveit_plugin.tip_poses(configurations)]))


def test_the_plugin_passes_its_cpp_suite_against_a_real_node(tmp_path):
    assert moveit_plugin.built(), f'{moveit_plugin.MOVEIT_ENV} missing: {moveit_plugin.SETUP_HINT}'
    namespace = f'/loink_plugin_test_{os.getpid()}'
    report = tmp_path / 'gtest.xml'
    env = {'LOINK_NODE_COMMAND': str(moveit_plugin.node_script(tmp_path / 'node.sh', namespace)),
           'LOINK_SOLVE_POSE': f'{namespace}/loink_node/solve_pose',
           'LOINK_PANDA_URDF': str(moveit_plugin.panda_urdf()),
           'LOINK_PANDA_SRDF': str(moveit_plugin.PANDA_SRDF),
           'LOINK_FK_REFERENCE': str(fk_reference(tmp_path / 'fk.txt'))}
    out, ran = moveit_plugin.run_gtest_suite('test_loink_kinematics', report, env)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-4000:]
    assert set(ran) == EXPECTED and moveit_plugin.all_passed(ran)
