"""The optimisation baseline: IPOPT (through CasADi) on the Magneto stance problem.

    minimise    J(q)                        (the same cost the LOInK model learns)
    subject to  task(q) = y                 (four footholds in F, commanded body height)
                lower <= q <= upper         (body pose bounds, URDF joint limits)
                gimbal angles inside limits (as linear-in-direction inequalities)
                body corners >= CLEARANCE above the surface

Exact first and second derivatives come from CasADi's algorithmic differentiation of the
same kinematics as Pinocchio (test/test_magneto.py checks them to 1e-9). The NLP is built
once (optionally JIT-compiled to C); every target is a parameter. Default warm start: the nominal stance at the commanded
height. IPOPT runs with its default tolerances (tol 1e-8); printing is off.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.magneto import MagnetoProblem

SUCCESS = ('Solve_Succeeded', 'Solved_To_Acceptable_Level')


@dataclass
class IpoptResult:
    """One IPOPT solve."""

    q: np.ndarray
    cost: float
    success: bool
    status: str
    iterations: int
    time_ms: float


class MagnetoIpopt:
    """IPOPT on one MagnetoProblem; build once, solve many targets."""

    def __init__(self, problem: MagnetoProblem, jit: bool = False, options: dict | None = None):
        import casadi as ca
        self.problem = problem
        ex = problem.casadi_expressions()
        y = ca.SX.sym('y', 13)
        g = ca.vertcat(ex['task'] - y, ex['gimbal_g'], ex['clearance_g'])
        self.n_eq = 13
        self.n_ineq = g.shape[0] - 13
        opts = {'ipopt.print_level': 0, 'print_time': False, 'ipopt.sb': 'yes'}
        opts.update(options or {})
        nlp = {'x': ex['q'], 'p': y, 'f': ex['J'], 'g': g}
        self.jit = False
        if jit:
            # CasADi compiles the NLP's functions (cost, constraints, their derivatives and
            # the Lagrangian's Hessian) with the system C compiler: ~13 s once, then about
            # half the solve time. Without a compiler, fall back to CasADi's virtual machine.
            try:
                self.solver = ca.nlpsol('magneto_ipopt', 'ipopt', nlp, {
                    **opts, 'jit': True, 'compiler': 'shell',
                    'jit_options': {'flags': ['-O2'], 'verbose': False}})
                self.jit = True
            except RuntimeError:
                pass
        if not self.jit:
            self.solver = ca.nlpsol('magneto_ipopt', 'ipopt', nlp, opts)
        self.lbg = np.concatenate([np.zeros(13), np.full(self.n_ineq, -np.inf)])
        self.ubg = np.zeros(g.shape[0])
        self.lbx, self.ubx = problem.lower, problem.upper

    def start(self, task: np.ndarray) -> np.ndarray:
        """The warm start: nominal stance (level body, ROBOTS.md's joints) at the commanded height."""
        return self.problem.stance_configuration(float(task[12]))

    def solve(self, task: np.ndarray, q0: np.ndarray | None = None) -> IpoptResult:
        """Minimise J for one target; q0 defaults to the nominal stance."""
        task = np.asarray(task, float)
        q0 = self.start(task) if q0 is None else np.clip(q0, self.lbx, self.ubx)
        began = time.perf_counter()
        sol = self.solver(x0=q0, p=task, lbx=self.lbx, ubx=self.ubx, lbg=self.lbg, ubg=self.ubg)
        elapsed = 1e3 * (time.perf_counter() - began)
        stats = self.solver.stats()
        status = str(stats.get('return_status', 'unknown'))
        return IpoptResult(np.array(sol['x']).ravel(), float(sol['f']), status in SUCCESS, status,
                           int(stats.get('iter_count', -1)), elapsed)
