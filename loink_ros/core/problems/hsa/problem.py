"""The paper's soft robot: a planar stack of three HSA segments, six rod twists as the
configuration, the end-effector pose [p_x, p_y, theta] as the task, actuation effort as the
cost. The task map is jsrm's steady-state model (statics.py): no URDF."""

from __future__ import annotations

import numpy as np

from loink_ros.core.problems.hsa.least_effort import HsaSqpRefinement
from loink_ros.core.problems.hsa.parameters import RODS, HsaParameters, fpu_control
from loink_ros.core.problems.hsa.statics import (
    MAX_TWIST_STEP,
    NEWTON_STEPS,
    NEWTON_TOLERANCE,
    PROJECTION_STEPS,
    PROJECTION_TOLERANCE,
    STRAIN_WEIGHT,
    HsaStatics,
)
from loink_ros.core.problems.problem import Problem
from loink_ros.core.problems.symbolic import ImplicitTask, SymbolicProblem

# An SQP answer further than this from the task (m, rad) counts as failed.
SQP_POSE_TOLERANCE = 1e-9


class HsaProblem(Problem):
    """x = the rods' twist angles phi in [0, phi_max]; y = [p_x, p_y, theta] of the last
    platform's distal plane (m, rad); J = mean_k (phi_k / phi_max)^2. The cheapest way to bend
    a segment leaves one of its rods untwisted, so optima lie on the bound phi = 0."""

    optimum_on_bounds = True

    def __init__(self, urdf: None = None, params: HsaParameters | None = None):
        """`urdf` is the registry's argument: this robot has none."""
        if urdf is not None:
            raise ValueError('the HSA robot has no URDF: its model is hsa/statics.py')
        self.params = params or fpu_control(3)
        self.statics = HsaStatics(self.params)
        self.name = 'hsa'
        self.joint_names = [f'segment{i + 1}_rod{j + 1}' for i in range(self.params.segments)
                            for j in range(RODS)]
        self.lower = np.zeros(self.params.inputs)
        self.upper = np.full(self.params.inputs, self.params.phi_max)
        self.task_names = ['ee_x', 'ee_y', 'ee_theta']
        self.cost_name = 'actuation_effort'
        # Built with the problem, so that a node's first refined request does not wait for it.
        self.refinement = HsaSqpRefinement(self.statics, self.lower, self.upper)

    def task(self, q: np.ndarray) -> np.ndarray:
        return self.statics.end_effector(np.atleast_2d(q))

    def task_jacobian(self, q: np.ndarray) -> np.ndarray:
        """d pose / d phi by the implicit function theorem on the statics' residual."""
        phi = np.asarray(q, float)[None]
        xi = self.statics.steady_state(phi)[0]
        _, d_xi, d_phi = (np.asarray(a) for a in self.statics.residual_jacobians(xi, phi[0]))
        _, pose_xi = self.statics.pose(xi)
        return -np.asarray(pose_xi) @ np.linalg.solve(d_xi, d_phi)

    def cost(self, q: np.ndarray) -> np.ndarray:
        return np.mean((np.atleast_2d(q) / self.params.phi_max) ** 2, axis=-1)

    def closed_form_refine(self, q: np.ndarray, task: np.ndarray) -> np.ndarray:
        """The least-effort twists on the task near q (HsaSqpRefinement), inside the range; where
        the SQP does not reach the task, the statics' projection of q onto it (HsaStatics.project)."""
        target = np.asarray(task, float)
        refined = self.refinement(q, target)
        error = np.abs(self.task(refined)[0] - target)
        if np.all(error <= SQP_POSE_TOLERANCE):
            return refined
        return self.statics.project(q, target, self.lower, self.upper)

    def symbolic(self) -> SymbolicProblem:
        """The statics as an implicit task (the compiled runtime's Newton on the residual)
        and the SQP program as the closed form, with this file's and the statics' constants."""
        import casadi as ca
        statics, n = self.statics, self.dim
        q, y, xi = ca.SX.sym('q', n), ca.SX.sym('y', self.task_dim), ca.SX.sym('xi', 3 * self.params.segments)
        implicit = ImplicitTask(
            state=xi, residual=statics.residual(xi, q), pose=statics.pose(xi)[0],
            start=tuple(statics.rest_strains), tolerance=NEWTON_TOLERANCE,
            steps=NEWTON_STEPS, program=self.refinement.solver,
            lower=tuple(self.lower), upper=tuple(self.upper), exact=SQP_POSE_TOLERANCE,
            state_weight=STRAIN_WEIGHT, max_step=MAX_TWIST_STEP,
            projection_steps=PROJECTION_STEPS,
            projection_tolerance=PROJECTION_TOLERANCE)
        return SymbolicProblem(q, y, None, ca.sumsqr(q / self.params.phi_max) / n,
                               implicit=implicit)

    def metadata(self) -> dict:
        p = self.params
        # Frames by name only (there is no URDF): the base plane and the last platform's top.
        return {**super().metadata(), 'robot': f'planar_hsa_{p.segments}',
                'base_frame': 'hsa_base', 'tip_frame': 'hsa_end_effector',
                'simulator': 'jsrm 0.0.18 planar HSA, FPU control parameters, caps along their '
                             'platform (core/problems/hsa/statics.py)',
                'phi_max': p.phi_max}
