"""The LOInK runtime solver: optimal solve, latent sampling, refinement (no torch)."""

import logging
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime import requests
from loink_ros.core.runtime.bounded_latent import INSIDE_TOL, box_violation, least_latent_inside
from loink_ros.core.runtime.errors import ErrorCode, SolverError
from loink_ros.core.runtime.model_file import ModelFile
from loink_ros.core.runtime.network_inverse import INVERSE_DEFAULTS, InverseState
from loink_ros.core.runtime.refine import refine, refinement_start
from loink_ros.core.runtime.solution import Solution

if TYPE_CHECKING:   # imported where used: it needs Pinocchio (multistart)
    from loink_ros.core.runtime.pose_solver import PoseSolver


# Task error below which a closed-form refinement is taken as exact.
EXACT_TOL = 1e-9
# Largest difference (joint units) between the model's and the robot's joint limits.
LIMITS_TOL = 1e-9
RUNTIMES = ('compiled', 'numpy')
# Restart rounds of the multi-start fallback: a fixed amount of work, no deadline.
FALLBACK_ROUNDS = 4
log = logging.getLogger('loink_ros.runtime')


class LOInKSolver:
    """x* = G^-1([y; z]) in joint units, clipped to the limits and checked by true FK.

    The model's joint limits (those get_model_info reports) must equal the robot problem's,
    which every answer is clipped to: one set of limits, reported and enforced.

    runtime 'compiled' (default) solves in C (docs/COMPILED.md) where the problem has a
    symbolic form and a C compiler is at hand, else, with one warning on the log
    'loink_ros.runtime' saying why (also in `runtime_note`), in numpy; 'numpy' always in
    numpy, the reference. The Davis-Yin method is numpy only.

    `fallback` (default on) lets refined optima of arm models fall back on the multi-start
    search where the network's answer is poor (`multistart`); off, they are the network's.
    """

    def __init__(self, model: ModelFile, problem: Problem, method: str = 'newton',
                 tol: float | None = None, max_iter: int | None = None,
                 bounds_margin: float = 0.0, forward_backend: str = 'numpy',
                 runtime: str = 'compiled', fallback: bool = True):
        if list(problem.joint_names) != list(model.problem['joint_names']):
            raise ValueError(f'model joints {model.problem["joint_names"]} differ from the '
                             f'robot joints {problem.joint_names}')
        _check_limits(model, problem)
        if forward_backend not in ('numpy', 'onnxruntime'):
            raise ValueError(f'unknown forward backend {forward_backend!r}')
        if runtime not in RUNTIMES:
            raise ValueError(f'unknown runtime {runtime!r}; use one of {RUNTIMES}')
        self.model, self.problem, self.fallback = model, problem, fallback
        self.norm = model.normalization
        self.method, self.tol, self.max_iter = method, tol, max_iter
        default_tol, default_iter = INVERSE_DEFAULTS.get(method, (None, None))
        self._tol = default_tol if tol is None else tol
        self._max_iter = default_iter if max_iter is None else max_iter
        self.bounds_margin = bounds_margin
        self.onnx = None
        if forward_backend == 'onnxruntime':
            from loink_ros.core.runtime.onnx_forward import OnnxForward  # onnxruntime on demand
            self.onnx = OnnxForward(model.onnx_path)
        self.kernel, self.runtime_note = None, None
        if runtime == 'compiled':
            self._load_kernel()

    @property
    def runtime(self) -> str:
        """'compiled' or 'numpy': the path solves take."""
        return 'numpy' if self.kernel is None else 'compiled'

    def _load_kernel(self) -> None:
        """The compiled kernel, checked against the numpy path on the example target (a
        stale cache is rebuilt once); on failure the numpy path, with the reason logged."""
        from loink_ros.core.compiled.loading import NumpyReference, load_kernel
        if self.method != 'newton':
            self.runtime_note = f'the compiled runtime has no {self.method!r} method: numpy'
        else:
            reference = NumpyReference(
                self.example_task, self._tol, self._max_iter,
                solve=lambda y, z, refine: self.solve_rows_numpy(y, z, refine)[0][0],
                solve_inside=lambda y, refine: self.solve_optimum_inside_numpy(y, refine)[0])
            self.kernel, self.runtime_note = load_kernel(self.model, self.problem, reference)
        if self.kernel is None:
            log.warning('%s', self.runtime_note)

    @property
    def bounds_margin(self) -> float:
        """How far (a fraction of each range) a task may lie outside the training bounds."""
        return self._bounds_margin

    @bounds_margin.setter
    def bounds_margin(self, margin: float) -> None:
        self._bounds_margin = margin
        self._task_box = requests.task_box(self.model.task_lower, self.model.task_upper, margin)

    def check_task(self, task) -> np.ndarray:
        """The task as a vector, or a SolverError saying what is wrong with it."""
        return requests.task_in_box(task, *self._task_box)

    def forward(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Network (task, latent, predicted cost) of configurations (B, n), in robot units."""
        q = np.atleast_2d(q)
        return self.model.forward(q) if self.onnx is None else self.onnx(q)

    def seed_state(self, seed) -> InverseState | None:
        """Warm-start state from a seed configuration (None for no seed)."""
        if seed is None or np.size(seed) == 0:
            return None
        q = requests.finite_vector(seed, self.problem.dim, 'seed', ErrorCode.INVALID_SEED_STATE)
        q = np.clip(q, self.problem.lower, self.problem.upper)
        if self.kernel is not None:
            return InverseState([None] * self.kernel.depth, self.kernel.forward(q)[1])
        return self.model.inverse.state_at(self.norm.x_to_net(q[None]))

    def latent(self, q: np.ndarray) -> np.ndarray:
        """The network's latent z of one configuration (n,): forward() without the rest."""
        if self.kernel is not None:
            return self.kernel.forward(q)[0][0, self.model.task_dim:]
        return self.forward(q)[1][0]

    def example_task(self) -> np.ndarray:
        """The task (true FK) of the known-good configuration stored with the model, or of the
        problem's example_configuration() for model files without one: a reachable target."""
        q = self.model.example_configuration
        return self.problem.task(self.problem.example_configuration() if q is None else q)[0]

    def solve(self, task, latent=None, refine_answer: bool = False, seed=None) -> Solution:
        """One solution; latent None or empty (a request's default) is the cost optimum, with
        its polish and fallback when refined; otherwise each |z_i| at most
        requests.MAX_LATENT_ABS. `seed` (a configuration) warm-starts the network inverse:
        G is invertible, so it saves iterations and never changes the answer."""
        y = self.check_task(task)
        z = requests.latent_vector(latent, self.model.latent_dim)
        if latent is None or np.size(latent) == 0:
            return self._optima(y[None], refine_answer, self.seed_state(seed))[0]
        return self.solve_rows(y[None], z[None], refine_answer, self.seed_state(seed))[0][0]

    def solve_batch(self, tasks: np.ndarray, refine_answer: bool = False) -> list[Solution]:
        """Optimal solutions for many tasks at once, (B, p)."""
        tasks = np.atleast_2d(tasks)
        if tasks.shape[0] == 0:
            raise SolverError(ErrorCode.EMPTY_REQUEST, 'no tasks given')
        return self._optima(np.stack([self.check_task(t) for t in tasks]), refine_answer)

    def _optima(self, y: np.ndarray, refine_answer: bool,
                warm_start: InverseState | None = None) -> list[Solution]:
        """The optimum for checked tasks (B, p): z = 0's answers (or, for
        Problem.optimum_on_bounds, the learned optimum inside the limits), polished when
        refined."""
        if self.problem.optimum_on_bounds:
            solutions = self.solve_optimum_inside(y, refine_answer, warm_start)
        else:
            solutions = self.solve_rows(y, np.zeros((len(y), self.model.latent_dim)),
                                        refine_answer, warm_start)[0]
        if not refine_answer:
            return solutions
        return [self._with_fallback(self._polished(s, row), row) for s, row in zip(solutions, y)]

    def _polished(self, solution: Solution, y: np.ndarray) -> Solution:
        """A refined optimum moved to the true cost's local optimum on the task
        (Problem.local_optimum), where that is on the task, inside the limits and cheaper."""
        if solution.task_error > EXACT_TOL:
            return solution
        q = self.problem.local_optimum(solution.q, y)
        if q is None:
            return solution
        q = np.clip(q, self.problem.lower, self.problem.upper)
        error, cost = self._task_error(q, y), float(self.problem.cost(q)[0])
        if error > EXACT_TOL or not cost < solution.cost:
            return solution
        return replace(solution, q=q, cost=cost, task_error=error,
                       violations=tuple(self.problem.violations(q)))

    @cached_property
    def multistart(self) -> 'PoseSolver | None':
        """The multi-start solve of position targets (pose_solver.py, position only; C where
        compiled) that refined optima fall back on; None unless the task is the whole tip
        position of a kinematic problem."""
        if not self.fallback or not self.problem.task_is_tip_position or self.problem.task_dim != 3:
            return None
        # Imported here: the pose solver works on Pinocchio's arm problems, which only the
        # problems that reach this line have loaded.
        from loink_ros.core.runtime.pose_solver import PoseSolver
        return PoseSolver(self, max_rounds=FALLBACK_ROUNDS)

    def _with_fallback(self, solution: Solution, y: np.ndarray) -> Solution:
        """A refined optimum, or the multi-start answer where the network's answer left the
        limits or its refinement missed the task (a loose fit: the network's start may lie in
        the wrong basin), when that answer is exact, feasible and cheaper."""
        exact = solution.task_error <= EXACT_TOL and not solution.violations
        if self.multistart is None or (exact and not solution.clipped):
            return solution
        from loink_ros.core.runtime.pose_solver import PoseRequest, PoseTarget
        position = np.empty(3)
        position[list(self.problem.rows)] = y
        answer = self.multistart.solve(PoseRequest(PoseTarget(position, np.eye(3), True)))
        if not answer.success:
            return solution
        q, error = self._refine(answer.q, y)
        z = self.latent(q)
        predicted = self.norm.cost_from_net(self.model.cost_head.cost(z[None], self.norm.y_to_net(y[None])))[0]
        candidate = self._polished(Solution(q, z, float(predicted), float(self.problem.cost(q)[0]), error,
                                            solution.clipped, True, solution.converged,
                                            tuple(self.problem.violations(q))), y)
        if candidate.task_error > EXACT_TOL or candidate.violations or (exact and not candidate.cost < solution.cost):
            return solution
        return candidate

    def solve_optimum_inside(self, y: np.ndarray, refine_answer: bool,
                             warm_start: InverseState | None = None) -> list[Solution]:
        """The learned optimum inside the joint limits for checked tasks (B, p): z = 0's
        answer where it is inside, else the least-norm latent whose answer is
        (bounded_latent.py; in C where compiled). Problem.optimum_on_bounds selects it."""
        if self.kernel is not None:
            warm = None if warm_start is None else np.asarray(warm_start.x)
            result = self.kernel.solve_inside(y, self._tol, self._max_iter, refine_answer, warm)
            info = result.info.tolist()
            return [self._compiled_solution(result.q[i], result.z[i], info[i], refine_answer)
                    for i in range(len(info))]
        return self.solve_optimum_inside_numpy(y, refine_answer, warm_start)

    def solve_optimum_inside_numpy(self, y: np.ndarray, refine_answer: bool,
                                   warm_start: InverseState | None = None) -> list[Solution]:
        """solve_optimum_inside on the numpy path, the reference of the compiled one."""
        y_n = self.norm.y_to_net(y)
        lower, upper = self.norm.x_to_net(self.problem.lower[None])[0], \
            self.norm.x_to_net(self.problem.upper[None])[0]
        inverse = self.model.inverse
        solutions = []
        for i, row in enumerate(y_n):
            start = inverse(np.concatenate([row, np.zeros(self.model.latent_dim)])[None],
                            self.method, self._tol, self._max_iter, warm_start)
            x_n, z, converged = least_latent_inside(inverse, row, lower, upper, start,
                                                    self.method, self._tol, self._max_iter)
            q = self.norm.x_from_net(x_n[None])[0]
            predicted = self.norm.cost_from_net(self.model.cost_head.cost(z[None], row[None]))[0]
            # Clipped: the rounds ended outside the limits (beyond their tolerance).
            outside = box_violation(x_n, lower, upper) > INSIDE_TOL
            solutions.append(self._finish(q, y[i], z, predicted, refine_answer, converged, outside))
        return solutions

    def sample(self, task, count: int, spread: float, refine_answer: bool = False,
               random_seed: int | None = None,
               task_tolerance: float | None = None) -> list[Solution]:
        """`count` solutions with z ~ N(0, c I), c = spread the variance (latent std sqrt(c)).

        Ranked: answers within `task_tolerance` of the task and without violations first, then
        by cost (task_tolerance None: answers without violations first, then by cost).
        """
        y = self.check_task(task)
        count, spread = requests.sample_count(count), requests.sample_spread(spread)
        rng = np.random.default_rng(random_seed)
        z = rng.normal(0.0, np.sqrt(spread), size=(count, self.model.latent_dim))
        solutions, _ = self.solve_rows(np.repeat(y[None], count, 0), z, refine_answer)
        return sorted(solutions, key=lambda s: (s.failure(task_tolerance) is not None, s.cost))

    def solve_rows(self, y: np.ndarray, z: np.ndarray, refine_answer: bool,
                   warm_start: InverseState | None = None) -> tuple[list[Solution], InverseState]:
        """Checked tasks (B, p) and latents (B, n - p) to solutions and the inverse's state."""
        if self.kernel is None:
            return self.solve_rows_numpy(y, z, refine_answer, warm_start)
        warm = None if warm_start is None else np.asarray(warm_start.x)
        result = self.kernel.solve(y, z, self._tol, self._max_iter, refine_answer, warm)
        q, info = result.q, result.info.tolist()
        solutions = [self._compiled_solution(q[i], z[i], info[i], refine_answer)
                     for i in range(len(info))]
        return solutions, InverseState([None] * self.kernel.depth, result.state)

    def configurations(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """G^-1([y; z]) clipped to the limits, (B, n), unrefined and unchecked: starts for
        another solver (the pose solver validates what it returns)."""
        if self.kernel is None:
            return np.array([s.q for s in self.solve_rows_numpy(y, z, False)[0]])
        return self.kernel.solve(y, z, self._tol, self._max_iter, False).q

    def _compiled_solution(self, q: np.ndarray, z: np.ndarray, info: list[float],
                           refine_answer: bool) -> Solution:
        """A Solution from one row of the kernel's info (compiled_kernel's columns)."""
        predicted, cost, error, clipped, converged, violated = info
        violations = tuple(self.problem.violations(q)) if violated else ()
        return Solution(q, z, predicted, cost, error, bool(clipped), refine_answer,
                        bool(converged), violations)

    def solve_rows_numpy(self, y: np.ndarray, z: np.ndarray, refine_answer: bool,
                         warm_start: InverseState | None = None
                         ) -> tuple[list[Solution], InverseState]:
        """solve_rows on the numpy path, the reference of the compiled one."""
        y_n = self.norm.y_to_net(y)
        result = self.model.inverse(np.hstack([y_n, z]), self.method, self.tol, self.max_iter,
                                    warm_start)
        raw = self.norm.x_from_net(result.x)
        predicted = self.norm.cost_from_net(self.model.cost_head.cost(z, y_n))
        solutions = [self._finish(q, y[i], z[i], predicted[i], refine_answer,
                                  bool(result.converged[i])) for i, q in enumerate(raw)]
        return solutions, result.state

    def _task_error(self, q: np.ndarray, y: np.ndarray) -> float:
        """||task(q) - y|| by the true forward kinematics."""
        return float(np.linalg.norm(self.problem.task(q)[0] - y))

    def _refine(self, q: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        """(q, task error): the problem's closed form where it lands inside the limits on the
        task, else damped least squares; both from refinement_start(q)."""
        q = refinement_start(q, self.problem.lower, self.problem.upper)
        exact = self.problem.closed_form_refine(q, y)
        if exact is not None and np.all((exact >= self.problem.lower) & (exact <= self.problem.upper)):
            error = self._task_error(exact, y)
            if error <= EXACT_TOL:
                return exact, error
        q = refine(self.problem, q, y)[0]
        return q, self._task_error(q, y)

    def _finish(self, q: np.ndarray, y: np.ndarray, z: np.ndarray, predicted: float,
                refine_answer: bool, converged: bool, clipped: bool | None = None) -> Solution:
        """The Solution of a raw answer q; `clipped` None: whether clipping changed q."""
        inside = np.clip(q, self.problem.lower, self.problem.upper)
        if clipped is None:
            clipped = not np.array_equal(inside, q)
        if refine_answer:
            inside, error = self._refine(inside, y)
        else:
            error = self._task_error(inside, y)
        return Solution(inside, z, float(predicted), float(self.problem.cost(inside)[0]), error,
                        clipped, refine_answer, converged, tuple(self.problem.violations(inside)))


def _check_limits(model: ModelFile, problem: Problem) -> None:
    """ValueError listing the joints whose limits in the model differ from the robot's."""
    lower = np.asarray(model.problem['joint_lower'], float)
    upper = np.asarray(model.problem['joint_upper'], float)
    differ = ((np.abs(lower - problem.lower) > LIMITS_TOL)
              | (np.abs(upper - problem.upper) > LIMITS_TOL))
    if differ.any():
        listed = '; '.join(f'{problem.joint_names[i]} [{lower[i]:.6g}, {upper[i]:.6g}] in the '
                           f'model, [{problem.lower[i]:.6g}, {problem.upper[i]:.6g}] in the robot'
                           for i in np.flatnonzero(differ))
        raise ValueError(f'model joint limits differ from the robot\'s: {listed}')
