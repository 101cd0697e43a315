"""Loading the compiled kernel for a solver: build or reuse the cached library, then check
it against the numpy path before any request is served."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from loink_ros.core.compiled.build import BuildError, compiled_library
from loink_ros.core.compiled.compiled_kernel import COST, ERROR, CompiledKernel
from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime.model_file import ModelFile

if TYPE_CHECKING:
    from loink_ros.core.runtime.solver import LOInKSolver

# The start-up check: compiled and numpy answers to the example target agree to this
# (joint units; the parity tests hold them to 1e-10 on many targets).
AGREE = 1e-9
# Refined answers are compared only where the raw answer starts this close to the target
# (task units), as in the parity tests: from far off, the damped least squares between the
# limits is chaotic (a 1e-15 difference of rounding can end 1e-7 apart), and the raw answer
# has already checked the network, the kinematics and the cost.
REFINE_CHECK_DISTANCE = 0.05


def load_kernel(solver: LOInKSolver, model: ModelFile,
                problem: Problem) -> tuple[CompiledKernel | None, str]:
    """(kernel, what was done) or (None, why not: the numpy path serves)."""
    try:
        build = compiled_library(problem)
        try:
            kernel = CompiledKernel(build.path, model, problem)
            disagreement = _disagreement(solver, kernel)
        except OSError:
            if not build.cached:
                raise
            disagreement = float('inf')    # an unreadable cached file
        if not disagreement <= AGREE and build.cached:   # a stale cache: build anew, once
            build = compiled_library(problem, rebuild=True)
            kernel = CompiledKernel(build.path, model, problem)
            disagreement = _disagreement(solver, kernel)
    except (BuildError, OSError, RuntimeError, ValueError) as err:
        return None, f'compiled runtime unavailable ({err}); solving in numpy'
    if not disagreement <= AGREE:
        return None, (f'compiled runtime unavailable ({build.path.name} differs from numpy by '
                      f'{disagreement:.3g} on the example target); solving in numpy')
    how = 'cached' if build.cached else f'built in {build.seconds:.2f} s'
    return kernel, f'compiled runtime: {build.path.name} ({how})'


def _disagreement(solver: LOInKSolver, kernel: CompiledKernel) -> float:
    """Largest difference of q, cost and task error on the example target, raw and refined
    (the learned optimum inside the limits too, for problems whose optima lie on them)."""
    y = solver.example_task()[None]
    z = np.zeros((1, solver.model.latent_dim))
    worst = 0.0
    raw_error = solver.solve_rows_numpy(y, z, False)[0][0].task_error
    for refine in (False, True):
        if refine and raw_error > REFINE_CHECK_DISTANCE:
            continue
        reference = solver.solve_rows_numpy(y, z, refine)[0][0]
        result = kernel.solve(y, z, solver._tol, solver._max_iter, refine)
        worst = max(worst, _difference(solver, reference, result.q[0], result.info[0]))
        if solver.problem.optimum_on_bounds:
            inside = solver.solve_optimum_inside_numpy(y, refine)[0]
            result = kernel.solve_inside(y, solver._tol, solver._max_iter, refine)
            worst = max(worst, _difference(solver, inside, result.q[0], result.info[0]))
    return worst


def _difference(solver: LOInKSolver, reference, q: np.ndarray, info: np.ndarray) -> float:
    """Largest difference of the kernel's q, cost and task error from a numpy Solution's."""
    # The cost function's value: an infeasible answer's Solution.cost is +inf.
    cost = float(solver.problem.cost(reference.q[None])[0])
    return max(float(np.abs(q - reference.q).max()), abs(info[COST] - cost),
               abs(info[ERROR] - reference.task_error))
