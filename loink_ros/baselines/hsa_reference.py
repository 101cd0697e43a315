"""The optimisation reference for the HSA robot: the minimum-effort twists that hold the end
effector at a target pose, by IPOPT (through CasADi, exact derivatives) from several starts.

Decision variables are the twists phi and the strains xi together; the steady state
G + K = alpha (hsa_statics.py) and pose(xi) = target are equality constraints, the twist
range bounds phi. Each equation row is scaled by its typical size (the rods' stiffness for
the balance, 1 mm and 1 mrad for the pose), so that IPOPT's tolerance means the same on
every row. An answer counts when its twists, re-solved by the simulator, reach the target
within `POSE_TOLERANCE`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from loink_ros.core.problems.hsa import HsaProblem

POSE_TOLERANCE = (1e-6, 1e-6)   # m, rad
STARTS = 8


@dataclass
class ReferenceAnswer:
    """The best valid answer of the starts (or the least-error one when none is valid)."""

    phi: np.ndarray
    cost: float
    position_error: float
    angle_error: float
    valid: bool
    optima: np.ndarray        # each valid start's twists, cheapest first (k, inputs)
    time_ms: float


class HsaReference:
    """Multi-start IPOPT on the simulator's statics."""

    def __init__(self, problem: HsaProblem, starts: int = STARTS, tolerance: float = 1e-12):
        self.problem, self.starts = problem, starts
        statics = problem.statics
        n_xi, n_phi = 3 * statics.params.segments, statics.params.inputs
        x = ca.SX.sym('x', n_phi + n_xi)
        target = ca.SX.sym('target', 3)
        phi, xi = x[:n_phi], x[n_phi:]
        balance = statics.residual(xi, phi) / self._balance_scale(statics)
        pose = (statics.pose(xi)[0] - target) / ca.DM([1e-3, 1e-3, 1e-3])
        effort = ca.sumsqr(phi / statics.params.phi_max) / n_phi
        self._nlp = ca.nlpsol('hsa_reference', 'ipopt', {'x': x, 'p': target, 'f': effort,
                                                          'g': ca.vertcat(balance, pose)},
                              {'ipopt.print_level': 0, 'print_time': False, 'ipopt.sb': 'yes',
                               'ipopt.tol': tolerance, 'ipopt.max_iter': 200})
        self._bounds = (np.concatenate([problem.lower, np.full(n_xi, -np.inf)]),
                        np.concatenate([problem.upper, np.full(n_xi, np.inf)]))
        self._constraints = n_xi + 3

    @staticmethod
    def _balance_scale(statics) -> ca.DM:
        """Per balance row: the rods' bending, shear and axial stiffness (N m, N, N)."""
        p = statics.params
        rows = [[p.S_b_hat[i].sum(), p.S_sh_hat[i].sum(), p.S_a_hat[i].sum()] for i in range(p.segments)]
        return ca.DM(np.ravel(rows))

    def solve(self, target: np.ndarray, rng: np.random.Generator) -> ReferenceAnswer:
        """The cheapest valid answer of `starts` starts: uniform twists and their steady state."""
        began = time.perf_counter()
        phi0 = rng.uniform(self.problem.lower, self.problem.upper, (self.starts, self.problem.dim))
        xi0 = self.problem.statics.steady_state(phi0)
        found = []
        for start in np.hstack([phi0, xi0]):
            out = self._nlp(x0=start, p=target, lbx=self._bounds[0], ubx=self._bounds[1],
                            lbg=0.0, ubg=0.0)
            phi = np.clip(np.asarray(out['x']).ravel()[:self.problem.dim], self.problem.lower,
                          self.problem.upper)
            found.append(phi)
        found = np.array(found)
        errors = self.problem.task(found) - target
        position, angle = np.linalg.norm(errors[:, :2], axis=1), np.abs(errors[:, 2])
        valid = (position <= POSE_TOLERANCE[0]) & (angle <= POSE_TOLERANCE[1])
        costs = self.problem.cost(found)
        order = np.argsort(np.where(valid, costs, np.inf))
        best = order[0] if valid.any() else int(np.argmin(position))
        return ReferenceAnswer(found[best], float(costs[best]), float(position[best]),
                               float(angle[best]), bool(valid[best]),
                               found[order[:valid.sum()]], 1e3 * (time.perf_counter() - began))
