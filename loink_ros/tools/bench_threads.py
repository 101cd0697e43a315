"""`loink bench threads`: how concurrent solves scale with threads in one process.

The compiled runtime releases the GIL while it solves (ctypes), so threads that share a
solver (as the node's multi-threaded executor does) can solve in parallel; the numpy path
holds the GIL most of the time. Per shipped model: refined validated solves per second
with 1 and 2 threads sharing one solver, on reachable targets, for both runtimes.
"""

import numpy as np

from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.timing import load_average, thread_scaling

MODELS = ('planar3', 'panda', 'magneto')


def reachable_tasks(solver: LOInKSolver, count: int, seed: int) -> np.ndarray:
    """Tasks of sampled configurations inside the model's training bounds."""
    problem, model = solver.problem, solver.model
    tasks = problem.task(problem.sample(4 * count, np.random.default_rng(seed)))
    inside = np.all((tasks >= model.task_lower) & (tasks <= model.task_upper), axis=1)
    return tasks[inside][:count]


def run(count: int, seed: int) -> dict:
    """Thread scaling per model and runtime."""
    out = {'load_average_1_5_15_min': {'before': load_average()}, 'models': {}}
    for name in MODELS:
        model, problem = load_model(name), make_problem(name)
        figures = {}
        for runtime in ('compiled', 'numpy'):
            solver = LOInKSolver(model, problem, runtime=runtime)
            tasks = reachable_tasks(solver, count, seed)
            figures[runtime] = thread_scaling(
                lambda y, s=solver: s.solve(y, refine_answer=True), tasks)
        out['models'][name] = figures
    out['load_average_1_5_15_min']['after'] = load_average()
    return out
