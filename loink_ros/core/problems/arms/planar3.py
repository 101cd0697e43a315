"""The paper's planar 3-DoF arm: tip x position as the task, effort + posture as the cost."""

from pathlib import Path

import numpy as np

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.shipped_robots import robot_file

# Weight of the gravity-effort term against the posture term (docs/PLANAR3.md).
EFFORT_WEIGHT = 0.3


class Planar3Problem(KinematicProblem):
    """Vertical-plane arm; J = 0.3 sum (tau_g / tau_max)^2 + sum ((q - q_mid) / q_half)^2."""

    def __init__(self, urdf: Path | None = None, effort_weight: float = EFFORT_WEIGHT,
                 posture_weight: float = 1.0, limits: tuple[np.ndarray, np.ndarray] | None = None):
        """Defaults are the shipped design; the others exist to compare designs (loink design)."""
        super().__init__(urdf or robot_file('planar3.urdf'), 'tip', 'x', name='planar3',
                         cost_name='effort_and_posture', limits=limits)
        self.effort_weight, self.posture_weight = effort_weight, posture_weight
        self.effort = self.model.effortLimit.copy()
        self.mid = 0.5 * (self.lower + self.upper)
        self.half = 0.5 * (self.upper - self.lower)
        self.links = self._link_lengths()

    def _link_lengths(self) -> np.ndarray:
        placements = [self.model.jointPlacements[j].translation[2] for j in (2, 3)]
        tip = self.model.frames[self.tip_id].placement.translation[2]
        return np.array([*placements, tip])

    def cost(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        effort = ((self.gravity_torque(q) / self.effort) ** 2).sum(-1)
        posture = (((q - self.mid) / self.half) ** 2).sum(-1)
        return self.effort_weight * effort + self.posture_weight * posture

    def symbolic_cost(self, q, chain):
        torque = chain.gravity_torque()
        effort = sum((torque[i] / self.effort[i]) ** 2 for i in range(self.dim))
        posture = sum(((q[i] - self.mid[i]) / self.half[i]) ** 2 for i in range(self.dim))
        return self.effort_weight * effort + self.posture_weight * posture

    def compile_key(self) -> str:
        return f'{super().compile_key()} weights {self.effort_weight!r} {self.posture_weight!r}'

    def self_motion_set(self, y: float, resolution: int = 400) -> np.ndarray:
        """All configurations within limits reaching tip x = y, on a (q1, q2) grid; (m, 3)."""
        l1, l2, l3 = self.links
        g1, g2 = np.meshgrid(np.linspace(self.lower[0], self.upper[0], resolution),
                             np.linspace(self.lower[1], self.upper[1], resolution), indexing='ij')
        q1, q2 = g1.ravel(), g2.ravel()
        s = (y - l1 * np.sin(q1) - l2 * np.sin(q1 + q2)) / l3
        ok = np.abs(s) <= 1.0
        q1, q2, s = q1[ok], q2[ok], s[ok]
        branches = []
        for absolute in (np.arcsin(s), np.pi - np.arcsin(s)):
            q3 = np.mod(absolute - q1 - q2 + np.pi, 2 * np.pi) - np.pi
            inside = (q3 >= self.lower[2]) & (q3 <= self.upper[2])
            branches.append(np.stack([q1, q2, q3], -1)[inside])
        return np.concatenate(branches)
