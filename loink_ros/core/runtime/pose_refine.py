"""Exact pose refinement inside joint limits, then cost descent along the self-motion.

The numpy reference of the compiled `pose_solve` (core/compiled/kernel.c), step for step:

1. converge: damped Gauss-Newton on the pose error e = [p* - p; log(R* R^T)] (metres and
   radians, in the base frame), the joints at a limit that the step would push outward
   frozen (an angle whose bounds span a turn turns through them instead), every iterate
   clipped to the limits; a start still far off half-way is given up;
2. descend: steepest descent of the objective f(q) = cost(q) + w ||q - seed||^2 projected on
   the null space of the pose Jacobian (the self-motion), Barzilai-Borwein step lengths
   from the projected gradient's changes,
   each trial point pulled back onto the pose by `converge` and kept only if f fell
   (Armijo), then, near the optimum, while the projected gradient shrinks; the pose never
   leaves its tolerance and q never leaves the limits.

A position-only target uses the three position rows alone (the orientation is free).
"""

from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.rotation_chart import rotation_vector
from loink_ros.core.problems.backends import MATH

# Newton stops below this pose error (m and rad); answers are judged by the caller's tolerances.
CONVERGED = 1e-12
NEWTON_STEPS = 30
# A start still this far from the pose (norm of e) after ABANDON_STEP steps is given up:
# most such starts never converge, and they would take every remaining step.
ABANDON_STEP = 15
ABANDON_ERROR = 0.1
# Newton steps when pulling a descent trial point back onto the pose.
RETRACT_STEPS = 8
DESCENT_STEPS = 20
# Starts this close (largest joint, rad or m) to one already descended mostly share its
# optimum: the descents go to starts farther apart (other branches of the self-motion).
DESCENT_SEPARATION = 0.6
# Descent stops when the projected gradient is this small: the optimum to ~1e-12 in q, so
# that starts descending to one optimum end on one point (a caller's rounding of the same
# request changes no answer). Below POLISH, f is flat to rounding: steps follow the
# gradient alone (no Armijo test on f), and end when the gradient stops shrinking.
STATIONARY = 1e-10
POLISH = 1e-5
# Damping^2 = DAMPING_FLOOR + DAMPING_GAIN ||e||^2: Gauss-Newton near the pose, damped far.
DAMPING_FLOOR = 1e-12
DAMPING_GAIN = 1e-3
# A revolute joint whose bounds span this much (a turn, less a hair: loink robot init's
# ranges are a turn less 2e-4 rad) turns through its bounds in Newton rather than stopping
# there: the same posture, 2 pi away (a UR5 from init, one turn per joint, otherwise has
# most of its starts frozen at a bound).
TWO_PI = 2.0 * np.pi
FULL_TURN = TWO_PI - 1e-3
# Largest joint step of one Newton iteration (rad or m), for full poses and for positions:
# far starts do not overshoot. A position's solutions form a wide self-motion, and longer
# steps land its starts on worse stretches of it (the UR5's p99 regret 20 % at 1.0 rad
# against 3 % at 0.5); a full pose's few branches lose nothing and take 9-14 % fewer steps.
MAX_STEP = 1.0
POSITION_MAX_STEP = 0.5
FIRST_STEP = 0.5
BACKTRACKS = 8
ARMIJO = 1e-4


@dataclass(frozen=True)
class PoseTarget:
    """The tip's target in the base frame: position (3,) and rotation (3, 3); position_only
    ignores the rotation."""

    position: np.ndarray
    rotation: np.ndarray
    position_only: bool = False

    @property
    def rows(self) -> int:
        return 3 if self.position_only else 6


@dataclass
class PoseObjective:
    """f(q) = cost(q) + weight ||q - seed||^2 (seed None or weight 0: the cost alone)."""

    problem: KinematicProblem
    seed: np.ndarray | None = None
    weight: float = 0.0

    def value(self, q: np.ndarray) -> float:
        f = float(self.problem.cost(q)[0])
        if self.weight > 0.0:
            f += self.weight * float((q - self.seed) @ (q - self.seed))
        return f

    def gradient(self, q: np.ndarray) -> np.ndarray:
        g = self.problem.cost_gradient(q)
        if self.weight > 0.0:
            g = g + 2.0 * self.weight * (q - self.seed)
        return g


@dataclass
class PoseResult:
    """A refined configuration, its pose errors (m, rad) and the steps taken."""

    q: np.ndarray
    position_error: float
    rotation_error: float
    objective: float
    newton_steps: int
    descent_steps: int


def pose_error(problem: KinematicProblem, q: np.ndarray, target: PoseTarget) -> np.ndarray:
    """[p* - p; log(R* R^T)] (6,), or the position part (3,) for a position-only target."""
    position, rotation = problem.tip_pose(q)
    linear = target.position - position
    if target.position_only:
        return linear
    angular = rotation_vector(MATH, (target.rotation @ rotation.T).tolist())
    return np.concatenate([linear, angular])


def _errors(error: np.ndarray) -> tuple[float, float]:
    return float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))


def converge(problem: KinematicProblem, q: np.ndarray, target: PoseTarget, lower: np.ndarray,
             upper: np.ndarray, steps: int = NEWTON_STEPS,
             max_step: float | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(q, pose error, steps taken) after damped Gauss-Newton inside [lower, upper], each
    step at most `max_step` rad a joint (None: MAX_STEP, POSITION_MAX_STEP for a position)."""
    q = np.clip(q, lower, upper)
    error = pose_error(problem, q, target)
    turns = problem.revolute & (upper - lower >= FULL_TURN)
    for step in range(steps):
        norm = error @ error
        if norm <= CONVERGED ** 2 or (step == ABANDON_STEP and norm > ABANDON_ERROR ** 2):
            return q, error, step
        jac = problem.pose_jacobian(q)[:target.rows]
        push = jac.T @ error
        free = ~(((q <= lower) & (push < 0)) | ((q >= upper) & (push > 0))) | turns
        jac_free = jac[:, free]
        damping = DAMPING_FLOOR + DAMPING_GAIN * norm
        gram = jac_free @ jac_free.T + damping * np.eye(target.rows)
        dq = jac_free.T @ np.linalg.solve(gram, error)
        largest, cap = np.abs(dq).max(), max_step or (MAX_STEP if target.rows == 6 else POSITION_MAX_STEP)
        if largest > cap:
            dq *= cap / largest
        q[free] += dq
        q = np.clip(_turned(q, lower, upper, turns), lower, upper)
        error = pose_error(problem, q, target)
    return q, error, steps


def _turned(q: np.ndarray, lower: np.ndarray, upper: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """q with each turning angle past a bound moved by 2 pi, where that lands in the bounds
    (the same posture)."""
    q = np.where(turns & (q > upper) & (q - TWO_PI >= lower), q - TWO_PI, q)
    return np.where(turns & (q < lower) & (q + TWO_PI <= upper), q + TWO_PI, q)


def _projected_descent(jac: np.ndarray, gradient: np.ndarray, q: np.ndarray,
                       lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """-gradient projected on the Jacobian's null space, over the joints the step would not
    push out of the limits (the others stay put)."""
    free = np.ones(len(q), dtype=bool)
    for _ in range(2):
        jac_free = jac[:, free]
        g = gradient[free]
        gram = jac_free @ jac_free.T + DAMPING_FLOOR * np.eye(len(jac))
        d = np.zeros(len(q))
        d[free] = -(g - jac_free.T @ np.linalg.solve(gram, jac_free @ g))
        blocked = ((q <= lower) & (d < 0)) | ((q >= upper) & (d > 0))
        if not (blocked & free).any():
            return d
        free &= ~blocked
    d[~free] = 0.0
    return d


def descend(problem: KinematicProblem, q: np.ndarray, target: PoseTarget, lower: np.ndarray,
            upper: np.ndarray, objective: PoseObjective, tolerance: tuple[float, float],
            steps: int = DESCENT_STEPS) -> tuple[np.ndarray, np.ndarray, int]:
    """(q, pose error, steps kept) after lowering the objective along the self-motion, every
    accepted point within `tolerance` (m, rad) of the pose and inside the limits."""
    error = pose_error(problem, q, target)
    f, g = objective.value(q), objective.gradient(q)
    alpha, previous = first_step(objective.weight if objective.seed is not None else 0.0), None
    for step in range(steps):
        d = _projected_descent(problem.pose_jacobian(q)[:target.rows], g, q, lower, upper)
        size = float(np.linalg.norm(d))
        if previous is not None and size <= POLISH and size >= previous[2]:
            return previous[0], previous[3], step - 1      # the polish stalled on rounding
        slope = float(g @ d)
        if size <= STATIONARY or slope >= 0.0:
            return q, error, step
        if previous is not None:
            alpha = _barzilai_borwein(q - previous[0], previous[1] - d, alpha)
        accepted = None
        for _ in range(BACKTRACKS):
            trial, trial_error, _ = converge(problem, q + alpha * d, target, lower, upper,
                                             RETRACT_STEPS)
            position, rotation = _errors(trial_error)
            if position <= tolerance[0] and rotation <= tolerance[1]:
                trial_f = objective.value(trial)
                if size <= POLISH or trial_f <= f + ARMIJO * alpha * slope:
                    accepted = trial, trial_error, trial_f
                    break
            alpha *= 0.5
        if accepted is None:
            return q, error, step
        previous = q, d, size, error
        q, error, f = accepted
        g = objective.gradient(q)
    return q, error, steps


def first_step(weight: float) -> float:
    """The descent's first step length: FIRST_STEP, shortened by the curvature 2 w of the
    seed term (so that a heavy weight, the stream's mu_s, still takes a step)."""
    return FIRST_STEP / (1.0 + 2.0 * weight * FIRST_STEP)


def _barzilai_borwein(s: np.ndarray, y: np.ndarray, alpha: float) -> float:
    """The BB1 step s.s / s.y, or the last step when the curvature is not positive. y is the
    change of the projected gradient -d: the full gradient's change also holds its part
    normal to the pose, which only the constraint balances."""
    curvature = float(s @ y)
    return float(s @ s) / curvature if curvature > 0.0 else alpha


def cheapest_turns(problem: KinematicProblem, q: np.ndarray, lower: np.ndarray,
                   upper: np.ndarray, objective: PoseObjective, f: float) -> tuple[np.ndarray, float]:
    """(q, f) with each angle moved by +-2 pi where that stays in the bounds and lowers the
    objective, joint by joint: the same pose, a cheaper posture."""
    q = q.copy()
    for c in np.flatnonzero(problem.revolute):
        for sign in (-1.0, 1.0):
            kept, turned = q[c], q[c] + sign * TWO_PI
            if turned < lower[c] or turned > upper[c]:
                continue
            q[c] = turned
            g = objective.value(q)
            if g < f:
                f = g
            else:
                q[c] = kept
    return q, f


def refine_poses(problem: KinematicProblem, starts: np.ndarray, target: PoseTarget,
                 lower: np.ndarray, upper: np.ndarray, objective: PoseObjective,
                 tolerance: tuple[float, float], descents: int) -> list[PoseResult]:
    """converge every start (those on the pose, within `tolerance`, turned by
    cheapest_turns); then descend the `descents` results on the pose that are lowest in
    objective, ties by order, each more than DESCENT_SEPARATION from those chosen before it."""
    results = []
    for start in starts:
        q, error, newton = converge(problem, np.array(start, float), target, lower, upper)
        position, rotation = _errors(error)
        f = objective.value(q)
        if position <= tolerance[0] and rotation <= tolerance[1]:
            q, turned = cheapest_turns(problem, q, lower, upper, objective, f)
            if turned < f:
                f, (position, rotation) = turned, _errors(pose_error(problem, q, target))
        results.append(PoseResult(q, position, rotation, f, newton, 0))
    on_pose = [i for i, r in enumerate(results)
               if r.position_error <= tolerance[0] and r.rotation_error <= tolerance[1]]
    chosen = []
    for i in sorted(on_pose, key=lambda i: results[i].objective):
        r = results[i]
        if len(chosen) == descents:
            break
        if any(np.abs(r.q - other).max() <= DESCENT_SEPARATION for other in chosen):
            continue
        chosen.append(r.q.copy())
        q, error, r.descent_steps = descend(problem, r.q, target, lower, upper, objective,
                                            tolerance)
        r.q, (r.position_error, r.rotation_error), r.objective = q, _errors(error), objective.value(q)
    return results


def refine_pose(problem: KinematicProblem, q: np.ndarray, target: PoseTarget,
                lower: np.ndarray, upper: np.ndarray, objective: PoseObjective,
                tolerance: tuple[float, float], descend_cost: bool = True) -> PoseResult:
    """converge, then (when asked and the pose is within `tolerance`) descend."""
    return refine_poses(problem, np.asarray(q, float)[None], target, lower, upper, objective,
                        tolerance, int(descend_cost))[0]
