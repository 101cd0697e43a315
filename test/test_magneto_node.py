"""loink_node serving the Magneto model over DDS (a real process, config/magneto.yaml)."""

import numpy as np
import pytest
from node_requests import call


def test_model_info(magneto_node):
    from loink_msgs.srv import GetModelInfo
    info = call(magneto_node, GetModelInfo, 'get_model_info')
    assert info.model_name == 'magneto'
    assert (len(info.joint_names), info.task_dim, info.latent_dim) == (18, 13, 5)
    assert info.task_names[-1] == 'body_height_cmd'


def test_refined_stances_hit_the_footholds(magneto_node):
    from loink_msgs.srv import Sample, Solve
    from loink_ros.core.problems.magneto.problem import MagnetoProblem
    problem = MagnetoProblem()
    targets = problem.sample_targets(5, np.random.default_rng(7))
    for target in targets:
        response = call(magneto_node, Solve, 'solve', task=target.tolist())
        assert response.success, response.message
        q = np.array(response.solution.joint_state.position)
        assert np.all((q >= problem.lower) & (q <= problem.upper))
        assert np.linalg.norm(problem.task(q)[0] - target) < 1e-9
        assert response.solution.cost == pytest.approx(problem.cost(q)[0], rel=1e-12)
    sampled = call(magneto_node, Sample, 'sample', task=targets[0].tolist(), count=4, spread=0.3)
    costs = [s.cost for s in sampled.solutions]
    assert sampled.success and costs == sorted(costs)


def test_bad_target_then_good(magneto_node):
    from loink_msgs.msg import ErrorCode
    from loink_msgs.srv import Solve
    from loink_ros.core.problems.magneto.problem import MagnetoProblem
    bad = call(magneto_node, Solve, 'solve', task=[0.1] * 12)
    assert bad.error_code == ErrorCode.INVALID_TASK_DIMENSION and '12' in bad.message
    target = MagnetoProblem().sample_targets(1, np.random.default_rng(8))[0]
    assert call(magneto_node, Solve, 'solve', task=target.tolist()).success


def test_no_moveit_service_for_a_stance_task(magneto_node):
    names = [name for name, _ in magneto_node.calls.node.get_service_names_and_types()]
    assert f'{magneto_node.name}/solve' in names
    assert f'{magneto_node.name}/compute_ik' not in names


def test_infeasible_answer_is_no_solution(magneto_node):
    """A latent far from the optimum reaches the footholds exactly but breaks a gimbal or
    clearance condition: NO_SOLUTION naming it, the configuration returned, cost +inf."""
    import math

    from loink_msgs.msg import ErrorCode
    from loink_msgs.srv import Sample, Solve
    from loink_ros.core.problems.magneto.problem import MagnetoProblem
    problem = MagnetoProblem()
    target = problem.example_configuration()
    task = problem.task(target)[0].tolist()
    response = call(magneto_node, Solve, 'solve', task=task, latent=[2.0] * 5)
    assert not response.success and response.error_code == ErrorCode.NO_SOLUTION
    assert 'infeasible' in response.message and ('gimbal' in response.message
                                                 or 'clearance' in response.message)
    q = np.array(response.solution.joint_state.position)
    assert problem.violations(q) and response.solution.task_error < 1e-6
    assert response.solution.has_cost and math.isinf(response.solution.cost)
    sampled = call(magneto_node, Sample, 'sample', task=task, count=20, spread=4.0,
                   use_random_seed=True, random_seed=1)
    feasible = [not problem.violations(np.array(s.joint_state.position)) for s in sampled.solutions]
    assert any(not f for f in feasible), 'every sample feasible: the ranking was not tested'
    assert feasible == sorted(feasible, reverse=True) and sampled.success
