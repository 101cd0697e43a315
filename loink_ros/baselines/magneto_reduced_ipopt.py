"""IPOPT on the reduced-space Magneto NLP: the body pose is the only unknown.

    minimise    J(pose, legs(pose, y))       over pose = [x, y, yaw, roll, pitch]
    subject to  pose bounds                  (height = the commanded one, y[12])
                leg joints inside their bounds
                gimbal angles inside limits  (only where the cost's barrier does not imply them)
                body corners >= CLEARANCE above the surface

legs(pose, y) is the closed-form leg IK (the one MagnetoProblem.refine_legs runs, knee
branch tibia < 0) on CasADi's backend, so the footholds hold exactly by construction: 5
variables, no equalities, the same optimum as the full-space NLP (magneto_ipopt.py). The
tibia bounds keep every foothold in reach (|cos knee| < 1); a trial step out of reach
evaluates to NaN and IPOPT cuts it back. Warm start: the nominal body pose (level, at the
origin), as the full-space NLP's nominal stance.
"""

from __future__ import annotations

import numpy as np

from loink_ros.baselines.magneto_ipopt import CompiledNlp, IpoptResult, gimbal_rows_needed, result_of
from loink_ros.core.problems.backends import casadi_ops
from loink_ros.core.problems.magneto.problem import MagnetoProblem

N_POSE = 5   # x, y, yaw, roll, pitch; the height is the task's


class MagnetoReducedIpopt:
    """IPOPT on the reduced-space NLP of one MagnetoProblem; build once, solve many targets.

    `gimbal_rows=False` leaves out the gimbal-limit inequalities where the cost's gimbal
    barrier implies them (as MagnetoIpopt).
    """

    def __init__(self, problem: MagnetoProblem, jit: bool = False, options: dict | None = None,
                 gimbal_rows: bool = True):
        import casadi as ca
        self.problem = problem
        pose, y = ca.SX.sym('pose', N_POSE), ca.SX.sym('y', 13)
        full_pose = [pose[i] for i in range(N_POSE)] + [y[12]]
        joints = problem.legs.joints(casadi_ops(), full_pose, [y[i] for i in range(12)])
        q = ca.vertcat(*full_pose, *joints)
        ex = problem.casadi_expressions(q)
        rows = [ex['gimbal_g']] if gimbal_rows or gimbal_rows_needed(problem) else []
        inequalities = ca.vertcat(*rows, ex['clearance_g'])
        g = ca.vertcat(*joints, inequalities)
        self.nlp = CompiledNlp('magneto_reduced_ipopt', {'x': pose, 'p': y, 'f': ex['J'], 'g': g},
                               jit, options)
        self.jit = self.nlp.jit
        self.configuration = ca.Function('configuration', [pose, y], [q])
        n_ineq = inequalities.shape[0]
        self.lbg = np.concatenate([problem.lower[6:], np.full(n_ineq, -np.inf)])
        self.ubg = np.concatenate([problem.upper[6:], np.zeros(n_ineq)])
        self.lbx, self.ubx = problem.lower[:N_POSE], problem.upper[:N_POSE]

    def solve(self, task: np.ndarray, q0: np.ndarray | None = None) -> IpoptResult:
        """Minimise J for one target; q0 (18; only its body pose counts) defaults to the
        nominal body pose."""
        task = np.asarray(task, float)
        pose0 = np.zeros(N_POSE) if q0 is None else np.clip(q0[:N_POSE], self.lbx, self.ubx)
        sol, stats, elapsed = self.nlp(x0=pose0, p=task, lbx=self.lbx, ubx=self.ubx,
                                       lbg=self.lbg, ubg=self.ubg)
        q = np.array(self.configuration(sol['x'], task)).ravel()
        return result_of(q, sol, stats, elapsed)
