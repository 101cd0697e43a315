"""The loink_msgs services: solve, sample, get_model_info."""

import time
from collections.abc import Callable
from functools import wraps

from rclpy.clock import Clock
from rclpy.impl.rcutils_logger import RcutilsLogger

from loink_msgs.srv import GetModelInfo, Sample, Solve
from loink_ros.core.runtime.errors import ErrorCode, SolverError
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.node.conversions import bounded, model_info, seed_positions, solution_msg
from loink_ros.node.parameters import Settings
from loink_ros.node.request_stats import RequestStats


def guarded(handler: Callable) -> Callable:
    """Turn refusals and unexpected exceptions into error codes, time and count the call."""
    @wraps(handler)
    def answer(self, request, response):
        began = time.perf_counter()
        try:
            handler(self, request, response)
        except SolverError as err:
            response.success, response.error_code, response.message = False, err.code, err.message
        except Exception as err:  # noqa: BLE001 - a bug must not take the node down
            self.logger.error(f'{handler.__name__} failed: {type(err).__name__}: {err}')
            response.success, response.error_code = False, ErrorCode.INTERNAL_ERROR
            response.message = f'{type(err).__name__}: {err}'
        response.solve_time_ms = 1e3 * (time.perf_counter() - began)
        failure = None if response.success else ErrorCode(response.error_code).name
        self.stats.record(handler.__name__, failure, response.solve_time_ms)
        return response
    return answer


class IKServices:
    """Handlers of ~/solve, ~/sample and ~/get_model_info; no state between calls."""

    def __init__(self, solver: LOInKSolver, settings: Callable[[], Settings], clock: Clock,
                 logger: RcutilsLogger, stats: RequestStats):
        self.solver, self.settings, self.clock, self.logger = solver, settings, clock, logger
        self.stats = stats
        self.joint_names = list(solver.problem.joint_names)
        self.info = model_info(solver.model)

    @guarded
    def solve(self, request: Solve.Request, response: Solve.Response) -> None:
        """One solution; NO_SOLUTION (with the configuration) above task_tolerance or when
        infeasible."""
        settings = self.settings()
        task, latent = bounded(request.task, 'task'), bounded(request.latent, 'latent')
        seed = seed_positions(request.seed, self.joint_names)
        solution = self.solver.solve(task, latent, request.refine or settings.refine, seed)
        response.solution = solution_msg(solution, self.joint_names, self.clock.now().to_msg())
        reason = solution.failure(settings.task_tolerance)
        response.success = reason is None
        if reason is not None:
            response.error_code = ErrorCode.NO_SOLUTION
            response.message = f'{reason}; the configuration is returned'

    @guarded
    def sample(self, request: Sample.Request, response: Sample.Response) -> None:
        """`count` solutions: those within task_tolerance and feasible first, then by cost;
        success when the first is a solution."""
        settings = self.settings()
        if request.count > settings.max_samples:
            raise SolverError(ErrorCode.INVALID_COUNT, f'count = {request.count}; this node '
                              f'allows 1..{settings.max_samples} (parameter max_samples)')
        seed = request.random_seed if request.use_random_seed else None
        solutions = self.solver.sample(bounded(request.task, 'task'), request.count,
                                       request.spread, request.refine or settings.refine, seed,
                                       settings.task_tolerance)
        stamp = self.clock.now().to_msg()
        response.solutions = [solution_msg(s, self.joint_names, stamp) for s in solutions]
        reason = solutions[0].failure(settings.task_tolerance)
        response.success = reason is None
        if reason is not None:
            response.error_code = ErrorCode.NO_SOLUTION
            response.message = f'no sample is a solution; the best: {reason}'

    def get_model_info(self, _request: GetModelInfo.Request,
                       _response: GetModelInfo.Response) -> GetModelInfo.Response:
        """The loaded model's description (fixed for the node's life)."""
        return self.info
