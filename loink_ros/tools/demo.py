"""`loink demo`: the method on a shipped model, in a few printed lines."""

import time

import numpy as np

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.core.runtime.tracking import Tracker


def run_demo(model_name: str) -> None:
    """Solve, sample and track on `model_name`, printing what a user would look at."""
    model = load_model(model_name)
    solver = LOInKSolver(model, problem_for_model(model))
    names = ', '.join(model.problem['joint_names'])
    print(f'model {model.version}: joints [{names}], task {model.problem["task_names"]}, '
          f'latent dim {model.latent_dim}, cost {model.problem["cost_name"]}')
    tasks = np.linspace(model.task_lower, model.task_upper, 5)[1:4]
    for y in tasks:
        for refine in (False, True):
            began = time.perf_counter()
            s = solver.solve(y, refine_answer=refine)
            ms = 1e3 * (time.perf_counter() - began)
            print(f'solve task {np.round(y, 4).tolist()} refine={refine!s:5}: q = '
                  f'{np.round(s.q, 4).tolist()}  cost {s.cost:.4f} (predicted '
                  f'{s.predicted_cost:.4f})  task error {s.task_error:.2e}  {ms:.2f} ms')
    samples = solver.sample(tasks[1], 6, 0.5, refine_answer=True, random_seed=0)
    print('6 alternatives (latent variance c = spread = 0.5, refined), best first: costs',
          [round(s.cost, 4) for s in samples])
    start = solver.problem.lower + 0.2 * (solver.problem.upper - solver.problem.lower)
    for smoothing in (0.0, 5.0):
        tracker = Tracker(solver, smoothing, refine_answer=True)
        tracker.reset(start)
        qs = [start] + [tracker.step(y).q for y in np.linspace(tasks[0], tasks[2], 40)]
        step = np.linalg.norm(np.diff(qs, axis=0), axis=1)
        print(f'track 40 targets from q = {np.round(start, 3).tolist()} with smoothing mu_s = '
              f'{smoothing}: mean joint step {step.mean():.4f} rad, largest {step.max():.4f} rad')
    print('more: loink --help; loink solve planar3 --task 0.3 --refine --json -')
