"""`loink bench fit`: how well a model's network fits its task, on held-out configurations.

Forward fit: the network's task yhat(x) against the true task of sampled configurations x,
per task component (RMSE, and the spread of the component for scale). Inverse: the raw
answer G^-1([y; 0]) (clipped, unrefined) to those tasks: its task error by the true
kinematics and how often it was clipped to the joint limits. For a kinematic problem also
how the tip's orientations spread: the singular values of their mean rotation matrix (near
1: clustered; near 0: all around), and the share more than 0.9 pi from the pose task's
nominal, near its chart's cut.
"""

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.kinematic_problem import KinematicProblem
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver

# Held-out configurations: a seed no training run uses.
SEED = 4242


def run(model_name: str, count: int, seed: int = SEED) -> dict:
    model = load_model(model_name)
    problem = problem_for_model(model)
    solver = LOInKSolver(model, problem)
    x = problem.sample(count, np.random.default_rng(seed))
    y = problem.task(x)
    predicted = solver.forward(x)[0]
    error = predicted - y
    raw = solver.solve_rows(y, np.zeros((count, model.latent_dim)), False)[0]
    raw_error = np.array([s.task_error for s in raw])
    position = [i for i, name in enumerate(problem.task_names) if name[-2:] in ('_x', '_y', '_z')]
    return {
        'model': model.name, 'model_version': model.version, 'configurations': count,
        'seed': seed,
        'forward_rmse': dict(zip(problem.task_names, np.sqrt((error ** 2).mean(0)).tolist())),
        'task_std': dict(zip(problem.task_names, y.std(0).tolist())),
        'forward_position_error_median_m': float(np.median(np.linalg.norm(error[:, position], axis=1))),
        'raw_answer_task_error_median': float(np.median(raw_error)),
        'raw_answer_task_error_p95': float(np.percentile(raw_error, 95)),
        'raw_answers_clipped': float(np.mean([s.clipped for s in raw])),
        **orientation_spread(problem, x),
    }


def orientation_spread(problem, x: np.ndarray) -> dict:
    """The tip orientations' spread over configurations x (module docstring); {} for a
    problem without a tip."""
    if not isinstance(problem, KinematicProblem):
        return {}
    rotations = np.array([problem.tip_pose(q)[1] for q in x])
    out = {'orientation_mean_singular_values':
           np.linalg.svd(rotations.mean(0), compute_uv=False).tolist()}
    if problem.is_pose:
        angles = np.array([np.linalg.norm(pin.log3(problem.nominal.T @ r)) for r in rotations])
        out['orientation_share_beyond_0.9pi_of_nominal'] = float(np.mean(angles > 0.9 * np.pi))
    return out
