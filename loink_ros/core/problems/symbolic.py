"""A problem as CasADi expressions: what the compiled runtime generates C from."""

from dataclasses import dataclass
from typing import Any


@dataclass
class ImplicitTask:
    """A task map with no closed form: task(q) = pose(s) at the state s (k) where
    residual(s, q) = 0, found by Newton's method from `start` with a backtracking line search
    until ||residual|| <= tolerance, in at most `steps` steps (NaN when it does not get
    there); its Jacobian by the implicit function theorem.

    `program` (a CasADi nlpsol Function over [q; s], parameter the task, the residual and
    pose - task as equality constraints) is the closed-form refinement: solved from [q; s(q)]
    with q in [lower, upper], kept where every task row is within `exact` of the target, else the least change of q
    onto the task by Gauss-Newton over q and s (s weighted by `state_weight`, q moving at most
    `max_step` per step, `projection_steps` steps to `projection_tolerance`).
    """

    state: Any
    residual: Any
    pose: Any
    start: tuple[float, ...]
    tolerance: float
    steps: int
    program: Any = None
    lower: tuple[float, ...] = ()
    upper: tuple[float, ...] = ()
    exact: float = 0.0
    state_weight: float = 1.0
    max_step: float = 1.0
    projection_steps: int = 0
    projection_tolerance: float = 0.0


@dataclass
class SymbolicProblem:
    """SX expressions on the configuration q (n) and the task y (p).

    task(q) (p) and cost(q) are the true forward kinematics and cost (task None where
    `implicit` defines it); closed_form(q, y) (n) is Problem.closed_form_refine, None where
    there is none; margins(q) (m) are > 0 exactly where Problem.violations(q) names a broken
    condition, None where there are none.
    """

    q: Any
    y: Any
    task: Any
    cost: Any
    closed_form: Any = None
    margins: Any = None
    pose: Any = None
    pose_jacobian: Any = None
    revolute: tuple[bool, ...] | None = None   # per joint: an angle (pose Newton may turn it)
    implicit: ImplicitTask | None = None
