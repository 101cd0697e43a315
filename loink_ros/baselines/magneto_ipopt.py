"""The optimisation baseline: IPOPT (through CasADi) on the Magneto stance problem, full space.

    minimise    J(q)                        (the same cost the LOInK model learns)
    subject to  task(q) = y                 (four footholds in F, commanded body height)
                lower <= q <= upper         (body pose bounds, URDF joint limits)
                gimbal angles inside limits (as linear-in-direction inequalities)
                body corners >= CLEARANCE above the surface

18 variables, 13 equalities. Exact first and second derivatives come from CasADi's
algorithmic differentiation of the same kinematics as Pinocchio (test/test_magneto.py
checks them to 1e-9). The NLP is built once (optionally JIT-compiled to C); every target is
a parameter. Default warm start: the nominal stance at the commanded height. IPOPT runs
with its default tolerances (tol 1e-8) unless `options` says otherwise; printing is off.
magneto_reduced_ipopt.py has the reduced-space NLP (body pose only), ipopt_variants.py the
settings the bench compares.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from loink_ros.core.problems.magneto.problem import MagnetoProblem

SUCCESS = ('Solve_Succeeded', 'Solved_To_Acceptable_Level')
QUIET = {'ipopt.print_level': 0, 'print_time': False, 'ipopt.sb': 'yes'}


@dataclass
class IpoptResult:
    """One IPOPT solve; q is the whole configuration (18)."""

    q: np.ndarray
    cost: float
    success: bool
    status: str
    iterations: int
    time_ms: float


class CompiledNlp:
    """An IPOPT nlpsol, its functions JIT-compiled to C when asked (and a compiler works)."""

    def __init__(self, name: str, nlp: dict, jit: bool, options: dict | None):
        import casadi as ca
        opts = {**QUIET, **(options or {})}
        self.jit = False
        if jit:
            # The system C compiler, ~5-15 s once, then about half the solve time (the
            # Hessian dominates). Without a compiler: CasADi's virtual machine.
            try:
                self.solver = ca.nlpsol(name, 'ipopt', nlp, {
                    **opts, 'jit': True, 'compiler': 'shell',
                    'jit_options': {'flags': ['-O2'], 'verbose': False}})
                self.jit = True
            except RuntimeError:
                pass
        if not self.jit:
            self.solver = ca.nlpsol(name, 'ipopt', nlp, opts)

    def __call__(self, **args) -> tuple[dict, dict, float]:
        """The solution, IPOPT's stats and the wall time of the call (ms)."""
        began = time.perf_counter()
        sol = self.solver(**args)
        return sol, self.solver.stats(), 1e3 * (time.perf_counter() - began)


def result_of(q: np.ndarray, sol: dict, stats: dict, elapsed_ms: float) -> IpoptResult:
    status = str(stats.get('return_status', 'unknown'))
    return IpoptResult(q, float(sol['f']), status in SUCCESS, status,
                       int(stats.get('iter_count', -1)), elapsed_ms)


def gimbal_rows_needed(problem: MagnetoProblem) -> bool:
    """The gimbal-limit rows are implied (not needed) when J has the gimbal barrier: it is
    +inf (NaN in CasADi) past a limit, so every point IPOPT accepts lies inside the limits."""
    return problem.metadata()['cost_weights']['gimbal'] <= 0.0


class MagnetoIpopt:
    """IPOPT on the full-space NLP of one MagnetoProblem; build once, solve many targets.

    `gimbal_rows=False` leaves out the 16 gimbal-limit inequalities where the cost's gimbal
    barrier implies them (gimbal_rows_needed), a smaller KKT system at the same optimum.
    """

    def __init__(self, problem: MagnetoProblem, jit: bool = False, options: dict | None = None,
                 gimbal_rows: bool = True):
        import casadi as ca
        self.problem = problem
        ex = problem.casadi_expressions()
        y = ca.SX.sym('y', 13)
        rows = [ex['gimbal_g']] if gimbal_rows or gimbal_rows_needed(problem) else []
        g = ca.vertcat(ex['task'] - y, *rows, ex['clearance_g'])
        self.n_eq = 13
        self.n_ineq = g.shape[0] - 13
        self.nlp = CompiledNlp('magneto_ipopt', {'x': ex['q'], 'p': y, 'f': ex['J'], 'g': g},
                               jit, options)
        self.jit = self.nlp.jit
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
        sol, stats, elapsed = self.nlp(x0=q0, p=task, lbx=self.lbx, ubx=self.ubx,
                                       lbg=self.lbg, ubg=self.ubg)
        return result_of(np.array(sol['x']).ravel(), sol, stats, elapsed)
