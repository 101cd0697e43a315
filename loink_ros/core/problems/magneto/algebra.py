"""3-D linear algebra on lists of backend scalars (problems/backends.py): a 3-vector is a list of
3 scalars, a 3x3 matrix a list of 3 rows. Exact float zeros and ones are skipped, so CasADi
graphs stay small and numpy does no work on them."""

from __future__ import annotations


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


def mat_vec(a: list, v: list) -> list:
    """A v."""
    return [add(*(mul(a[i][j], v[j]) for j in range(3))) for i in range(3)]


def mat_t_vec(a: list, v: list) -> list:
    """A^T v."""
    return [add(*(mul(a[j][i], v[j]) for j in range(3))) for i in range(3)]


def mat_mul(a: list, b: list) -> list:
    """A B."""
    return [[add(*(mul(a[i][k], b[k][j]) for k in range(3))) for j in range(3)] for i in range(3)]


def vadd(u: list, v: list) -> list:
    return [add(u[i], v[i]) for i in range(3)]


def vsub(u: list, v: list) -> list:
    return [add(u[i], mul(-1.0, v[i])) for i in range(3)]


def vscale(s, v: list) -> list:
    return [mul(s, v[i]) for i in range(3)]


def cross(u: list, v: list) -> list:
    return [add(mul(u[1], v[2]), mul(-1.0, mul(u[2], v[1]))),
            add(mul(u[2], v[0]), mul(-1.0, mul(u[0], v[2]))),
            add(mul(u[0], v[1]), mul(-1.0, mul(u[1], v[0])))]


def dot(u: list, v: list):
    return add(*(mul(u[i], v[i]) for i in range(3)))


def solve_sym3(k: list, b: list) -> list:
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


def axis_rotation(axis: str, c, s) -> list:
    """Rotation about a coordinate axis from its cosine and sine."""
    if axis == 'x':
        return [[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]]
    if axis == 'y':
        return [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]
    return [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]


def joint_rotation(ops, axis: str, angle) -> list:
    return axis_rotation(axis, ops.cos(angle), ops.sin(angle))


def body_rotation(ops, yaw, roll, pitch) -> list:
    """R = Rz(yaw) Ry(pitch) Rx(roll) (yaw-pitch-roll, intrinsic)."""
    return mat_mul(mat_mul(joint_rotation(ops, 'z', yaw), joint_rotation(ops, 'y', pitch)),
                   joint_rotation(ops, 'x', roll))
