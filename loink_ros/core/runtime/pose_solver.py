"""Full-pose IK on a kinematic model: cost-informed starts, exact pose refinement in the
limits with cost descent along the self-motion, random restarts as the fallback.

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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.compiled.compiled_kernel import OBJECTIVE, POSITION_ERROR, ROTATION_ERROR
from loink_ros.core.problems.kinematic_problem import KinematicProblem
from loink_ros.core.problems.rotation_chart import chart
from loink_ros.core.runtime.pose_refine import PoseObjective, PoseTarget, pose_error, refine_poses
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.core.runtime.tracking import smoothing_share

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
PRIOR_SPREAD = 0.3
PRIOR_MAX_SPREAD = 1.0
RESTARTS = 8
# Starts descended per batch: those lowest in objective once on the pose.
DESCENTS = 3
# Fallback rounds, at most (a deadline usually ends them first).
MAX_ROUNDS = 250
# Ranked answers closer than this (rad, largest joint difference) count as the same answer.
DISTINCT = 0.05


def prior_spread(problem: KinematicProblem) -> np.ndarray:
    """Per joint, the std of the starts drawn around the cost's minimiser."""
    return np.minimum(PRIOR_SPREAD * 0.5 * (problem.upper - problem.lower), PRIOR_MAX_SPREAD)


@dataclass
class PoseRequest:
    """One full-pose (or position-only) query. `lower`/`upper` narrow the model's limits
    (joint constraints); `seed_weight` w > 0 with a seed asks for answers near the seed."""

    target: PoseTarget
    seed: np.ndarray | None = None
    seed_weight: float = 0.0
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    deadline: float | None = None          # time.monotonic(); None: MAX_ROUNDS rounds
    avoid_collisions: bool = False
    tolerance: tuple[float, float] = TOLERANCE   # largest pose error of a solution (m, rad)


@dataclass
class PoseAnswer:
    """The best answer found; `reason` None means it is a solution. `source` says which start
    gave it: 'prior', 'optimum', 'latent', 'seed' or 'restart'; `starts` counts the starts
    refined."""

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
                 prior_starts: int = PRIOR_STARTS, restarts: int = RESTARTS,
                 descents: int = DESCENTS, network_for_poses: bool = False,
                 use_prior: bool = True):
        """The network's starts serve position-only targets, and full poses too when the
        model is a pose model or `network_for_poses` is set; `use_prior` False draws the
        prior starts uniformly (the benchmark measures what each contributes)."""
        if not isinstance(solver.problem, KinematicProblem):
            raise ValueError(f'problem {solver.problem.name} has no tip frame')
        self.solver, self.problem = solver, solver.problem
        self.restarts, self.descents = restarts, descents
        self.network_for_poses = network_for_poses or self.problem.is_pose
        rng = np.random.default_rng(0)
        z = rng.normal(size=(latent_starts, solver.model.latent_dim))
        self.latents = np.vstack([np.zeros((1, solver.model.latent_dim)), z])
        self.prior = self._prior(prior_starts, use_prior, rng)
        kernel = solver.kernel
        self.kernel = kernel if kernel is not None and kernel.has_pose else None

    def _prior(self, count: int, around_minimiser: bool,
               rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray]:
        """(centre, offsets): fixed draws around the cost's minimiser, or (None, uniform
        starts) when it has none or `around_minimiser` is False."""
        lower, upper = self.problem.lower, self.problem.upper
        centre = self.problem.cost_minimiser()
        if centre is None or not around_minimiser:
            return None, rng.uniform(lower, upper, size=(count, self.problem.dim))
        return centre, rng.normal(0.0, prior_spread(self.problem), size=(count, self.problem.dim))

    def _prior_starts(self, request: PoseRequest,
                      fresh: np.random.Generator | None) -> np.ndarray:
        """The prior's starts for this request: around the cost's minimiser, moved towards
        the seed by w / (1 + w) in seed-consistent mode (the latent rule of METHOD.md s.4);
        the fixed draws, or new ones from `fresh`."""
        centre, offsets = self.prior
        if fresh is not None:
            offsets = (fresh.normal(0.0, prior_spread(self.problem), size=offsets.shape)
                       if centre is not None else
                       fresh.uniform(self.problem.lower, self.problem.upper, size=offsets.shape))
        if centre is None:
            return offsets
        w = self._weight(request)
        if w > 0.0:
            centre = centre + smoothing_share(w) * (np.asarray(request.seed, float) - centre)
        return centre + offsets

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
        fresh = np.random.default_rng(attempt) if attempt else None
        starts, sources = self._starts(request, lower, upper, fresh)
        found, best, tried = self._collect(starts, sources, request, lower, upper, count,
                                           None, 0)
        rng = None
        for _ in range(MAX_ROUNDS):
            if found or (request.deadline is not None and time.monotonic() >= request.deadline):
                break
            rng = rng or np.random.default_rng([attempt, 1])   # the same restarts each time
            starts = rng.uniform(lower, upper, size=(self.restarts, self.problem.dim))
            found, best, tried = self._collect(starts, ['restart'] * self.restarts, request,
                                               lower, upper, count, best, tried)
        for answer in found or [best]:
            answer.starts = tried
        return found or [best]

    def _bounds(self, request: PoseRequest) -> tuple[np.ndarray, np.ndarray]:
        lower = self.problem.lower if request.lower is None else np.maximum(request.lower, self.problem.lower)
        upper = self.problem.upper if request.upper is None else np.minimum(request.upper, self.problem.upper)
        return lower, upper

    def _starts(self, request: PoseRequest, lower: np.ndarray, upper: np.ndarray,
                fresh: np.random.Generator | None) -> tuple[np.ndarray, list[str]]:
        """The network's answers at the optimum latent (or the seed-consistent one) and at
        the fixed latent samples, the seed itself in seed-consistent mode, the prior's
        starts; all clipped to the bounds. With `fresh`, new prior draws from it alone."""
        seed, w = request.seed, self._weight(request)
        starts, sources = [], []
        if fresh is None and (request.target.position_only or self.network_for_poses):
            latents = self.latents
            if w > 0.0:
                latents = latents + smoothing_share(w) * self.solver.latent(
                    np.clip(seed, self.problem.lower, self.problem.upper))
            y = np.repeat(self.network_task(request.target)[None], len(latents), 0)
            starts = list(self.solver.configurations(y, latents))
            sources = ['optimum'] + ['latent'] * (len(latents) - 1)
        if w > 0.0 and fresh is None:
            starts.append(np.asarray(seed, float))
            sources.append('seed')
        prior = self._prior_starts(request, fresh)
        starts = np.clip(np.vstack([*starts, prior]), lower, upper)
        return starts, sources + ['prior'] * len(prior)

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
                 tried: int) -> tuple[list[PoseAnswer], PoseAnswer | None, int]:
        """Every start onto the pose, the `descents` lowest in objective down it; (up to
        `count` valid answers DISTINCT apart, lowest objective first; of the others, the
        closest to the pose, or `best` if closer; starts refined so far)."""
        found = []
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
            reason = self._failure(q, position, rotation, request)
            answer = PoseAnswer(q.copy(), float(self.problem.cost(q)[0]), float(objective),
                                float(position), float(rotation), sources[i], tried, reason)
            if reason is None:
                found.append(answer)
                if len(found) == count:
                    break
            elif best is None or position + rotation < best.position_error + best.rotation_error:
                best = answer
        return found, best, tried

    def _failure(self, q: np.ndarray, position: float, rotation: float,
                 request: PoseRequest) -> str | None:
        """Why q is no answer: its pose error (the refinement's, then Pinocchio's forward
        kinematics for a candidate that passes), then self-collision when asked."""
        tolerance = request.tolerance
        if position > tolerance[0] or rotation > tolerance[1]:
            return (f'pose error {position:.3g} m, {rotation:.3g} rad above the tolerance '
                    f'{tolerance[0]:g} m, {tolerance[1]:g} rad')
        error = pose_error(self.problem, q, request.target)
        position, rotation = float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))
        if position > tolerance[0] or rotation > tolerance[1]:
            return f'forward kinematics disagrees: pose error {position:.3g} m, {rotation:.3g} rad'
        if request.avoid_collisions:
            touching = self.problem.self_collisions(q)
            if touching:
                return f'self-collision: {", ".join(touching)}'
        return None
