"""The learned optimum inside the joint limits, for costs whose optima lie on them.

The network's cost on task y is J_hat = 0.5 ||z||^2 + phi(y), so its optimum over the
configurations of task y inside the limits is the least-norm latent z whose inverse
G^-1([y; z]) is inside them. Where z = 0's answer leaves the limits (an optimum on a bound:
the HSA robot's cheapest way to bend a segment leaves one rod untwisted), clipping it leaves
the task; this moves z instead, by sequential quadratic programming: each round takes the
least-norm z' with the first-order answer x + dx/dz (z' - z) inside the limits (dx/dz from
the inverse of dG/dx; a small QP, CasADi's qrqp), and a backtracking line search on the
merit VIOLATION_WEIGHT * (total violation) + 0.5 ||z||^2, since the inverse curves between
rounds. It stops inside the limits (to INSIDE_TOL) once the QP moves z by less than
STEP_TOL, or when no step lowers the merit (the least violation: the learned task set may
miss the box); the answer is clipped at the end.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from loink_ros.core.runtime.network_inverse import InverseResult, NetworkInverse

ROUNDS = 12
HALVINGS = 6
INSIDE_TOL = 1e-9      # normalised units
STEP_TOL = 1e-4        # latent units: inside, and the QP moves z no further (cost change ~ 1e-4 |z|)
VIOLATION_WEIGHT = 1e3


@lru_cache(maxsize=None)
def _latent_qp(latent_dim: int, dim: int):
    """min 0.5 ||z||^2 subject to lba <= A z <= uba, A of shape (dim, latent_dim): a CasADi
    Function, imported here so that models without bounded optima never load CasADi."""
    import casadi as ca

    shapes = {'h': ca.Sparsity.dense(latent_dim, latent_dim),
              'a': ca.Sparsity.dense(dim, latent_dim)}
    return ca.conic('latent_qp', 'qrqp', shapes, {'print_iter': False, 'print_header': False,
                                                  'print_info': False, 'error_on_fail': False})


def box_violation(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    """How far x (n,) lies outside [lower, upper], summed over its entries."""
    return float(np.sum(np.maximum(lower - x, 0.0) + np.maximum(x - upper, 0.0)))


def least_latent_inside(inverse: NetworkInverse, y_n: np.ndarray, lower_n: np.ndarray,
                        upper_n: np.ndarray, start: InverseResult, method: str, tol: float,
                        max_iter: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """(x_n, z, converged) for one normalised task y_n (p,), from z = 0's inverse `start`
    (a batch of one); x_n is not clipped yet."""
    task_dim, dim = len(y_n), inverse.network.dim
    qp = _latent_qp(dim - task_dim, dim)

    def violation(x: np.ndarray) -> float:
        return box_violation(x, lower_n, upper_n)

    def merit(x: np.ndarray, z: np.ndarray) -> float:
        return VIOLATION_WEIGHT * violation(x) + 0.5 * float(z @ z)

    z, result = np.zeros(dim - task_dim), start
    if violation(start.x[0]) <= INSIDE_TOL:
        return start.x[0], z, bool(start.converged[0])
    for _ in range(ROUNDS):
        x = result.x[0]
        dx_dz = np.linalg.inv(inverse.network.jacobian(x[None])[0])[:, task_dim:]
        offset = dx_dz @ z - x
        solved = qp(h=np.eye(len(z)), g=np.zeros(len(z)), a=dx_dz, lba=lower_n + offset,
                    uba=upper_n + offset)
        target = np.asarray(solved['x']).ravel()
        if not qp.stats()['success']:      # no latent inside to first order: least violation
            target = z + np.linalg.lstsq(dx_dz, np.clip(x, lower_n, upper_n) - x, rcond=None)[0]
        step, current = target - z, merit(x, z)
        if violation(x) <= INSIDE_TOL and np.abs(step).max() <= STEP_TOL:
            break
        for _ in range(HALVINGS):
            trial = inverse(np.concatenate([y_n, z + step])[None], method, tol, max_iter,
                            result.state)
            if merit(trial.x[0], z + step) < current:
                z, result = z + step, trial
                break
            step = step / 2
        else:
            break
    return result.x[0], z, bool(result.converged[0])
