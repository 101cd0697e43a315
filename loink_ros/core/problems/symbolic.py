"""A problem as CasADi expressions: what the compiled runtime generates C from."""

from dataclasses import dataclass
from typing import Any


@dataclass
class SymbolicProblem:
    """SX expressions on the configuration q (n) and the task y (p).

    task(q) (p) and cost(q) are the true forward kinematics and cost; closed_form(q, y) (n)
    is Problem.closed_form_refine, None where there is none; margins(q) (m) are > 0 exactly
    where Problem.violations(q) names a broken condition, None where there are none.
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
