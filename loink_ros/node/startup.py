"""What the node needs before it serves: the solver, or a one-line reason why not."""

from pathlib import Path

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.node.failures import StartupError, captured_stderr, one_line, with_said
from loink_ros.node.parameters import Settings
from loink_ros.node.robot_description import checked_urdf


def load_solver(settings: Settings, description: str = '') -> tuple[LOInKSolver, str]:
    """Model file + robot problem -> (solver, what libraries printed meanwhile).

    `description` is URDF XML (robot_description) or '' for the `urdf` parameter's file
    ('' again: the model's own URDF). Every failure becomes a one-line StartupError.
    """
    with captured_stderr() as said:
        try:
            solver = build_solver(settings, description)
        except StartupError as err:
            failure = str(err)
        else:
            failure = None
    if failure is not None:
        raise StartupError(with_said(failure, said.text))
    return solver, said.text


def build_solver(settings: Settings, description: str) -> LOInKSolver:
    """load_solver without the stderr capture."""
    try:
        loaded = load_model(settings.model)
    except (ModelFileError, ValueError) as err:
        raise StartupError(one_line(str(err))) from None
    urdf = settings.urdf
    if description and urdf:
        raise StartupError('set either urdf or robot_description (parameter or topic), not both')
    if description:
        urdf = str(checked_urdf(description, loaded))
    elif urdf and not Path(urdf).is_file():
        raise StartupError(f'urdf {urdf} does not exist')
    try:
        robot = problem_for_model(loaded, Path(urdf) if urdf else None)
        return LOInKSolver(loaded, robot, 'newton', settings.inverse_tolerance,
                           settings.inverse_max_iterations, settings.bounds_margin,
                           runtime=settings.runtime)
    except (KeyError, ValueError, RuntimeError, OSError) as err:
        # Unknown problem, a URDF Pinocchio cannot read, or joints that differ from the model's.
        text = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise StartupError(f'model {loaded.path}: {one_line(str(text))}') from None
