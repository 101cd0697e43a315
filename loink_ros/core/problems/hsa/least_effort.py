"""Least actuation effort on a target pose, as a nonlinear program on the HSA statics.

Variables are the twists phi and the strains xi together: the steady state G + K = alpha
(statics.py) and pose(xi) = target are equality constraints, the twist range bounds phi,
and the objective is the problem's cost, mean_k (phi_k / phi_max)^2. Each equation row is
scaled by its typical size (the rods' stiffness for the balance, 1 mm and 1 mrad for the
pose), so that a solver's tolerance means the same on every row.

The runtime refines with CasADi's `sqpmethod` (Newton's method on the KKT conditions, exact
Hessian, the qrqp active-set QP for the twist bounds) from the network's answer: a local
method that converges in a few iterations from a good start. The optimisation reference
(baselines/hsa_reference.py) runs IPOPT on the same program from many starts.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from loink_ros.core.problems.hsa.statics import HsaStatics

POSE_SCALE = 1e-3             # m and rad per scaled pose row
SQP_OPTIONS = {
    'qpsol': 'qrqp', 'qpsol_options': {'print_iter': False, 'print_header': False,
                                       'error_on_fail': False},
    'print_time': False, 'print_iteration': False, 'print_header': False,
    'print_status': False, 'error_on_fail': False,
    'max_iter': 50, 'tol_pr': 1e-12, 'tol_du': 1e-10,
}


class HsaLeastEffort:
    """The program for one robot; `solver(plugin, options)` builds a CasADi nlpsol of it."""

    def __init__(self, statics: HsaStatics, lower: np.ndarray, upper: np.ndarray):
        self.statics = statics
        params = statics.params
        self.inputs, self.strains = params.inputs, 3 * params.segments
        x = ca.SX.sym('x', self.inputs + self.strains)
        target = ca.SX.sym('target', 3)
        phi, xi = x[:self.inputs], x[self.inputs:]
        balance = statics.residual(xi, phi) / self.balance_scale()
        pose = (statics.pose(xi)[0] - target) / POSE_SCALE
        effort = ca.sumsqr(phi / params.phi_max) / self.inputs
        self.program = {'x': x, 'p': target, 'f': effort, 'g': ca.vertcat(balance, pose)}
        self.lbx = np.concatenate([lower, np.full(self.strains, -np.inf)])
        self.ubx = np.concatenate([upper, np.full(self.strains, np.inf)])

    def balance_scale(self) -> ca.DM:
        """Per balance row: the rods' bending, shear and axial stiffness (N m, N, N)."""
        p = self.statics.params
        rows = [[p.S_b_hat[i].sum(), p.S_sh_hat[i].sum(), p.S_a_hat[i].sum()]
                for i in range(p.segments)]
        return ca.DM(np.ravel(rows))

    def solver(self, plugin: str, options: dict) -> ca.Function:
        return ca.nlpsol(f'hsa_least_effort_{plugin}', plugin, self.program, options)

    def solve(self, solver: ca.Function, phi0: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The solver's twists from start phi0 (its strains: phi0's steady state), clipped to
        the range (the solvers keep them inside to round-off)."""
        xi0 = self.statics.steady_state(phi0[None])[0]
        out = solver(x0=np.concatenate([phi0, xi0]), p=target, lbx=self.lbx, ubx=self.ubx,
                     lbg=0.0, ubg=0.0)
        return np.clip(np.asarray(out['x']).ravel()[:self.inputs], self.lbx[:self.inputs],
                       self.ubx[:self.inputs])


class HsaSqpRefinement:
    """The runtime's refinement: `sqpmethod` from the given twists (module docstring)."""

    def __init__(self, statics: HsaStatics, lower: np.ndarray, upper: np.ndarray):
        self.program = HsaLeastEffort(statics, lower, upper)
        self.solver = self.program.solver('sqpmethod', SQP_OPTIONS)

    def __call__(self, phi: np.ndarray, target: np.ndarray) -> np.ndarray:
        start = np.clip(np.asarray(phi, float), self.program.lbx[:self.program.inputs],
                        self.program.ubx[:self.program.inputs])
        return self.program.solve(self.solver, start, np.asarray(target, float))
