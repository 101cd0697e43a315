"""The named cost terms a robot description combines (docs/ROBOT.md): J = sum_k w_k t_k / s_k.

Each term t_k is dimensionless and >= 0; its scale s_k is the term's mean over the joint box
(measured once when a description is trained and stored with the model), so that weights of
different terms compare: weight 1 on any term means "as much as its typical value".
Every term has a CasADi form, so the compiled runtime serves these robots too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
    from loink_ros.core.problems.arms.symbolic_chain import SymbolicChain

# manipulability: w_ref / (w + MANIPULABILITY_FLOOR * w_ref) stays finite at singularities.
MANIPULABILITY_FLOOR = 0.1
DEFAULT_BARRIER_MARGIN = 0.1


class CostTerm(ABC):
    """One named term: its value on configurations and as a CasADi expression."""

    name: str
    # Extra settings the term takes in the description, besides weight (and scale).
    options: tuple[str, ...] = ()

    def __init__(self, problem: KinematicProblem, settings: dict):
        self.mid = 0.5 * (problem.lower + problem.upper)
        self.half = 0.5 * (problem.upper - problem.lower)

    @abstractmethod
    def value(self, problem: KinematicProblem, q: np.ndarray) -> np.ndarray:
        """The term on configurations (B, n) -> (B,)."""

    @abstractmethod
    def symbolic(self, problem: KinematicProblem, q, chain: SymbolicChain):
        """The term as a CasADi SX expression of q (n)."""

    def settings(self) -> dict:
        """The term's resolved options, as stored with the model."""
        return {}


class RangeCentre(CostTerm):
    """sum_i ((q_i - mid_i) / half_i)^2: the squared distance from the centres of the ranges."""

    name = 'range_centre'

    def value(self, problem, q):
        return (((q - self.mid) / self.half) ** 2).sum(-1)

    def symbolic(self, problem, q, chain):
        return sum(((q[i] - self.mid[i]) / self.half[i]) ** 2 for i in range(problem.dim))


class NominalPosture(CostTerm):
    """sum_i ((q_i - p_i) / half_i)^2: the squared distance from a nominal posture p (by joint
    name; joints it leaves out sit at their range centre)."""

    name = 'nominal_posture'
    options = ('posture',)

    def __init__(self, problem, settings):
        super().__init__(problem, settings)
        given = settings.get('posture', {})
        self.joint_names = list(problem.joint_names)
        self.posture = np.array([float(given.get(n, m)) for n, m in zip(problem.joint_names,
                                                                         self.mid)])

    def value(self, problem, q):
        return (((q - self.posture) / self.half) ** 2).sum(-1)

    def symbolic(self, problem, q, chain):
        return sum(((q[i] - self.posture[i]) / self.half[i]) ** 2 for i in range(problem.dim))

    def settings(self):
        return {'posture': dict(zip(self.joint_names, self.posture.tolist()))}


class GravityTorque(CostTerm):
    """sum_i (tau_i / tau_max,i)^2: the static torques holding the arm against gravity (along
    the URDF root's -z), each over the joint's URDF effort limit (1 where it has none)."""

    name = 'gravity_torque'

    def __init__(self, problem, settings):
        super().__init__(problem, settings)
        effort = np.asarray(problem.model.effortLimit, float)
        self.effort = np.where(effort > 0, effort, 1.0)

    def value(self, problem, q):
        return ((problem.gravity_torque(q) / self.effort) ** 2).sum(-1)

    def symbolic(self, problem, q, chain):
        torque = chain.gravity_torque()
        return sum((torque[i] / self.effort[i]) ** 2 for i in range(problem.dim))


class Manipulability(CostTerm):
    """w_ref / (w + 0.1 w_ref), w = sqrt(det(J J^T)) of the task's position rows (Yoshikawa's
    measure): low where the tip moves easily in every task direction, finite at singularities.
    w_ref, the median w over the joint box, is measured once and stored (`reference`)."""

    name = 'manipulability'
    options = ('reference',)

    def __init__(self, problem, settings):
        super().__init__(problem, settings)
        reference = settings.get('reference')
        if reference is None:
            q = np.random.default_rng(0).uniform(problem.lower, problem.upper, (500, problem.dim))
            reference = float(np.median(self._measure(problem, q)))
        self.reference = float(reference)

    @staticmethod
    def _measure(problem, q: np.ndarray) -> np.ndarray:
        out = np.empty(len(q))
        for i, row in enumerate(q):
            jac = problem.pose_jacobian(row)[problem.rows]
            out[i] = np.sqrt(max(np.linalg.det(jac @ jac.T), 0.0))
        return out

    def value(self, problem, q):
        return self.reference / (self._measure(problem, q) + MANIPULABILITY_FLOOR * self.reference)

    def symbolic(self, problem, q, chain):
        import casadi as ca
        position = problem.symbolic_position(chain)[problem.rows]
        jac = ca.jacobian(position, q)
        w = ca.sqrt(ca.fmax(ca.det(jac @ jac.T), 0.0))
        return self.reference / (w + MANIPULABILITY_FLOOR * self.reference)

    def settings(self):
        return {'reference': self.reference}


class JointLimitBarrier(CostTerm):
    """sum_i max(0, (|q_i - mid_i| / half_i - (1 - m)) / m)^2: zero in the middle of each
    range, rising to 1 per joint at its limit over the outer fraction m (`margin`)."""

    name = 'joint_limit_barrier'
    options = ('margin',)

    def __init__(self, problem, settings):
        super().__init__(problem, settings)
        self.margin = float(settings.get('margin', DEFAULT_BARRIER_MARGIN))

    def value(self, problem, q):
        depth = (np.abs(q - self.mid) / self.half - (1.0 - self.margin)) / self.margin
        return (np.maximum(depth, 0.0) ** 2).sum(-1)

    def symbolic(self, problem, q, chain):
        import casadi as ca
        total = 0
        for i in range(problem.dim):
            depth = (ca.fabs(q[i] - self.mid[i]) / self.half[i] - (1.0 - self.margin)) / self.margin
            total += ca.fmax(depth, 0.0) ** 2
        return total

    def settings(self):
        return {'margin': self.margin}


TERMS: dict[str, type[CostTerm]] = {term.name: term for term in (
    RangeCentre, GravityTorque, Manipulability, NominalPosture, JointLimitBarrier)}
