"""loink_msgs/SolvePose: full-pose IK with ranked alternatives (docs/NODE.md)."""

import math
import time
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.clock import Clock
from rclpy.impl.rcutils_logger import RcutilsLogger

from loink_msgs.msg import IKSolution
from loink_msgs.srv import SolvePose
from loink_ros.core.runtime.errors import ErrorCode, SolverError
from loink_ros.core.runtime.pose_solver import PoseAnswer, PoseRequest, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.node.conversions import is_base_frame, joint_state, seed_positions
from loink_ros.node.ik_services import guarded
from loink_ros.node.parameters import Settings
from loink_ros.node.pose_targets import PoseLinks, pose_problem
from loink_ros.node.request_stats import RequestStats


def pose_solution(answer: PoseAnswer, names: list[str], stamp: Time) -> IKSolution:
    """A pose answer as an IKSolution: no latent, no predicted cost; task_error in m."""
    return IKSolution(joint_state=joint_state(names, answer.q, stamp), predicted_cost=math.nan,
                      cost=answer.cost, has_cost=True, task_error=answer.position_error,
                      latent=[])


class PoseService:
    """The ~/solve_pose handler; no state between calls."""

    def __init__(self, solver: LOInKSolver, pose_solver: PoseSolver | None,
                 settings: Callable[[], Settings], clock: Clock, logger: RcutilsLogger,
                 stats: RequestStats):
        """`pose_solver` None (pose_targets.pose_solver_of) answers POSE_NOT_SERVED."""
        self.solver, self.settings, self.clock, self.logger = solver, settings, clock, logger
        self.stats = stats
        self.joint_names = list(solver.problem.joint_names)
        self.pose_solver = pose_solver
        self.links = None if self.pose_solver is None else PoseLinks(solver.problem)

    @guarded
    def solve_pose(self, request: SolvePose.Request, response: SolvePose.Response) -> None:
        """Up to `count` valid answers, cheapest first; NO_SOLUTION with the closest answer
        when none is valid by the deadline; POSE_UNREACHABLE, no answer, at once for a pose
        beyond the arm's reach."""
        began = time.monotonic()
        settings = self.settings()
        pose_request, count = self.pose_request(request, settings, began)
        answers = self.pose_solver.solve_ranked(pose_request, count, request.attempt)
        stamp = self.clock.now().to_msg()
        response.solutions = [pose_solution(a, self.joint_names, stamp) for a in answers]
        response.rotation_errors = [a.rotation_error for a in answers]
        response.success = answers[0].success
        if not response.success:
            response.error_code = ErrorCode.NO_SOLUTION
            response.message = (answers[0].reason if answers[0].source == 'continuation' else
                                f'no solution by the deadline; the closest: {answers[0].reason}')

    def pose_request(self, request: SolvePose.Request, settings: Settings,
                     began: float) -> tuple[PoseRequest, int]:
        """The checked request as the pose solver takes it, and the answer count."""
        if self.pose_solver is None:
            raise SolverError(ErrorCode.POSE_NOT_SERVED,
                              f'model {self.solver.model.name}: its task '
                              f'{self.solver.problem.task_names} is not the whole tip position')
        reason = pose_problem(request.pose.pose)
        if reason is not None:
            raise SolverError(ErrorCode.INVALID_POSE, reason)
        base = self.solver.problem.base_frame
        if not is_base_frame(request.pose.header.frame_id, base):
            raise SolverError(ErrorCode.INVALID_FRAME, f'frame {request.pose.header.frame_id!r}: '
                              f'no transforms here, send poses in {base!r}')
        try:
            target = self.links.target(request.pose.pose, request.link, request.position_only)
        except ValueError as err:
            raise SolverError(ErrorCode.INVALID_LINK, str(err)) from None
        count = max(1, request.count)
        if count > settings.max_samples:
            raise SolverError(ErrorCode.INVALID_COUNT, f'count = {count}; this node allows '
                              f'1..{settings.max_samples} (parameter max_samples)')
        weight = request.seed_weight
        if not (math.isfinite(weight) and weight >= 0.0):
            raise SolverError(ErrorCode.NON_FINITE_INPUT if not math.isfinite(weight)
                              else ErrorCode.INVALID_SEED_STATE,
                              f'seed_weight = {weight}: it must be finite and >= 0')
        seed = seed_positions(request.seed, self.joint_names)
        if weight > 0.0 and seed is None:
            raise SolverError(ErrorCode.INVALID_SEED_STATE, f'seed_weight = {weight} needs a '
                              'seed')
        if seed is not None and not np.all(np.isfinite(seed)):
            raise SolverError(ErrorCode.NON_FINITE_INPUT, 'the seed has NaN or inf in a joint '
                              'of the model')
        lower, upper = self.joint_range(request)
        timeout = request.timeout.sec + 1e-9 * request.timeout.nanosec or settings.ik_timeout
        avoid = request.avoid_collisions and self.solver.problem.has_collision_model
        unreachable = self.links.beyond_reach(target, settings.task_tolerance, request.link)
        if unreachable is not None:
            raise SolverError(ErrorCode.POSE_UNREACHABLE, unreachable)
        return PoseRequest(target, seed, weight, lower, upper,
                           began + timeout, avoid,
                           (settings.task_tolerance, settings.rotation_tolerance),
                           request.approximate), count

    def joint_range(self, request: SolvePose.Request) -> tuple[np.ndarray | None, ...]:
        """The request's joint_lower / joint_upper, checked (None, None when absent)."""
        given = (len(request.joint_lower), len(request.joint_upper))
        if given == (0, 0):
            return None, None
        n = len(self.joint_names)
        if given != (n, n):
            raise SolverError(ErrorCode.INVALID_SEED_STATE, f'joint_lower and joint_upper '
                              f'have {given[0]} and {given[1]} values; the model has {n} joints')
        lower, upper = np.array(request.joint_lower), np.array(request.joint_upper)
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
            raise SolverError(ErrorCode.NON_FINITE_INPUT, 'joint_lower or joint_upper has NaN or inf')
        problem = self.solver.problem
        empty = np.maximum(lower, problem.lower) > np.minimum(upper, problem.upper)
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise SolverError(ErrorCode.INVALID_SEED_STATE, f'joint range of '
                              f'{self.joint_names[i]!r} [{lower[i]:.6g}, {upper[i]:.6g}] lies '
                              f'outside its limits [{problem.lower[i]:.6g}, {problem.upper[i]:.6g}]')
        return lower, upper
