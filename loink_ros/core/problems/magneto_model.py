"""Magneto kinematics and required adhesion, written once for numpy batches and CasADi symbols.

Every function here takes an `ops` backend (`NUMPY`, `MATH` or `casadi_ops()`) and works on
plain Python lists of scalars: a scalar is a numpy array of shape (B,) (a batch), a float
(one configuration) or a CasADi SX/MX scalar, a 3-vector is a list of 3 scalars, a 3x3 matrix a list of 3 rows. Constants
are Python floats; exact zeros and ones are skipped, so CasADi graphs stay small and numpy
does no work on them. All numbers (joint placements, axes, masses, CoM levers) are read
from the Pinocchio model of loink_ros/robots/magneto.urdf, so this code and Pinocchio
describe the same robot; test/test_magneto.py checks they agree to 1e-9.

Frames: the footprint frame F lies on the climbing surface (z out of the surface, x
uphill, y across, to the robot's left); see docs/MAGNETO.md.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from types import SimpleNamespace

import numpy as np

LEGS = ('AR', 'AL', 'BR', 'BL')
ZERO_SNAP = 1e-14   # placement entries below this are exact zeros (cos(pi/2) round-off)

# Besides the usual functions, each backend has neg_log(s) = -log(s), +inf where s <= 0 (the
# barriers' infeasible marker: a cost is total, never an exception), and asin clipped to
# [-1, 1] against round-off of unit vectors (CasADi: plain, for smooth derivatives).


def _neg_log_math(s: float) -> float:
    return -math.log(s) if s > 0.0 else math.inf


def _neg_log_numpy(s: np.ndarray) -> np.ndarray:
    positive = s > 0.0
    return np.where(positive, -np.log(np.where(positive, s, 1.0)), np.inf)


MATH = SimpleNamespace(name='math', sin=math.sin, cos=math.cos, sqrt=math.sqrt, log=math.log,
                       exp=math.exp, fabs=abs, fmax=max, atan2=math.atan2,
                       asin=lambda x: math.asin(min(1.0, max(-1.0, x))), log1p=math.log1p,
                       neg_log=_neg_log_math)   # one configuration in plain floats: less overhead
NUMPY = SimpleNamespace(name='numpy', sin=np.sin, cos=np.cos, sqrt=np.sqrt, log=np.log,
                        exp=np.exp, fabs=np.abs, fmax=np.maximum, atan2=np.arctan2,
                        asin=lambda x: np.arcsin(np.clip(x, -1.0, 1.0)), log1p=np.log1p,
                        neg_log=_neg_log_numpy)


def casadi_ops() -> SimpleNamespace:
    """The CasADi backend (imported on first use: the runtime does not need CasADi)."""
    import casadi as ca
    return SimpleNamespace(name='casadi', sin=ca.sin, cos=ca.cos, sqrt=ca.sqrt, log=ca.log,
                           exp=ca.exp, fabs=ca.fabs, fmax=ca.fmax, atan2=ca.atan2,
                           asin=ca.asin, log1p=ca.log1p, neg_log=lambda s: -ca.log(s))


# ---- scalar-list linear algebra ----------------------------------------------------------

def _const(a, value: float) -> bool:
    return isinstance(a, float) and a == value


def mul(a, b):
    if _const(a, 0.0) or _const(b, 0.0):
        return 0.0
    if _const(a, 1.0):
        return b
    if _const(b, 1.0):
        return a
    if _const(a, -1.0):
        return -b
    if _const(b, -1.0):
        return -a
    return a * b


def add(*terms):
    live = [t for t in terms if not _const(t, 0.0)]
    if not live:
        return 0.0
    out = live[0]
    for t in live[1:]:
        out = out + t
    return out


def mv(a, v):
    """A v."""
    return [add(*(mul(a[i][j], v[j]) for j in range(3))) for i in range(3)]


def mtv(a, v):
    """A^T v."""
    return [add(*(mul(a[j][i], v[j]) for j in range(3))) for i in range(3)]


def mm(a, b):
    """A B."""
    return [[add(*(mul(a[i][k], b[k][j]) for k in range(3))) for j in range(3)] for i in range(3)]


def vadd(u, v):
    return [add(u[i], v[i]) for i in range(3)]


def vsub(u, v):
    return [add(u[i], mul(-1.0, v[i])) for i in range(3)]


def vscale(s, v):
    return [mul(s, v[i]) for i in range(3)]


def cross(u, v):
    return [add(mul(u[1], v[2]), mul(-1.0, mul(u[2], v[1]))),
            add(mul(u[2], v[0]), mul(-1.0, mul(u[0], v[2]))),
            add(mul(u[0], v[1]), mul(-1.0, mul(u[1], v[0])))]


def dot(u, v):
    return add(*(mul(u[i], v[i]) for i in range(3)))


def axis_rotation(axis: str, c, s):
    """Rotation about a coordinate axis from its cosine and sine."""
    if axis == 'x':
        return [[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]]
    if axis == 'y':
        return [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]
    return [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]


def joint_rotation(ops, axis: str, angle):
    return axis_rotation(axis, ops.cos(angle), ops.sin(angle))


def body_rotation(ops, yaw, roll, pitch):
    """R = Rz(yaw) Ry(pitch) Rx(roll) (yaw-pitch-roll, intrinsic)."""
    return mm(mm(joint_rotation(ops, 'z', yaw), joint_rotation(ops, 'y', pitch)),
              joint_rotation(ops, 'x', roll))


def _snap(a) -> list:
    a = np.where(np.abs(a) < ZERO_SNAP, 0.0, np.asarray(a, float))
    return a.tolist()


# ---- the robot's numbers, from Pinocchio -------------------------------------------------

@dataclass(frozen=True)
class Body:
    """A rigid body moving with a joint: mass and CoM lever in the joint frame."""

    mass: float
    lever: list


@dataclass(frozen=True)
class LegGeometry:
    """One leg: coxa/femur/tibia placements and axes, gimbal centre, foot offset, bodies."""

    name: str
    placements: list      # [(R nested 3x3, p 3)] of coxa (in base), femur, tibia, gimbal_z
    axes: list            # active joint axes ('y', 'z', 'z')
    foot_offset: list     # foot contact frame origin in the magnet (gimbal_x) frame
    bodies: list          # Body of coxa, femur, tibia, gimbal_z, gimbal_y, gimbal_x joints
    gimbal_lower: np.ndarray
    gimbal_upper: np.ndarray


@dataclass(frozen=True)
class MagnetoGeometry:
    """Base body, total mass and the four legs (order LEGS)."""

    base: Body
    mass: float
    legs: list

    @classmethod
    def from_model(cls, model) -> 'MagnetoGeometry':
        """Read a Pinocchio model (free-flyer root) of magneto.urdf; checks its structure."""
        def jid(name):
            if not model.existJointName(name):
                raise ValueError(f'joint {name!r} missing from the Magneto model')
            return model.getJointId(name)

        def axis_of(j):
            short = model.joints[j].shortname()
            if short not in ('JointModelRX', 'JointModelRY', 'JointModelRZ'):
                raise ValueError(f'{model.names[j]} is {short}, expected an axis-aligned revolute')
            return short[-1].lower()

        def body(j):
            return Body(float(model.inertias[j].mass), _snap(model.inertias[j].lever))

        legs = []
        for leg in LEGS:
            ids = [jid(f'{leg}_{part}_joint') for part in
                   ('coxa', 'femur', 'tibia', 'gimbal_z', 'gimbal_y', 'gimbal_x')]
            axes = [axis_of(j) for j in ids]
            if axes[3:] != ['z', 'y', 'x']:
                raise ValueError(f'{leg} gimbal axes are {axes[3:]}, expected z, y, x')
            for j in ids[4:]:
                if not model.jointPlacements[j].isIdentity():
                    raise ValueError(f'{model.names[j]}: the gimbal joints must share one centre')
            foot = model.frames[model.getFrameId(f'{leg}_foot')]
            if foot.parentJoint != ids[5]:
                raise ValueError(f'{leg}_foot must hang off {leg}_gimbal_x_joint')
            offset = _snap(foot.placement.translation)
            if offset[1] != 0.0 or offset[2] != 0.0:
                raise ValueError(f'{leg}_foot must lie on the gimbal x axis')
            placements = [(_snap(model.jointPlacements[j].rotation),
                           _snap(model.jointPlacements[j].translation)) for j in ids[:4]]
            legs.append(LegGeometry(leg, placements, axes[:3], offset, [body(j) for j in ids],
                                    model.lowerPositionLimit[[model.idx_qs[j] for j in ids[3:5]]].copy(),
                                    model.upperPositionLimit[[model.idx_qs[j] for j in ids[3:5]]].copy()))
        mass = float(sum(inertia.mass for inertia in model.inertias))
        return cls(body(1), mass, legs)


# ---- forward kinematics ------------------------------------------------------------------

def leg_forward(ops, leg: LegGeometry, rot_b, pos_b, angles, normal) -> dict:
    """One leg in F: gimbal centre, tibia direction, resolved gimbal, foot, mass moments.

    The passive gimbal is resolved so that the foot frame lies flat on the surface: its z
    (the magnet face normal) equals the surface normal `normal`, and the last gimbal joint
    (about the magnet axis, which does not move the contact point) is 0. Then the foot
    contact point is the gimbal centre - |foot offset| * normal.
    """
    (r_c, p_c), (r_f, p_f), (r_t, p_t), (r_g, p_g) = leg.placements
    rot = mm(rot_b, r_c)
    pos = vadd(pos_b, mv(rot_b, p_c))
    frames = []
    for (r_next, p_next), axis, angle in zip([(r_f, p_f), (r_t, p_t), (r_g, p_g)], leg.axes, angles):
        rot = mm(rot, joint_rotation(ops, axis, angle))
        frames.append((rot, pos))
        pos = vadd(pos, mv(rot, p_next))
        rot = mm(rot, r_next)
    centre, rot_g0 = pos, rot
    # Gimbal: Rz(g1) Ry(g2) e_x = d, the magnet axis in the gimbal frame, must be -normal.
    d = mtv(rot_g0, vscale(-1.0, normal))
    rho = ops.sqrt(add(mul(d[0], d[0]), mul(d[1], d[1])))
    c1, s1, c2, s2 = d[0] / rho, d[1] / rho, rho, -d[2]
    rot_gz = mm(rot_g0, axis_rotation('z', c1, s1))
    rot_gy = mm(rot_gz, axis_rotation('y', c2, s2))
    rot_gx = rot_gy
    foot = vadd(centre, mv(rot_gx, leg.foot_offset))
    moments = []
    for (rot_j, pos_j), body in zip(frames + [(rot_gz, centre), (rot_gy, centre), (rot_gx, centre)],
                                    leg.bodies):
        point = vadd(pos_j, mv(rot_j, body.lever))
        moments.append(vscale(body.mass, point))
    return {'centre': centre, 'foot': foot, 'gimbal_dir': d, 'rot_magnet': rot_gx,
            'points': [frames[0][1], frames[1][1], frames[2][1], centre, foot],
            'gimbal_angles': (ops.atan2(d[1], d[0]), -ops.asin(d[2]), 0.0), 'moments': moments}


def forward(ops, geometry: MagnetoGeometry, pose: list, joints: list, normal=(0.0, 0.0, 1.0),
            corners=()) -> dict:
    """Whole robot in F from the body pose [x, y, yaw, roll, pitch, height] and 12 joints.

    Returns feet (4 x 3), gimbal centres, gimbal directions and angles, the CoM (3), the
    body points `corners` (given in the base frame) in F, and the base rotation.
    """
    x, y, yaw, roll, pitch, height = pose
    rot_b = body_rotation(ops, yaw, roll, pitch)
    pos_b = [x, y, height]
    normal = list(normal)
    legs = [leg_forward(ops, leg, rot_b, pos_b, joints[3 * i:3 * i + 3], normal)
            for i, leg in enumerate(geometry.legs)]
    moments = [vscale(geometry.base.mass, vadd(pos_b, mv(rot_b, geometry.base.lever)))]
    for leg in legs:
        moments += leg['moments']
    total = [add(*(m[i] for m in moments)) for i in range(3)]
    com = vscale(1.0 / geometry.mass, total)
    return {'feet': [leg['foot'] for leg in legs], 'centres': [leg['centre'] for leg in legs],
            'gimbal_dirs': [leg['gimbal_dir'] for leg in legs],
            'gimbal_angles': [leg['gimbal_angles'] for leg in legs],
            'com': com, 'rot_b': rot_b, 'pos_b': pos_b,
            'leg_points': [leg['points'] for leg in legs],
            'corners': [vadd(pos_b, mv(rot_b, list(c))) for c in corners]}


# ---- required adhesion -------------------------------------------------------------------

def contact_forces(ops, feet: list, com: list, gravity: list, mass: float) -> list:
    """Minimum-norm foot forces holding the robot in static equilibrium (4 x 3).

    f = A^T (A A^T)^-1 w with A the 6 x 12 map from foot forces to the total force and the
    moment about the CoM, w = (-m g, 0). In closed form (Lagrange multipliers):
    f_i = F/4 + mu x s_i with F = -m g, s_i = p_i - p_mean and K mu = (c - p_mean) x F,
    K = sum_i (|s_i|^2 I - s_i s_i^T) (the feet's "inertia" about their centroid).
    test/test_magneto.py checks it against the 6 x 6 solve.
    """
    centroid = [add(*(p[i] for p in feet)) * 0.25 for i in range(3)]
    spread = [vsub(p, centroid) for p in feet]
    force = [mul(-mass, g) for g in gravity]
    rhs = cross(vsub(com, centroid), force)
    square = add(*(dot(s, s) for s in spread))
    k = [[add(*(mul(-1.0, mul(s[i], s[j])) for s in spread)) for j in range(3)] for i in range(3)]
    for i in range(3):
        k[i][i] = add(k[i][i], square)
    lam = _solve_sym3(k, rhs)
    return [vadd(vscale(0.25, force), cross(lam, s)) for s in spread]


def _solve_sym3(k, b):
    """K^-1 b for a symmetric 3x3 K by its adjugate."""
    a00, a01, a02, a11, a12, a22 = k[0][0], k[0][1], k[0][2], k[1][1], k[1][2], k[2][2]
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    det = a00 * c00 + a01 * c01 + a02 * c02
    adj = [[c00, c01, c02], [c01, c11, c12], [c02, c12, c22]]
    return [add(*(mul(adj[i][j], b[j]) for j in range(3))) / det for i in range(3)]


def adhesion_per_foot(ops, forces: list, normal, mu: float, smooth: float | None,
                      tangent_eps: float = 0.0) -> list:
    """sigma_i = max(0, ||t_i|| / mu - n_i): the magnet pull foot i needs to stick (N).

    n_i = f_i . normal (> 0 presses into the surface), t_i the tangential part. With
    `smooth` (N) the max(0, .) is a softplus of that width and ||t|| = sqrt(t.t + eps^2).
    """
    out = []
    for f in forces:
        n = dot(f, list(normal))
        t = vsub(f, vscale(n, list(normal)))
        tt = dot(t, t)
        need = ops.sqrt(tt + tangent_eps ** 2) / mu - n
        if smooth is None:
            out.append(ops.fmax(need, 0.0))
        else:
            out.append(ops.fmax(need, 0.0) + smooth * ops.log1p(ops.exp(-ops.fabs(need) / smooth)))
    return out


def worst_foot(ops, sigma: list, smooth: float | None):
    """max_i sigma_i, or its smooth version T log(mean_i exp(sigma_i / T)) (<= the max)."""
    top = sigma[0]
    for s in sigma[1:]:
        top = ops.fmax(top, s)
    if smooth is None:
        return top
    total = add(*(ops.exp((s - top) / smooth) for s in sigma))
    return top + smooth * ops.log(total / len(sigma))
