"""Where a goal call's time goes (issue 42): the compiled pose solve of MoveIt's goal calls
(seed = the middle of the limits, far from the pose), split into its phases on the same
starts: Newton onto the pose from every start (kernel.c's loink_pose_solve with no descent),
the descents of the lowest answers along the self-motion (the same with the solver's
descents, less the first), and the whole ranked solve (starts, both, ranking); the Newton
steps of the starts that reach the pose and of those that do not; and which start gave the
best answer (how many of the starts the answer needs)."""

import ctypes
import time

import numpy as np

from loink_ros.core.compiled.compiled_kernel import ACCEPT, PoseQuery
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import EXACT, TOLERANCE, PoseRequest, PoseSolver

# Poses measured (the bench's first ones).
PHASE_POSES = 1000
# Each phase is timed this many times per pose, the least kept (the machine's noise out).
REPEATS = 3
NO_CHECK = ctypes.cast(None, ACCEPT)
FIELD_NEWTON, FIELD_DESCENT = 3, 4     # pose_newton.c's POSE_NEWTON, POSE_DESCENT


def least_time(call) -> tuple[float, object]:
    """The least wall time of REPEATS calls (s), and the last result."""
    best = np.inf
    for _ in range(REPEATS):
        began = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - began)
    return best, result


def pose_phases(solver: PoseSolver, poses: list[PoseTarget], seed: np.ndarray) -> dict:
    """The phases of `poses`' goal calls from `seed` (module docstring), in ms."""
    kernel, problem = solver.kernel, solver.problem
    if kernel is None:
        return {'why': 'no compiled kernel for this model: the phases are the C solve\'s'}
    bounds = np.vstack([problem.lower, problem.upper])
    lower, upper = np.ascontiguousarray(problem.lower), np.ascontiguousarray(problem.upper)
    seed = np.ascontiguousarray(seed, float)
    newton, descent, whole, reached, missed, best, descents = [], [], [], [], [], [], []
    for target in poses[:PHASE_POSES]:
        flat = np.concatenate([target.position, target.rotation.ravel()])
        starts, _ = solver._starts(PoseRequest(target, seed=seed), problem.lower, problem.upper, 0)
        t0, first = least_time(lambda: kernel.pose_solve(starts, flat, False, bounds, None, 0.0,
                                                         EXACT, 0))
        t1, full = least_time(lambda: kernel.pose_solve(starts, flat, False, bounds, None, 0.0,
                                                        EXACT, solver.descents))
        query = PoseQuery(flat.ctypes.data, 0, 1, 0, lower.ctypes.data, upper.ctypes.data,
                          seed.ctypes.data, 0.0, TOLERANCE[0], TOLERANCE[1], 0.0, 0)
        t2, _ = least_time(lambda: kernel.pose_ranked(solver._settings, query, 1, NO_CHECK))
        newton.append(t0)
        descent.append(max(t1 - t0, 0.0))
        whole.append(t2)
        on_pose = (first.info[:, 0] <= EXACT[0]) & (first.info[:, 1] <= EXACT[1])
        reached += list(first.info[on_pose, FIELD_NEWTON])
        missed += list(first.info[~on_pose, FIELD_NEWTON])
        descents += list(full.info[full.info[:, FIELD_DESCENT] > 0, FIELD_DESCENT])
        exact = (full.info[:, 0] <= EXACT[0]) & (full.info[:, 1] <= EXACT[1])
        if exact.any():
            best.append(int(np.argmin(np.where(exact, full.info[:, 2], np.inf))))
    whole_ms = 1e3 * np.array(whole)
    count = len(whole)

    def ms(values: list[float]) -> dict:
        v = 1e3 * np.array(values)
        return {'p50': float(np.median(v)), 'mean': float(v.mean()),
                'share_of_whole_mean': float(v.mean() / whole_ms.mean())}
    steps = np.sum(reached) + np.sum(missed)
    ranks = np.array(best)
    return {
        'poses': count, 'starts': len(starts), 'repeats_least_kept': REPEATS,
        'whole_solve_ms': {'p50': float(np.median(whole_ms)), 'mean': float(whole_ms.mean())},
        'newton_ms': ms(newton), 'descent_ms': ms(descent),
        'starts_and_ranking_ms': ms(list(np.maximum(np.array(whole) - np.array(newton)
                                                    - np.array(descent), 0.0))),
        'newton_steps': {
            'reaching_the_pose_mean': float(np.mean(reached)),
            'reaching_the_pose_p90': float(np.percentile(reached, 90)),
            'not_reaching_mean': float(np.mean(missed)) if missed else 0.0,
            'starts_not_reaching_share': len(missed) / (len(missed) + len(reached)),
            'steps_in_starts_not_reaching_share': float(np.sum(missed) / steps)},
        'descents_per_pose': len(descents) / count,
        'descent_steps_mean': float(np.mean(descents)) if descents else 0.0,
        'best_answer_from_the_first_k_starts': {
            str(k): float(np.mean(ranks < k)) for k in (4, 8, 12, 16, 20, len(starts))}}
