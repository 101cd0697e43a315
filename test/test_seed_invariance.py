"""Solve's seed only warm-starts the inverse (Solve.srv): the answer is the same with and
without it, to 1e-9, refined or not, on every shipped model, on both runtimes and through
a real node."""
import numpy as np
import pytest

MODELS = ['planar3', 'panda', 'panda_full', 'xarm7_full', 'magneto', 'hsa']
TARGETS = 40
SAME = 1e-9


def solver_of(name: str, runtime: str):
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    model = load_model(name)
    return LOInKSolver(model, problem_for_model(model), runtime=runtime)


def reachable_targets(solver, count: int, rng) -> list[np.ndarray]:
    """Tasks of random configurations that the model accepts."""
    targets = []
    while len(targets) < count:
        y = solver.problem.task(solver.problem.sample(1, rng))[0]
        try:
            targets.append(solver.check_task(y))
        except ValueError:
            continue
    return targets


@pytest.mark.parametrize('runtime', ['compiled', 'numpy'])
@pytest.mark.parametrize('name', MODELS)
def test_seeded_answer_equals_the_unseeded_one(name, runtime):
    solver = solver_of(name, runtime)
    rng = np.random.default_rng(11)
    problem = solver.problem
    # The numpy reference is the same rule, 5-10x slower: fewer targets.
    for y in reachable_targets(solver, TARGETS if runtime == 'compiled' else TARGETS // 3, rng):
        seed = rng.uniform(problem.lower, problem.upper)
        for refine in (False, True):
            plain = solver.solve(y, refine_answer=refine)
            seeded = solver.solve(y, refine_answer=refine, seed=seed)
            assert np.abs(seeded.q - plain.q).max() <= SAME, (name, runtime, refine, y)
            assert seeded.task_error == pytest.approx(plain.task_error, abs=SAME)


def test_seed_leaves_the_refined_answer_over_dds(panda_full_node):
    """The outside check's case: refined Solves of reachable positions on panda_full, with a
    seed and without (a seed at the joints' middle and a random one)."""
    from sensor_msgs.msg import JointState

    from loink_msgs.srv import GetModelInfo, Solve
    info = panda_full_node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
    solver = solver_of('panda_full', 'numpy')
    rng = np.random.default_rng(4)
    lower, upper = np.array(info.joint_lower), np.array(info.joint_upper)
    for y in reachable_targets(solver, 30, rng):
        answers = []
        for seed in (None, 0.5 * (lower + upper), rng.uniform(lower, upper)):
            request = Solve.Request(task=y.tolist(), refine=True)
            if seed is not None:
                request.seed = JointState(name=list(info.joint_names), position=seed.tolist())
            response = panda_full_node.call(Solve, 'solve', request)
            answers.append(np.array(response.solution.joint_state.position))
        assert np.abs(answers[1] - answers[0]).max() <= SAME
        assert np.abs(answers[2] - answers[0]).max() <= SAME
