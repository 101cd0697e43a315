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
from loink_ros.tools.bench.targets import reachable_targets
from loink_ros.tools.bench.timing import load_average, thread_scaling

MODELS = ('planar3', 'panda', 'magneto')


def run(count: int, seed: int) -> dict:
    """Thread scaling per model and runtime."""
    out = {'load_average_1_5_15_min': {'before': load_average()}, 'models': {}}
    for name in MODELS:
        model, problem = load_model(name), make_problem(name)
        figures = {}
        tasks = reachable_targets(problem, model, count, np.random.default_rng(seed))
        for runtime in ('compiled', 'numpy'):
            solver = LOInKSolver(model, problem, runtime=runtime)
            figures[runtime] = thread_scaling(
                lambda y, s=solver: s.solve(y, refine_answer=True), tasks)
        out['models'][name] = figures
    out['load_average_1_5_15_min']['after'] = load_average()
    return out
