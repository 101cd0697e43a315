"""loink_node serving the HSA soft-robot model over DDS (a real process, config/hsa.yaml),
every answer validated by the steady-state simulator (there is no URDF)."""

import numpy as np
import pytest
from node_requests import call

from loink_ros.core.problems.hsa.problem import HsaProblem


@pytest.fixture(scope='module')
def problem():
    return HsaProblem()


def test_model_info(hsa_node):
    from loink_msgs.srv import GetModelInfo
    info = call(hsa_node, GetModelInfo, 'get_model_info')
    assert info.model_name == 'hsa' and info.robot_name == 'planar_hsa_3'
    assert list(info.task_names) == ['ee_x', 'ee_y', 'ee_theta']
    assert (len(info.joint_names), info.task_dim, info.latent_dim) == (6, 3, 3)
    assert list(info.joint_lower) == [0.0] * 6 and info.joint_upper[0] == pytest.approx(np.radians(200))
    assert (info.base_frame, info.tip_frame) == ('hsa_base', 'hsa_end_effector')


def test_the_node_solves_on_the_compiled_runtime(hsa_node):
    output = hsa_node.process.output()
    assert 'compiled runtime: hsa-' in output and 'unavailable' not in output, output


def test_refined_answers_reach_the_target_by_the_simulator(hsa_node, problem):
    from loink_msgs.srv import Solve
    rng = np.random.default_rng(17)
    for target in problem.task(rng.uniform(problem.lower, problem.upper, (4, problem.dim))):
        response = call(hsa_node, Solve, 'solve', task=target.tolist())
        assert response.success, response.message
        q = np.array(response.solution.joint_state.position)
        assert np.all((q >= problem.lower) & (q <= problem.upper))
        assert np.linalg.norm(problem.task(q[None])[0] - target) <= 1e-6
        assert response.solution.task_error == pytest.approx(
            np.linalg.norm(problem.task(q[None])[0] - target), abs=1e-12)
        assert response.solution.cost == pytest.approx(problem.cost(q[None])[0], rel=1e-12)


def test_samples_are_ranked_and_inside_the_range(hsa_node, problem):
    from loink_msgs.srv import Sample
    target = problem.task(np.full((1, problem.dim), 1.5))[0]
    sampled = call(hsa_node, Sample, 'sample', task=target.tolist(), count=5, spread=0.1)
    assert sampled.success, sampled.message
    costs = [s.cost for s in sampled.solutions]
    assert len(costs) == 5 and costs == sorted(costs)
    for s in sampled.solutions:
        q = np.array(s.joint_state.position)
        assert np.all((q >= problem.lower) & (q <= problem.upper))


def test_bad_targets_get_their_codes_and_the_node_keeps_serving(hsa_node, problem):
    from loink_msgs.msg import ErrorCode
    from loink_msgs.srv import Solve
    short = call(hsa_node, Solve, 'solve', task=[0.0, 0.3])
    assert short.error_code == ErrorCode.INVALID_TASK_DIMENSION and '3' in short.message
    far = call(hsa_node, Solve, 'solve', task=[0.0, 2.0, 0.0])
    assert far.error_code == ErrorCode.TASK_OUT_OF_BOUNDS and not far.success
    nan = call(hsa_node, Solve, 'solve', task=[float('nan'), 0.3, 0.0])
    assert not nan.success and nan.error_code != ErrorCode.SUCCESS
    target = problem.task(np.full((1, problem.dim), 1.0))[0]
    assert call(hsa_node, Solve, 'solve', task=target.tolist()).success


def test_no_moveit_service_for_a_soft_robot(hsa_node):
    names = [name for name, _ in hsa_node.calls.node.get_service_names_and_types()]
    assert f'{hsa_node.name}/solve' in names
    assert f'{hsa_node.name}/compute_ik' not in names
