"""The IPOPT settings `loink bench magneto` compares, and the rule that picks the strongest.

Each variant is an NLP (full space: MagnetoIpopt; reduced space: MagnetoReducedIpopt) with
IPOPT options. `reference` (today's full-space NLP, default tolerances, JIT) sets the cost
every other variant must reach. The strongest is the fastest (mean time over the targets)
that, on at least QUALIFY_FRACTION of the targets, succeeds with a feasible answer whose
J is within SAME_COST (relative) of the reference's.

Options tried on this problem and left out (docs/MAGNETO.md s.4): SPRAL (the only other
linear solver in CasADi's IPOPT build; no HSL) is 1.5-2x slower than MUMPS; mu_strategy
adaptive saves an iteration but not time; a limited-memory Hessian needs ~38 iterations
(10x slower); nlp_scaling_method none, max_soc 0 and skipping the multiplier outputs
change nothing measurable; tolerances looser than 1e-4 do not cut iterations further
(the other stopping tests bind); mehrotra_algorithm crashes this build. Warm-starting the
multipliers needs a previous solve of the same target, which a single IK request has not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from loink_ros.baselines.magneto_ipopt import MagnetoIpopt
from loink_ros.baselines.magneto_reduced_ipopt import MagnetoReducedIpopt
from loink_ros.core.problems.magneto.problem import MagnetoProblem

SAME_COST = 1e-6          # relative J gap to the reference that counts as the same optimum
QUALIFY_FRACTION = 0.99   # ... on at least this share of the targets
# Tolerance 1e-4 (from 1e-8) and a smaller first barrier parameter (from 0.1): the nominal
# start is close, and the cost still agrees to ~1e-10 (the bench reports the gap).
TUNED = {'ipopt.tol': 1e-4, 'ipopt.mu_init': 1e-3}


@dataclass(frozen=True)
class IpoptVariant:
    """One NLP formulation with its IPOPT settings."""

    name: str
    label: str
    space: str                  # 'full' (18 variables, 13 equalities) or 'reduced' (5 variables)
    jit: bool = True
    gimbal_rows: bool = True    # False: leave out the gimbal rows the cost's barrier implies
    options: dict = field(default_factory=dict)

    def build(self, problem: MagnetoProblem):
        cls = MagnetoIpopt if self.space == 'full' else MagnetoReducedIpopt
        return cls(problem, jit=self.jit, options=self.options, gimbal_rows=self.gimbal_rows)

    def describe(self) -> dict:
        return {'label': self.label, 'space': self.space, 'jit': self.jit,
                'gimbal_rows': self.gimbal_rows, 'options': dict(self.options)}


REFERENCE = 'ipopt_full'
VARIANTS = (
    IpoptVariant(REFERENCE, 'IPOPT full space (18 var., JIT, default tol.)', 'full'),
    IpoptVariant('ipopt_full_vm', 'IPOPT full space (CasADi VM, default tol.)', 'full', jit=False),
    IpoptVariant('ipopt_full_tuned', 'IPOPT full space (JIT, implied gimbal rows out, tol 1e-4)',
                 'full', gimbal_rows=False, options=TUNED),
    IpoptVariant('ipopt_reduced', 'IPOPT reduced space (5 var., JIT, default tol.)', 'reduced'),
    IpoptVariant('ipopt_reduced_tuned',
                 'IPOPT reduced space (JIT, implied gimbal rows out, tol 1e-4)', 'reduced',
                 gimbal_rows=False, options=TUNED),
)


def agreement(cost: np.ndarray, reference_cost: np.ndarray, success: np.ndarray,
              feasible: np.ndarray) -> np.ndarray:
    """Per target: solved, feasible, and J within SAME_COST of the reference's."""
    gap = np.abs(cost - reference_cost) / np.abs(reference_cost)
    return success & feasible & (gap <= SAME_COST)


def strongest(times: dict[str, np.ndarray], agrees: dict[str, np.ndarray]) -> str:
    """The fastest variant by mean time among those agreeing on QUALIFY_FRACTION of targets."""
    qualified = [name for name in times if np.mean(agrees[name]) >= QUALIFY_FRACTION]
    if not qualified:
        raise RuntimeError('no IPOPT variant reaches the reference cost on enough targets')
    return min(qualified, key=lambda name: float(np.mean(times[name])))
