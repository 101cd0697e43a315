"""Problem: robot + task map + cost + configuration sampler, the thing LOInK learns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from loink_ros.core.problems.symbolic import SymbolicProblem


class Problem(ABC):
    """Base class; a variant defines the task map, its Jacobian and the cost."""

    name: str
    joint_names: list[str]
    lower: np.ndarray
    upper: np.ndarray
    task_names: list[str]
    cost_name: str
    # True where the cost's optima often lie on the joint limits: the runtime then answers
    # the optimum with the least-norm latent inside them (runtime/bounded_latent.py)
    # instead of clipping z = 0's answer.
    optimum_on_bounds: bool = False

    @classmethod
    def from_model(cls, meta: dict, urdf=None) -> Problem:
        """The problem a model file's `problem` metadata describes, on another copy of the
        robot's URDF if given; a variant reads its own options from `meta`."""
        return cls(urdf)

    @property
    def dim(self) -> int:
        """Configuration dimension n."""
        return len(self.joint_names)

    @property
    def task_dim(self) -> int:
        """Task dimension p."""
        return len(self.task_names)

    @abstractmethod
    def task(self, q: np.ndarray) -> np.ndarray:
        """Task reached by each configuration, (B, n) -> (B, p)."""

    @abstractmethod
    def task_jacobian(self, q: np.ndarray) -> np.ndarray:
        """d task / d q at one configuration, (n,) -> (p, n)."""

    @abstractmethod
    def cost(self, q: np.ndarray) -> np.ndarray:
        """Cost of each configuration, (B, n) -> (B,).

        Total on the joint box: a finite value, or +inf where the cost is undefined (Magneto
        past a gimbal's reach); never NaN, never an exception. A solve's answer (Solution)
        carries +inf for every broken feasibility condition, this one included.
        """

    def violations(self, q: np.ndarray) -> list[str]:
        """The feasibility conditions beyond the joint box that one configuration (n,) breaks,
        each a short line naming the condition and by how much; none by default."""
        return []

    def self_collisions(self, q: np.ndarray) -> list[str]:
        """The robot's link pairs touching at one configuration (n,), one line each; none
        for a problem without a collision model. Not part of violations(): a request asks
        for it (GetPositionIK's avoid_collisions)."""
        return []

    @property
    def has_collision_model(self) -> bool:
        """Whether self_collisions() checks anything."""
        return False

    def example_configuration(self) -> np.ndarray:
        """A known-good configuration (n,) whose task is a reachable example target; by
        default the middle of the joint ranges."""
        return 0.5 * (self.lower + self.upper)

    @property
    def task_is_tip_position(self) -> bool:
        """Whether the task holds a tip's whole position (arm problems); False here."""
        return False

    def cost_minimiser(self) -> np.ndarray | None:
        """The configuration (n,) of least cost when the cost has one known in closed form
        (a posture cost: its centre), else None; full-pose IK draws its starts around it."""
        return None

    def closed_form_refine(self, q: np.ndarray, task: np.ndarray) -> np.ndarray | None:
        """An exact, problem-specific refinement of q (n,) for task (p,); None if there is none."""
        return None

    def local_optimum(self, q: np.ndarray, task: np.ndarray) -> np.ndarray | None:
        """The true cost's local optimum on the task near q (n,), within the limits, where the
        problem has a program for it; None otherwise. The solver polishes refined optima
        (a solve with refinement and no latent) with it."""
        return None

    def symbolic(self) -> SymbolicProblem | None:
        """Task, cost, closed form and violation margins as CasADi expressions, the source of
        the compiled runtime (docs/COMPILED.md); None: the numpy path serves this problem."""
        return None

    def compile_key(self) -> str:
        """Everything symbolic() depends on besides the code: the compiled runtime's cache
        key (a cached build is also checked against the numpy path when loaded)."""
        return repr(sorted(self.metadata().items()))

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """Configurations spread over the joint limits, (count, n)."""
        return rng.uniform(self.lower, self.upper, size=(count, self.dim))

    def metadata(self) -> dict:
        """The description stored with a trained model."""
        return {'name': self.name, 'joint_names': list(self.joint_names),
                'joint_lower': self.lower.tolist(), 'joint_upper': self.upper.tolist(),
                'task_names': list(self.task_names), 'cost_name': self.cost_name}
