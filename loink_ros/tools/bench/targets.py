"""Reachable targets for benches and tests: the tasks of configurations the problem samples,
kept where they lie inside the model's training bounds."""

import numpy as np

from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime.model_file import ModelFile


def reachable_targets(problem: Problem, model: ModelFile, count: int,
                      rng: np.random.Generator) -> np.ndarray:
    """`count` tasks (count, p) of sampled configurations inside the model's task bounds."""
    targets = np.empty((0, problem.task_dim))
    while len(targets) < count:
        y = problem.task(problem.sample(2 * count, rng))
        inside = np.all((y >= model.task_lower) & (y <= model.task_upper), axis=1)
        targets = np.vstack([targets, y[inside]])
    return targets[:count]
