"""Problems by name, as the CLI and model files refer to them."""

from collections.abc import Callable
from pathlib import Path

from loink_ros.core.problems.arms.described_arm import DescribedArmProblem
from loink_ros.core.problems.arms.panda import PandaFullProblem, PandaPoseProblem, PandaProblem
from loink_ros.core.problems.arms.planar3 import Planar3Problem
from loink_ros.core.problems.arms.robot_spec import spec_from_dict
from loink_ros.core.problems.arms.xarm7 import XArm7Problem
from loink_ros.core.problems.hsa.problem import HsaProblem
from loink_ros.core.problems.magneto.problem import MagnetoProblem
from loink_ros.core.problems.problem import Problem

PROBLEMS: dict[str, Callable[..., Problem]] = {'planar3': Planar3Problem, 'panda': PandaProblem,
                                              'panda_full': PandaFullProblem,
                                              'panda_pose': PandaPoseProblem,
                                              'xarm7_full': XArm7Problem,
                                              'magneto': MagnetoProblem,
                                              'hsa': HsaProblem}


def problem_class(name: str) -> Callable[..., Problem]:
    """The Problem class registered under `name`."""
    if name not in PROBLEMS:
        raise KeyError(f'unknown problem {name!r}; known: {", ".join(sorted(PROBLEMS))}')
    return PROBLEMS[name]


def make_problem(name: str, urdf: Path | None = None) -> Problem:
    """Build the named problem, on another copy of its robot's URDF if given."""
    return problem_class(name)(urdf)


def problem_for_model(model, urdf: Path | None = None) -> Problem:
    """The problem of a loaded model (runtime/model_file.ModelFile): a shipped one by name, or
    the one its stored robot description defines (`loink robot train`), on the URDF copy
    beside the model file unless `urdf` replaces it."""
    problem = model.problem
    description = problem.get('description')
    if description is None:
        return problem_class(problem['name']).from_model(problem, urdf)
    spec = spec_from_dict({**description, 'urdf': problem['urdf']}, model.path.parent,
                          f'{model.path} description')
    return DescribedArmProblem(spec, urdf)
