"""Full-pose IK on a kinematic model: cost-informed starts, exact pose refinement in the
limits with cost descent along the self-motion, random restarts as the fallback.

0. Continuation: a request with a seed and no seed weight whose seed lies beside its pose
   (continuation.py's rule) is answered first by continuing from the seed on its branch and
   down the cost along the self-motion as far as continuity allows; the ranked answers below
   follow it. Where that answer is not valid, the search below runs within the seed's reach
   alone (an answer farther would be a jump), at every attempt. Otherwise (a far or random
   seed, or none) the seed plays no part.
1. Starts: fixed draws around the cost's minimiser (Problem.cost_minimiser), where the
   optimum of most poses lies; the seed itself in seed-consistent mode, with the draws
   moved towards it by w / (1 + w) (METHOD.md s.4 with mu_s = w); and the network's answer
   G^-1([y; z0]) (z0 = 0, or w / (1 + w) z(seed)) for position-only targets, where it is the
   learned optimum, or for full poses when asked (it did not help there: docs/POSE.md).
2. Each start is refined onto the pose (pose_refine; compiled kernel or numpy), in one batch;
   the DESCENTS lowest in objective cost(q) + w ||q - seed||^2 are then descended along the
   self-motion.
3. The valid answers (pose within tolerance; inside the limits by construction; checked by
   Pinocchio's forward kinematics; without self-collision when asked) are ranked by
   objective and the best returned.
4. None valid: rounds of uniformly random starts, refined the same way, until one is valid
   or the deadline passes (TRAC-IK's strategy, with the cost descent added).

The whole of it runs in C (kernel.c's loink_pose_ranked, the one implementation the node and
the MoveIt plugin call) where the model's compiled library has the pose functions and the
task is the tip position; this module's numpy path is its reference, with the same draws
(splitmix.py). Only the caller's own check of each answer within the tolerances (Pinocchio's
forward kinematics, the self-collision check) runs in Python, as a callback.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from loink_ros.core.compiled.compiled_kernel import (
    ACCEPT,
    CONTINUE_DRIFTED,
    CONTINUE_POSITION_ERROR,
    CONTINUE_ROTATION_ERROR,
    OBJECTIVE,
    POSITION_ERROR,
    RANKED_COST,
    RANKED_OBJECTIVE,
    RANKED_POSITION_ERROR,
    RANKED_ROTATION_ERROR,
    RANKED_SOURCE,
    ROTATION_ERROR,
    SOURCES,
    PoseQuery,
    PoseSettings,
)
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import chart
from loink_ros.core.runtime import continuation
from loink_ros.core.runtime.continuation import (
    SEED_MARGIN,
    Continued,
    continuation_reach,
    continue_pose,
    drift_velocity,
)
from loink_ros.core.runtime.pose_refine import PoseObjective, PoseTarget, pose_error, refine_poses
from loink_ros.core.runtime.smoothing import smoothing_share
from loink_ros.core.runtime.splitmix import SplitMix, prior_stream, restart_stream

if TYPE_CHECKING:   # the solver builds its multi-start fallback from this module
    from loink_ros.core.runtime.solver import LOInKSolver

# Success: the benchmark's tolerances (m, rad), as TRAC-IK's 1e-5.
TOLERANCE = (1e-5, 1e-4)
# Refined poses are taken as exact below these (m, rad): descent keeps every point this close.
EXACT = (1e-9, 1e-9)
# Latent samples besides the optimum; starts drawn around the cost's minimiser (std a
# fraction PRIOR_SPREAD of each half range, at most PRIOR_MAX_SPREAD: IK branches lie about
# pi apart in a joint whatever its range; uniform when the cost has no known minimiser);
# uniform starts per fallback round.
LATENT_STARTS = 0
PRIOR_STARTS = 23
# Arms of six joints or fewer have no self-motion on a full pose, so no descent: their
# starts take the descents' time.
PRIOR_STARTS_WITHOUT_SELF_MOTION = 27
PRIOR_SPREAD = 0.3
PRIOR_MAX_SPREAD = 1.0
RESTARTS = 8
# Starts descended per batch: those lowest in objective once on the pose, apart
# (pose_refine.DESCENT_SEPARATION).
DESCENTS = 4
# Fallback rounds, at most (a deadline usually ends them first).
MAX_ROUNDS = 250
# ... of a continuation that failed: the seed's reach is a small box, which the first batch
# and these rounds cover, so the answer is certain at once instead of at the deadline.
CONTINUATION_ROUNDS = 2
# Ranked answers closer than this (rad, largest joint difference) count as the same answer.
DISTINCT = 0.05
# The stream of the fixed latent samples.
LATENT_STREAM = 0x4C4F494E4B


def prior_spread(problem: KinematicProblem) -> np.ndarray:
    """Per joint, the std of the starts drawn around the cost's minimiser."""
    return np.minimum(PRIOR_SPREAD * 0.5 * (problem.upper - problem.lower), PRIOR_MAX_SPREAD)


@dataclass
class PoseRequest:
    """One full-pose (or position-only) query. `lower`/`upper` narrow the model's limits
    (joint constraints); a seed with `seed_weight` 0 continues from it where it lies beside
    the pose (module docstring, 0); `seed_weight` w > 0 with a seed asks for answers near
    the seed."""

    target: PoseTarget
    seed: np.ndarray | None = None
    seed_weight: float = 0.0
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    deadline: float | None = None          # time.monotonic(); None: the solver's max_rounds
    avoid_collisions: bool = False
    tolerance: tuple[float, float] = TOLERANCE   # largest pose error of a solution (m, rad)
    # MoveIt's return_approximate_solution (Servo): with a seed inside the limits, the
    # continuation alone, wherever the seed's pose lies, and its attempt at once where it fails.
    approximate: bool = False


@dataclass
class PoseAnswer:
    """The best answer found; `reason` None means it is a solution. `source` says which start
    gave it: 'prior', 'optimum', 'latent', 'seed', 'restart' or 'continuation'; `starts`
    counts the starts refined."""

    q: np.ndarray
    cost: float
    objective: float
    position_error: float
    rotation_error: float
    source: str
    starts: int
    reason: str | None

    @property
    def success(self) -> bool:
        return self.reason is None


class PoseSolver:
    """Full-pose answers for a LOInKSolver whose problem is kinematic (pose or position model)."""

    def __init__(self, solver: LOInKSolver, latent_starts: int = LATENT_STARTS,
                 prior_starts: int | None = None, restarts: int = RESTARTS,
                 descents: int = DESCENTS, network_for_poses: bool = False,
                 use_prior: bool = True, max_rounds: int = MAX_ROUNDS):
        """The network's starts serve position-only targets, and full poses too when the
        model is a pose model or `network_for_poses` is set; `use_prior` False draws the
        prior starts uniformly (the benchmark measures what each contributes); `prior_starts`
        None: PRIOR_STARTS, or PRIOR_STARTS_WITHOUT_SELF_MOTION for six joints or fewer;
        `max_rounds` bounds the fallback rounds of requests without a deadline."""
        if not isinstance(solver.problem, KinematicProblem):
            raise ValueError(f'problem {solver.problem.name} has no tip frame')
        self.solver, self.problem = solver, solver.problem
        if prior_starts is None:
            prior_starts = PRIOR_STARTS if self.problem.dim > 6 else PRIOR_STARTS_WITHOUT_SELF_MOTION
        self.prior_starts, self.restarts, self.descents = prior_starts, restarts, descents
        self.max_rounds, self.continuation_rounds = max_rounds, CONTINUATION_ROUNDS
        self.network_for_poses = network_for_poses or self.problem.is_pose
        z = SplitMix(LATENT_STREAM).normal_rows(np.ones(solver.model.latent_dim), latent_starts)
        self.latents = np.vstack([np.zeros((1, solver.model.latent_dim)), z])
        self.centre = self.problem.cost_minimiser() if use_prior else None
        self.spread = prior_spread(self.problem)
        self.drift_velocity = drift_velocity(self.problem)
        kernel = solver.kernel
        # The C path takes the network's task from the tip position: not for pose models.
        compiled = kernel is not None and kernel.has_pose and not self.problem.is_pose
        self.kernel = kernel if compiled else None
        self._settings = self._compiled_settings() if compiled else None

    def _compiled_settings(self) -> PoseSettings:
        """loink_pose_settings of this solver; the arrays it points to live with it."""
        model, solver = self.solver.model, self.solver
        self._arrays = [np.ascontiguousarray(a, dtype) for a, dtype in (
            (self.spread, np.float64), (np.asarray(self.problem.rows), np.int32),
            (model.task_lower, np.float64), (model.task_upper, np.float64),
            (self.latents, np.float64),
            (self.centre if self.centre is not None else np.zeros(0), np.float64),
            (self.drift_velocity, np.float64))]
        spread, rows, task_lower, task_upper, latents, centre, velocity = self._arrays
        return PoseSettings(
            self.prior_starts, self.restarts, self.descents, self.max_rounds,
            self.continuation_rounds, len(self.latents),
            int(self.network_for_poses), solver._max_iter, solver._tol, DISTINCT, EXACT[0],
            EXACT[1], centre.ctypes.data if self.centre is not None else None,
            spread.ctypes.data, rows.ctypes.data, task_lower.ctypes.data,
            task_upper.ctypes.data, latents.ctypes.data, continuation.GATE,
            continuation.REACH, continuation.STEP_DRIFT_SHARE, continuation.SINGULAR_MARGIN,
            velocity.ctypes.data)

    def continue_from(self, start: np.ndarray, target: PoseTarget, reach: np.ndarray,
                      lower: np.ndarray, upper: np.ndarray, smoothing: float,
                      request: bool = False) -> Continued:
        """One step on from `start` inside start +/- reach and [lower, upper]
        (continuation.continue_pose; compiled kernel or numpy): a stream's step, or with
        `request` a request's, whose drift scales with the step's time."""
        velocity = self.drift_velocity if request else None
        if self.kernel is None:
            return continue_pose(self.problem, target, start, reach, lower, upper, smoothing,
                                 EXACT, velocity)
        flat = np.concatenate([target.position, target.rotation.ravel()])
        on_pose, q, info = self.kernel.pose_continue(
            flat, target.position_only, start, reach, lower, upper, smoothing,
            continuation.STEP_DRIFT_SHARE if request else continuation.DRIFT_SHARE,
            velocity, continuation.SINGULAR_MARGIN, EXACT)
        return Continued(q, float(info[CONTINUE_POSITION_ERROR]),
                         float(info[CONTINUE_ROTATION_ERROR]), on_pose,
                         bool(info[CONTINUE_DRIFTED]))

    def network_task(self, target: PoseTarget) -> np.ndarray:
        """The model's task vector of the target, clipped into the training bounds (a start
        only): position axes, then the chart when the model is a pose model."""
        problem = self.problem
        y = target.position[problem.rows]
        if problem.is_pose:
            y = np.concatenate([y, chart(problem.nominal, target.rotation)])
        return np.clip(y, self.solver.model.task_lower, self.solver.model.task_upper)

    def solve(self, request: PoseRequest) -> PoseAnswer:
        """The best answer (see the module docstring)."""
        return self.solve_ranked(request)[0]

    def solve_ranked(self, request: PoseRequest, count: int = 1,
                     attempt: int = 0) -> list[PoseAnswer]:
        """Up to `count` valid answers at least DISTINCT apart, lowest objective first, from
        one batch of starts (and restarts while none is valid); none valid by the deadline:
        [the best answer], which says why not. `attempt` k > 0 draws the k-th set of fresh
        starts instead of the fixed ones, for callers that rejected the earlier answers."""
        lower, upper = self._bounds(request)
        if self.kernel is not None:
            found, best, tried = self._ranked_compiled(request, lower, upper, count, attempt)
        else:
            found, best, tried = self._ranked_numpy(request, lower, upper, count, attempt)
        for answer in found or [best]:
            answer.starts = tried
        return found or [best]

    def _ranked_compiled(self, request: PoseRequest, lower: np.ndarray, upper: np.ndarray,
                         count: int, attempt: int) -> tuple[list[PoseAnswer], PoseAnswer | None, int]:
        """loink_pose_ranked, the answers checked by _checked as they are ranked."""
        target = request.target
        flat = np.concatenate([target.position, target.rotation.ravel()])
        lower, upper = np.ascontiguousarray(lower, float), np.ascontiguousarray(upper, float)
        seed = None if request.seed is None else np.ascontiguousarray(request.seed, float)
        query = PoseQuery(flat.ctypes.data, int(target.position_only), count, attempt,
                          lower.ctypes.data, upper.ctypes.data,
                          None if seed is None else seed.ctypes.data, float(request.seed_weight),
                          request.tolerance[0], request.tolerance[1], request.deadline or 0.0,
                          int(request.approximate))
        errors, n = [], self.problem.dim

        def accept(_context, q_pointer) -> int:
            try:
                q = np.ctypeslib.as_array(q_pointer, shape=(n,)).copy()
                return 0 if self._checked(q, request) is None else 1
            except Exception as err:  # noqa: BLE001 - raised below, not lost in C
                errors.append(err)
                return 1

        result = self.kernel.pose_ranked(self._settings, query, count, ACCEPT(accept))
        if errors:
            raise errors[0]
        answers = []
        for q, info in zip(result.q, result.info):
            position, rotation = info[RANKED_POSITION_ERROR], info[RANKED_ROTATION_ERROR]
            source = SOURCES[int(info[RANKED_SOURCE])]
            reason = None if result.found else self._failure(q, position, rotation, request)
            answers.append(PoseAnswer(q.copy(), float(info[RANKED_COST]),
                                      float(info[RANKED_OBJECTIVE]), float(position),
                                      float(rotation), source, result.tried, reason))
        if result.found:
            return answers, None, result.tried
        rule = self._continuation(request, lower, upper)
        return [], self._unanswered(answers[0], rule, request.approximate), result.tried

    def _ranked_numpy(self, request: PoseRequest, lower: np.ndarray, upper: np.ndarray,
                      count: int, attempt: int) -> tuple[list[PoseAnswer], PoseAnswer | None, int]:
        """The reference of loink_pose_ranked: the same starts, draws and ranking."""
        rule = self._continuation(request, lower, upper)
        continuation = None if rule is None else self._continued(request, rule, lower, upper)
        found, best, rounds, tried = [], None, self.max_rounds, int(continuation is not None)
        if continuation is not None and continuation.reason is None:
            found = [continuation]
        elif continuation is not None and request.approximate:   # its attempt, at once
            return [], self._unanswered(continuation, rule, True), 1
        elif continuation is not None:   # the search within the seed's reach alone
            start, reach = rule
            best, rounds = continuation, self.continuation_rounds
            lower, upper = np.maximum(lower, start - reach), np.minimum(upper, start + reach)
        if len(found) < count:
            starts, sources = self._starts(request, lower, upper, attempt)
            found, best, tried = self._collect(starts, sources, request, lower, upper, count,
                                               best, tried, found)
        draws = restart_stream(attempt)
        for _ in range(rounds):
            if found or (request.deadline is not None and time.monotonic() >= request.deadline):
                break
            starts = draws.uniform_rows(lower, upper, self.restarts)
            found, best, tried = self._collect(starts, ['restart'] * self.restarts, request,
                                               lower, upper, count, best, tried)
        return found, None if found else self._unanswered(best, rule, request.approximate), tried

    def _continued(self, request: PoseRequest, rule: tuple[np.ndarray, np.ndarray],
                   lower: np.ndarray, upper: np.ndarray) -> PoseAnswer:
        """The continuation's answer from the rule's (start, reach), which says why it is none
        when it is not valid."""
        start, reach = rule
        step = self.continue_from(start, request.target, reach, lower, upper, 0.0, True)
        reason = self._failure(step.q, step.position_error, step.rotation_error, request)
        if reason is None and not step.on_pose:
            reason = 'not on the pose'
        cost = float(self.problem.cost(step.q)[0])
        return PoseAnswer(step.q, cost, cost, step.position_error, step.rotation_error,
                          'continuation', 1, reason)

    def _continuation(self, request: PoseRequest, lower: np.ndarray,
                      upper: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(the seed clipped into the bounds, each joint's reach) where the request is a
        continuation, else None: no seed, a seed weight, a seed farther than SEED_MARGIN
        outside the limits and the bounds (no state of the arm) or, unless the request is
        approximate, one whose pose is not beside the target."""
        if request.seed is None or self._weight(request) > 0.0:
            return None
        seed, problem = np.asarray(request.seed, float), self.problem
        if (np.any(seed < np.minimum(problem.lower, lower) - SEED_MARGIN)
                or np.any(seed > np.maximum(problem.upper, upper) + SEED_MARGIN)):
            return None
        start = np.clip(seed, lower, upper)
        reach = continuation_reach(problem, request.target, start, request.approximate)
        return None if reach is None else (start, reach)

    @staticmethod
    def _unanswered(best: PoseAnswer, rule: tuple[np.ndarray, np.ndarray] | None,
                    approximate: bool = False) -> PoseAnswer:
        """`best` of a request with no answer, its reason saying so for a continuation (`rule`:
        _continuation's)."""
        if rule is None:
            return best
        if approximate:
            best.reason = f'the continuation from the seed stops short of the pose ({best.reason})'
            return best
        best.reason = (f'the seed lies beside the pose and no answer lies within {rule[1][0]:.3g} '
                       f'rad a joint of it ({best.reason}); any other would be a jump')
        return best

    def _bounds(self, request: PoseRequest) -> tuple[np.ndarray, np.ndarray]:
        lower = self.problem.lower if request.lower is None else np.maximum(request.lower, self.problem.lower)
        upper = self.problem.upper if request.upper is None else np.minimum(request.upper, self.problem.upper)
        return lower, upper

    def _starts(self, request: PoseRequest, lower: np.ndarray, upper: np.ndarray,
                attempt: int) -> tuple[np.ndarray, list[str]]:
        """The network's answers at the optimum latent (or the seed-consistent one) and at
        the fixed latent samples, the seed itself in seed-consistent mode (both attempt 0
        only), the prior's draws of this attempt; all clipped to the bounds."""
        seed, w = request.seed, self._weight(request)
        starts, sources = [], []
        if attempt == 0 and (request.target.position_only or self.network_for_poses):
            latents = self.latents
            if w > 0.0:
                latents = latents + smoothing_share(w) * self.solver.latent(
                    np.clip(seed, self.problem.lower, self.problem.upper))
            y = np.repeat(self.network_task(request.target)[None], len(latents), 0)
            starts = list(self.solver.configurations(y, latents))
            sources = ['optimum'] + ['latent'] * (len(latents) - 1)
        if w > 0.0 and attempt == 0:
            starts.append(np.asarray(seed, float))
            sources.append('seed')
        prior = self._prior_starts(request, attempt)
        starts = np.clip(np.vstack([*starts, prior]), lower, upper)
        return starts, sources + ['prior'] * len(prior)

    def _prior_starts(self, request: PoseRequest, attempt: int) -> np.ndarray:
        """The prior's draws of this attempt: around the cost's minimiser, moved towards the
        seed by w / (1 + w) in seed-consistent mode (the latent rule of METHOD.md s.4), or
        uniform in the model's limits where there is no minimiser."""
        draws = prior_stream(attempt)
        if self.centre is None:
            return draws.uniform_rows(self.problem.lower, self.problem.upper, self.prior_starts)
        centre, w = self.centre, self._weight(request)
        if w > 0.0:
            centre = centre + smoothing_share(w) * (np.asarray(request.seed, float) - centre)
        return centre + draws.normal_rows(self.spread, self.prior_starts)

    @staticmethod
    def _weight(request: PoseRequest) -> float:
        return request.seed_weight if request.seed is not None else 0.0

    def refine(self, starts: np.ndarray, target: PoseTarget, lower: np.ndarray,
               upper: np.ndarray, seed: np.ndarray | None, weight: float,
               descents: int) -> np.ndarray:
        """pose_refine.refine_poses (compiled kernel or numpy): (B, n + 3), the refined q,
        then position error, rotation error and objective."""
        if self.kernel is not None:
            flat = np.concatenate([target.position, target.rotation.ravel()])
            result = self.kernel.pose_solve(starts, flat, target.position_only,
                                            np.stack([lower, upper]), seed, weight, EXACT,
                                            descents)
            info = result.info[:, [POSITION_ERROR, ROTATION_ERROR, OBJECTIVE]]
            return np.hstack([result.q, info])
        results = refine_poses(self.problem, starts, target, lower, upper,
                               PoseObjective(self.problem, seed, weight), EXACT, descents)
        return np.array([[*r.q, r.position_error, r.rotation_error, r.objective]
                         for r in results])

    def _collect(self, starts: np.ndarray, sources: list[str], request: PoseRequest,
                 lower: np.ndarray, upper: np.ndarray, count: int, best: PoseAnswer | None,
                 tried: int, found: list[PoseAnswer] | None = None,
                 ) -> tuple[list[PoseAnswer], PoseAnswer | None, int]:
        """Every start onto the pose, the `descents` lowest in objective down it; (`found`
        and up to `count` valid answers in all, DISTINCT apart, lowest objective first; of
        the others, the closest to the pose, or `best` if closer; starts refined so far)."""
        found = list(found or [])
        if not len(starts):
            return found, best, tried
        rows = self.refine(starts, request.target, lower, upper, request.seed,
                           self._weight(request), self.descents)
        n = self.problem.dim
        tried += len(starts)
        exact = (rows[:, n] <= EXACT[0]) & (rows[:, n + 1] <= EXACT[1])
        for i in np.argsort(np.where(exact, rows[:, n + 2], np.inf), kind='stable'):
            q, position, rotation, objective = rows[i, :n], *rows[i, n:]
            if any(np.abs(q - other.q).max() <= DISTINCT for other in found):
                continue
            # The check (a collision check) may be slow: past the deadline, no more start
            # once one has run (the answer so far stays the best one checked).
            within = position <= request.tolerance[0] and rotation <= request.tolerance[1]
            if (within and (found or best is not None) and request.deadline is not None
                    and time.monotonic() >= request.deadline):
                break
            reason = self._failure(q, position, rotation, request)
            answer = PoseAnswer(q.copy(), float(self.problem.cost(q)[0]), float(objective),
                                float(position), float(rotation), sources[i], tried, reason)
            if reason is None:
                found.append(answer)
                if len(found) == count:
                    break
            elif best is None or (best.source != 'continuation' and position + rotation
                                  < best.position_error + best.rotation_error):
                best = answer   # a failed continuation's own attempt stays the answer
        return found, best, tried

    def _failure(self, q: np.ndarray, position: float, rotation: float,
                 request: PoseRequest) -> str | None:
        """Why q is no answer: its pose error (the refinement's), then _checked."""
        tolerance = request.tolerance
        if position > tolerance[0] or rotation > tolerance[1]:
            return (f'pose error {position:.3g} m, {rotation:.3g} rad above the tolerance '
                    f'{tolerance[0]:g} m, {tolerance[1]:g} rad')
        return self._checked(q, request)

    def _checked(self, q: np.ndarray, request: PoseRequest) -> str | None:
        """Why an answer within the tolerances by the refinement is still none: Pinocchio's
        forward kinematics disagrees, or (when asked) it self-collides; None when valid."""
        tolerance = request.tolerance
        error = pose_error(self.problem, q, request.target)
        position, rotation = float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))
        if position > tolerance[0] or rotation > tolerance[1]:
            return f'forward kinematics disagrees: pose error {position:.3g} m, {rotation:.3g} rad'
        if request.avoid_collisions:
            touching = self.problem.self_collisions(q)
            if touching:
                return f'self-collision: {", ".join(touching)}'
        return None
