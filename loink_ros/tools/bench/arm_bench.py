"""The set-up the planar3 and panda benches share: the load before the run, the model, its
solver as the node serves it (compiled where it builds), the numpy reference path of the same
model, and the seeded generator of the targets."""

from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime.model_file import ModelFile, load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.timing import load_average


@dataclass
class ArmBench:
    problem: Problem
    model: ModelFile
    solver: LOInKSolver       # the runtime the node serves with
    reference: LOInKSolver    # runtime='numpy': what the compiled runtime is checked against
    rng: np.random.Generator
    load_before: list[float]  # timings are only comparable in one run

    @classmethod
    def start(cls, problem: Problem, model_name: str, seed: int) -> 'ArmBench':
        load_before = load_average()
        model = load_model(model_name)
        return cls(problem, model, LOInKSolver(model, problem),
                   LOInKSolver(model, problem, runtime='numpy'), np.random.default_rng(seed),
                   load_before)
