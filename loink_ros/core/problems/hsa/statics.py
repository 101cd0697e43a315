"""Steady state and end-effector pose of a planar HSA robot: jsrm's model, in CasADi.

Each segment is a piecewise-constant-strain virtual backbone with strains
xi_i = [kappa_b, sigma_sh, sigma_a]; its rods sit at offsets roff from it. For twist
angles phi the robot rests where gravity, elasticity and actuation balance,
G(xi) + K(xi) = alpha(xi, phi), with jsrm's terms (`symbolic_derivation/planar_hsa.py`):
- G = dU/dxi, U the gravitational energy of the rods, the platforms with their end caps
  and the payload;
- K the rods' elastic forces about their rest strains;
- alpha: twisting lengthens each rod's rest length (C_varepsilon h / l phi) and changes
  its stiffness linearly (C_S h / l phi).
The backbone's positions are written with sinc, so that straight segments (kappa_b = 0)
need no special case; the rods' energy integrals use Gauss-Legendre quadrature, exact to
round-off for these smooth integrands.

One deliberate difference from jsrm: a segment's proximal cap starts at the previous
platform and points along it (rotated by its angle). jsrm adds [0, lpc] in the world frame,
which is the same for one segment and wrong for a stack; `caps_in_world_frame=True` gives
jsrm's convention, for cross-checks.
"""

from __future__ import annotations

from functools import cached_property

import casadi as ca
import numpy as np

from loink_ros.core.problems.hsa.parameters import RODS, HsaParameters

QUADRATURE_POINTS = 16
NEWTON_TOLERANCE = 1e-12     # residual, N and N m
NEWTON_STEPS = 50
PROJECTION_STEPS = 30
# Projection onto a target: the strains' share of the step norm (the twists' is 1), and the
# pose tolerance (m, rad).
STRAIN_WEIGHT = 1e-4
PROJECTION_TOLERANCE = 1e-12
MAX_TWIST_STEP = 0.2          # rad per step: the linearisation holds, the answer stays near


def _rotation(theta):
    c, s = ca.cos(theta), ca.sin(theta)
    return ca.vertcat(ca.horzcat(c, -s), ca.horzcat(s, c))


def _sinc(x):
    """sin(x)/x, smooth through 0: its Taylor series below |x| = 1e-3, where the other branch
    divides by a stand-in 1 so that neither branch (nor its derivative) is NaN."""
    small = ca.fabs(x) < 1e-3
    safe = ca.if_else(small, 1.0, x)
    return ca.if_else(small, 1 - x**2 / 6 + x**4 / 120, ca.sin(safe) / safe)


class HsaStatics:
    """The steady-state map phi -> xi -> end-effector pose [p_x, p_y, theta]."""

    def __init__(self, params: HsaParameters, caps_in_world_frame: bool = False):
        self.params = params
        self.caps_in_world_frame = caps_in_world_frame
        n, m = 3 * params.segments, params.inputs
        self._xi, self._phi = ca.SX.sym('xi', n), ca.SX.sym('phi', m)
        energy, pose, frames = self._energy_and_pose(self._xi)
        residual = ca.gradient(energy, self._xi) + self._elastic(self._xi) - self._actuation(self._xi, self._phi)
        self.residual = ca.Function('hsa_residual', [self._xi, self._phi], [residual])
        self.residual_jacobians = ca.Function(
            'hsa_residual_jacobians', [self._xi, self._phi],
            [residual, ca.jacobian(residual, self._xi), ca.jacobian(residual, self._phi)])
        self.pose = ca.Function('hsa_pose', [self._xi], [pose, ca.jacobian(pose, self._xi)])
        self.frames = ca.Function('hsa_frames', [self._xi], [frames])
        self._maps: dict[int, ca.Function] = {}

    # ---------------------------------------------------------------- the model
    def _energy_and_pose(self, xi):
        """Gravitational energy, the end-effector pose, and each platform's distal pose."""
        p = self.params
        nodes, weights = np.polynomial.legendre.leggauss(QUADRATURE_POINTS)
        g = ca.DM(p.g)
        energy, theta, position = 0, 0, ca.DM.zeros(2)
        frames = []
        for i in range(p.segments):
            kappa, shear, axial = xi[3 * i], xi[3 * i + 1], xi[3 * i + 2]
            cap = ca.DM([0.0, p.lpc[i]])
            base = position + (cap if self.caps_in_world_frame else _rotation(theta) @ cap)
            strain = ca.vertcat(shear, axial)

            def backbone(s):
                return base + s * _sinc(kappa * s / 2) * _rotation(theta + kappa * s / 2) @ strain

            for j in range(RODS):
                area = np.pi * (p.rout[i, j] ** 2 - p.rin[i, j] ** 2)
                integral = 0
                for node, weight in zip(nodes, weights):
                    s = p.rod_length[i] * (node + 1) / 2
                    rod = backbone(s) + _rotation(theta + kappa * s) @ ca.DM([p.roff[i, j], 0.0])
                    integral += weight * p.rod_length[i] / 2 * ca.dot(g, rod)
                energy -= p.rhor[i, j] * area * integral
            end, theta = backbone(p.rod_length[i]), theta + kappa * p.rod_length[i]
            mass, centre = self._platform(i)
            energy -= mass * ca.dot(g, end + _rotation(theta) @ ca.DM(centre))
            position = end + _rotation(theta) @ ca.DM([0.0, p.ldc[i] + p.platform[i, 1]])
            frames.append(ca.vertcat(position, theta))
        return energy, ca.vertcat(position, theta), ca.horzcat(*frames)

    def _platform(self, i: int) -> tuple[float, list[float]]:
        """Mass of platform i with its distal caps and the next segment's proximal caps, and
        its centre of gravity from the rods' distal end (jsrm's lumped masses)."""
        p = self.params
        itself = p.rhop[i] * np.prod(p.platform[i])
        distal = sum(p.rhoec[i] * p.ldc[i] * p.rout[i, j] ** 2 for j in range(RODS))
        moment = distal * p.ldc[i] / 2 + itself * (p.ldc[i] + p.platform[i, 1] / 2)
        mass = itself + distal
        if i + 1 < p.segments:
            proximal = sum(p.rhoec[i + 1] * p.lpc[i + 1] * p.rout[i + 1, j] ** 2 for j in range(RODS))
            moment += proximal * (p.ldc[i] + p.platform[i, 1] + p.lpc[i + 1] / 2)
            mass += proximal
        return mass, [0.0, moment / mass]

    def _elastic(self, xi):
        """K(xi): each rod's stiffness about its rest strains, mapped to the backbone."""
        p = self.params
        forces = []
        for i in range(p.segments):
            force = 0
            for j in range(RODS):
                beta = self._rod_map(p.roff[i, j])
                strain = beta @ xi[3 * i:3 * i + 3] - p.strain_rest
                force += beta.T @ self._stiffness(p.S_b_hat[i, j], p.S_sh_hat[i, j], p.S_a_hat[i, j],
                                                  p.S_b_sh[i, j]) @ strain
            forces.append(force)
        return ca.vertcat(*forces)

    def _actuation(self, xi, phi):
        """alpha(xi, phi): the twist's change of rest length and of stiffness."""
        p = self.params
        forces = []
        for i in range(p.segments):
            force = 0
            for j in range(RODS):
                twist = p.h[i, j] / p.rod_length[i] * phi[RODS * i + j]
                beta = self._rod_map(p.roff[i, j])
                strain = beta @ xi[3 * i:3 * i + 3] - p.strain_rest
                delta = self._stiffness(p.C_S_b[i, j] * twist, p.C_S_sh[i, j] * twist, p.C_S_a[i, j] * twist)
                total = self._stiffness(p.S_b_hat[i, j], p.S_sh_hat[i, j], p.S_a_hat[i, j],
                                        p.S_b_sh[i, j]) + delta
                elongation = ca.vertcat(0, 0, p.C_varepsilon[i, j] * twist)
                force += beta.T @ (-delta @ strain + total @ elongation)
            forces.append(force)
        return ca.vertcat(*forces)

    @staticmethod
    def _rod_map(offset: float) -> ca.DM:
        """Backbone strains -> a rod's strains: the rod at `offset` stretches by offset * kappa."""
        return ca.DM([[1, 0, 0], [0, 1, 0], [offset, 0, 1]])

    @staticmethod
    def _stiffness(bending, shear, axial, coupling=0):
        return ca.vertcat(ca.horzcat(bending, coupling, 0), ca.horzcat(coupling, shear, 0),
                          ca.horzcat(0, 0, axial))

    # ---------------------------------------------------------------- solving it
    @cached_property
    def rest_strains(self) -> np.ndarray:
        return np.tile(self.params.strain_rest, self.params.segments)

    def steady_state(self, phi: np.ndarray, xi0: np.ndarray | None = None) -> np.ndarray:
        """Strains xi (B, 3 segments) at rest for twists phi (B, inputs), by Newton's method
        from xi0 (default: the rest strains) with a backtracking line search; each trial point
        is evaluated with its Jacobian, which the next step reuses when it is accepted. A row
        whose residual is not within NEWTON_TOLERANCE after NEWTON_STEPS is NaN (Newton
        takes 4 steps anywhere in the twist range)."""
        phi = np.atleast_2d(np.asarray(phi, float))
        count = len(phi)
        xi = np.tile(self.rest_strains, (count, 1)) if xi0 is None else np.array(xi0, float, ndmin=2)
        batch = self._batched_jacobians(count)
        r, jac = self._evaluate(batch, xi, phi)
        norm = np.linalg.norm(r, axis=1)
        for _ in range(NEWTON_STEPS):
            active = norm > NEWTON_TOLERANCE
            if not active.any():
                break
            step = np.linalg.solve(jac, -r[..., None])[..., 0]
            scale = np.where(active, 1.0, 0.0)
            for _ in range(20):
                r_t, jac_t = self._evaluate(batch, xi + scale[:, None] * step, phi)
                norm_t = np.linalg.norm(r_t, axis=1)
                worse = active & (norm_t > (1 - 1e-4 * scale) * norm)
                if not worse.any():
                    break
                scale = np.where(worse, scale / 2, scale)
            xi, r, jac, norm = xi + scale[:, None] * step, r_t, jac_t, norm_t
        xi[~(norm <= NEWTON_TOLERANCE)] = np.nan
        return xi

    def _batched_jacobians(self, count: int) -> ca.Function:
        if count not in self._maps:
            self._maps[count] = self.residual_jacobians.map(count)
        return self._maps[count]

    @staticmethod
    def _evaluate(batch: ca.Function, xi: np.ndarray, phi: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The residuals (B, n) and their Jacobians in xi (B, n, n)."""
        r, jac, _ = batch(xi.T, phi.T)
        n = xi.shape[1]
        return np.asarray(r).T, np.asarray(jac).T.reshape(len(xi), n, n).transpose(0, 2, 1)

    def end_effector(self, phi: np.ndarray) -> np.ndarray:
        """End-effector pose [p_x, p_y, theta] (B, 3) for twists phi (B, inputs)."""
        xi = self.steady_state(phi)
        return np.asarray(self.pose.map(len(xi))(xi.T)[0]).T

    def project(self, phi: np.ndarray, target: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                steps: int = PROJECTION_STEPS) -> np.ndarray:
        """Twists near `phi` that hold the end effector at `target`, inside [lower, upper]:
        Gauss-Newton on the balance and the pose together, over twists and strains, each step
        the least change of the twists; a twist at a bound that the step would push out is
        held there. The strains start at phi's steady state."""
        n = len(phi)
        phi = np.clip(np.asarray(phi, float), lower, upper)
        xi = self.steady_state(phi[None])[0]
        weight = np.concatenate([np.ones(n), np.full(len(xi), STRAIN_WEIGHT)])
        for _ in range(steps):
            balance, d_xi, d_phi = (np.asarray(a) for a in self.residual_jacobians(xi, phi))
            pose, pose_xi = (np.asarray(a) for a in self.pose(xi))
            residual = np.concatenate([balance.ravel(), pose.ravel() - target])
            if np.abs(residual).max() <= PROJECTION_TOLERANCE:
                break
            jac = np.block([[d_phi, d_xi], [np.zeros((3, n)), pose_xi]])
            free = weight.copy()
            push = -(jac.T @ residual)[:n]
            free[:n][((phi <= lower) & (push < 0)) | ((phi >= upper) & (push > 0))] = 0.0
            scaled = jac * free
            step = -scaled.T @ np.linalg.solve(scaled @ jac.T + 1e-18 * np.eye(len(residual)), residual)
            step *= min(1.0, MAX_TWIST_STEP / max(np.abs(step[:n]).max(), 1e-300))
            phi = np.clip(phi + step[:n], lower, upper)
            xi = xi + step[n:]
        return phi
