"""What the node needs before it serves: the solver, or a one-line reason why not."""

from pathlib import Path

from loink_ros.core.problems.registry import make_problem
from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver


class StartupError(RuntimeError):
    """The node cannot start; the message is the one line printed on stderr."""


def load_solver(model: str, urdf: str, tol: float, max_iter: int,
                bounds_margin: float) -> LOInKSolver:
    """Model file + robot problem -> solver; every failure becomes a StartupError."""
    try:
        loaded = load_model(model)
    except ModelFileError as err:
        raise StartupError(str(err)) from None
    if urdf and not Path(urdf).is_file():
        raise StartupError(f'urdf {urdf} does not exist')
    try:
        robot = make_problem(loaded.problem['name'], Path(urdf) if urdf else None)
        return LOInKSolver(loaded, robot, 'newton', tol, max_iter, bounds_margin)
    except (KeyError, ValueError, RuntimeError, OSError) as err:
        # Unknown problem, a URDF Pinocchio cannot read, or joints that differ from the model's.
        text = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise StartupError(f'model {loaded.path}: {text}') from None
