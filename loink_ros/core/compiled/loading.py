"""Loading the compiled kernel for a solver: build or reuse the cached library, then check
it against the numpy path before any request is served. The solver hands in its numpy path
(NumpyReference), so this module needs nothing of the solver's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from loink_ros.core.compiled.build import BuildError, compiled_library
from loink_ros.core.compiled.compiled_kernel import COST, ERROR, CompiledKernel
from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime.model_file import ModelFile
from loink_ros.core.runtime.solution import Solution

# The start-up check: compiled and numpy answers to the example target agree to this
# (joint units; the parity tests hold them to 1e-10 on many targets).
AGREE = 1e-9
# Refined answers are compared only where the raw answer starts this close to the target
# (task units), as in the parity tests: from far off, the damped least squares between the
# limits is chaotic (a 1e-15 difference of rounding can end 1e-7 apart), and the raw answer
# has already checked the network, the kinematics and the cost.
REFINE_CHECK_DISTANCE = 0.05


@dataclass(frozen=True)
class NumpyReference:
    """The numpy path of the solver being loaded: what its kernel must agree with."""

    example_task: Callable[[], np.ndarray]   # the model's known-good target (p,)
    tol: float                               # the inverse's tolerance and iteration cap,
    max_iter: int                            # the kernel's too
    solve: Callable[[np.ndarray, np.ndarray, bool], Solution]   # (y, z, refine): row 0's answer
    # (y, refine): the learned optimum inside the limits (problems whose optima lie on them)
    solve_inside: Callable[[np.ndarray, bool], Solution]


def load_kernel(model: ModelFile, problem: Problem,
                reference: NumpyReference) -> tuple[CompiledKernel | None, str]:
    """(kernel, what was done) or (None, why not: the numpy path serves)."""
    try:
        build = compiled_library(problem)
        try:
            kernel = CompiledKernel(build.path, model, problem)
            disagreement = _disagreement(model, problem, reference, kernel)
        except OSError:
            if not build.cached:
                raise
            disagreement = float('inf')    # an unreadable cached file
        if not disagreement <= AGREE and build.cached:   # a stale cache: build anew, once
            build = compiled_library(problem, rebuild=True)
            kernel = CompiledKernel(build.path, model, problem)
            disagreement = _disagreement(model, problem, reference, kernel)
    except (BuildError, OSError, RuntimeError, ValueError) as err:
        return None, f'compiled runtime unavailable ({err}); solving in numpy'
    if not disagreement <= AGREE:
        return None, (f'compiled runtime unavailable ({build.path.name} differs from numpy by '
                      f'{disagreement:.3g} on the example target); solving in numpy')
    how = 'cached' if build.cached else f'built in {build.seconds:.2f} s'
    return kernel, f'compiled runtime: {build.path.name} ({how})'


def _disagreement(model: ModelFile, problem: Problem, reference: NumpyReference,
                  kernel: CompiledKernel) -> float:
    """Largest difference of q, cost and task error on the example target, raw and refined
    (the learned optimum inside the limits too, for problems whose optima lie on them)."""
    y = reference.example_task()[None]
    z = np.zeros((1, model.latent_dim))
    worst = 0.0
    raw_error = reference.solve(y, z, False).task_error
    for refine in (False, True):
        if refine and raw_error > REFINE_CHECK_DISTANCE:
            continue
        expected = reference.solve(y, z, refine)
        result = kernel.solve(y, z, reference.tol, reference.max_iter, refine)
        worst = max(worst, _difference(problem, expected, result.q[0], result.info[0]))
        if problem.optimum_on_bounds:
            inside = reference.solve_inside(y, refine)
            result = kernel.solve_inside(y, reference.tol, reference.max_iter, refine)
            worst = max(worst, _difference(problem, inside, result.q[0], result.info[0]))
    return worst


def _difference(problem: Problem, expected: Solution, q: np.ndarray, info: np.ndarray) -> float:
    """Largest difference of the kernel's q, cost and task error from a numpy Solution's."""
    # The cost function's value: an infeasible answer's Solution.cost is +inf.
    cost = float(problem.cost(expected.q[None])[0])
    return max(float(np.abs(q - expected.q).max()), abs(info[COST] - cost),
               abs(info[ERROR] - expected.task_error))
