"""One cost rule for every feasibility condition (IKSolution.msg): an answer's cost is +inf
exactly when it breaks one of the robot's conditions, checked per condition through a real
node over DDS; joint limits are never broken (every answer is clipped into them)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from loink_ros.core.runtime.solution import Solution

REPO = Path(__file__).resolve().parents[1]
# Condition -> the fragment of Problem.violations' line that names it.
CONDITIONS = {'gimbal z': 'gimbal z limit', 'gimbal y': 'gimbal y limit',
              'body clearance': 'body clearance', 'magnet force': 'above the magnet force'}
# A magnet weaker than the shipped model's stances need (their median is about 7.4 N), so
# that the magnet force is a condition answers can break.
WEAK_MAGNET_N = 7.0


def conditions_of(violations) -> set[str]:
    return {name for name, fragment in CONDITIONS.items()
            if any(fragment in line for line in violations)}


def answer_breaking_only(solver, condition: str, seed: int = 0, batches: int = 400):
    """(task, latent, refine, in-process Solution) of an answer on its task whose only broken
    condition is `condition`: latents sampled on targets of random stances."""
    problem, rng = solver.problem, np.random.default_rng(seed)
    for _ in range(batches):
        y = problem.task(problem.sample(1, rng))[0]
        z = rng.normal(0.0, rng.choice([0.5, 1.5]), (8, solver.model.latent_dim))
        refine = bool(rng.integers(2))
        for row, solution in zip(z, solver.solve_rows(np.repeat(y[None], 8, 0), z, refine)[0]):
            if solution.task_error < 1e-6 and conditions_of(solution.violations) == {condition}:
                return y, row, refine, solution
    pytest.fail(f'no answer breaking only {condition} in {batches * 8} samples')


def magneto_solver(path: str = 'magneto'):
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    model = load_model(path)
    return LOInKSolver(model, problem_for_model(model))


def solve_on_node(node, y, z, refine):
    from loink_msgs.srv import Solve
    return node.call(Solve, 'solve', Solve.Request(task=y.tolist(), latent=z.tolist(),
                                                   refine=refine))


def assert_infeasible_answer(response, solution, condition: str) -> None:
    """NO_SOLUTION naming the condition, the in-process answer, cost +inf."""
    from loink_msgs.msg import ErrorCode
    assert not response.success and response.error_code == ErrorCode.NO_SOLUTION
    assert response.message.startswith('infeasible: ')
    assert CONDITIONS[condition] in response.message, response.message
    assert conditions_of([response.message]) == {condition}, response.message
    np.testing.assert_allclose(response.solution.joint_state.position, solution.q, atol=1e-9)
    assert response.solution.has_cost and response.solution.cost == math.inf


def test_the_rule_holds_for_every_solution_built():
    q, z = np.zeros(2), np.zeros(1)
    broken = Solution(q, z, 1.0, 10.56, 0.0, False, True, True, ('body clearance 0.0287 m',))
    assert broken.cost == math.inf
    assert Solution(q, z, 1.0, 16.11, 0.0, False, True, True).cost == 16.11


@pytest.fixture(scope='module')
def shipped_magneto():
    return magneto_solver()


@pytest.mark.parametrize('condition', ['gimbal z', 'gimbal y', 'body clearance'])
def test_each_condition_alone_gives_inf_through_the_node(condition, shipped_magneto,
                                                         magneto_node):
    y, z, refine, solution = answer_breaking_only(shipped_magneto, condition)
    if condition == 'body clearance':   # J is finite there: the rule, not J, gives +inf
        assert np.isfinite(shipped_magneto.problem.cost(solution.q)[0])
    response = solve_on_node(magneto_node, y, z, refine)
    assert_infeasible_answer(response, solution, condition)


def test_magnet_force_alone_gives_inf_through_the_node(tmp_path, shipped_magneto):
    meta = json.loads((REPO / 'models' / 'magneto.json').read_text())
    meta['problem']['magnet_force'] = WEAK_MAGNET_N
    (tmp_path / meta['onnx']).write_bytes((REPO / 'models' / meta['onnx']).read_bytes())
    path = tmp_path / 'weak_magnet.json'
    path.write_text(json.dumps(meta))
    solver = magneto_solver(str(path))
    assert solver.problem.magnet_force == WEAK_MAGNET_N
    y, z, refine, solution = answer_breaking_only(solver, 'magnet force')
    assert np.isfinite(shipped_magneto.problem.cost(solution.q)[0])
    from conftest import serve_node
    served = serve_node('weak_magnet', REPO / 'config' / 'magneto.yaml', {'model': str(path)})
    node = next(served)
    try:
        assert_infeasible_answer(solve_on_node(node, y, z, refine), solution, 'magnet force')
    finally:
        next(served, None)


def test_sampled_costs_ascend_and_infeasible_ones_are_inf(shipped_magneto, magneto_node):
    """The outside check's set-up: samples near the example stance, refine on and off,
    spread 0.1-100; no infeasible answer with a finite cost, none before a feasible one."""
    from loink_msgs.srv import Sample
    problem, rng = shipped_magneto.problem, np.random.default_rng(5)
    example = shipped_magneto.example_task()
    infeasible_seen = 0
    for spread in (0.1, 1.0, 10.0, 100.0):
        for refine in (False, True):
            task = example + rng.normal(0.0, 0.005, example.shape)
            response = magneto_node.call(Sample, 'sample', Sample.Request(
                task=task.tolist(), count=30, spread=spread, refine=refine,
                use_random_seed=True, random_seed=int(rng.integers(1 << 30))))
            answers = response.solutions
            broken = [bool(problem.violations(np.array(a.joint_state.position))) for a in answers]
            infeasible_seen += sum(broken)
            assert [a.cost == math.inf for a in answers] == broken
            assert broken == sorted(broken), 'an infeasible answer ranks before a feasible one'
            feasible_costs = [a.cost for a, b in zip(answers, broken) if not b]
            within = [a.task_error <= 0.01 for a, b in zip(answers, broken) if not b]
            # Solutions first, then the feasible answers off the task; by cost within each.
            for group in (True, False):
                costs = [c for c, w in zip(feasible_costs, within) if w == group]
                assert costs == sorted(costs)
    assert infeasible_seen > 0, 'no infeasible sample: the rule was not exercised'


def test_joint_limits_hold_on_clipped_answers(shipped_magneto, magneto_node, planar3_node):
    """A far latent leaves the joint box; the answer is clipped into it, and its cost follows
    the rule (Magneto) or is the finite cost (planar3, which has no other conditions)."""
    from loink_msgs.srv import GetModelInfo, Solve
    for node in (magneto_node, planar3_node):
        info = node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
        if node is magneto_node:
            task = shipped_magneto.example_task().tolist()
        else:
            task = [0.5 * (lo + hi) for lo, hi in zip(info.task_lower, info.task_upper)]
        response = node.call(Solve, 'solve', Solve.Request(task=task,
                                                           latent=[900.0] * info.latent_dim))
        q = np.array(response.solution.joint_state.position)
        assert np.all(q >= np.array(info.joint_lower)) and np.all(q <= np.array(info.joint_upper))
        infeasible = response.message.startswith('infeasible')
        assert response.solution.has_cost
        assert (response.solution.cost == math.inf) == infeasible
        if node is planar3_node:
            assert math.isfinite(response.solution.cost) and not infeasible
