"""Required magnet adhesion of a stance: minimum-norm static contact forces, the pull each
foot needs to stick, and the worst foot; on backend scalars (problems/backends.py)."""

from __future__ import annotations

from loink_ros.core.problems.magneto.algebra import add, cross, dot, mul, solve_sym3, vadd, vscale, vsub


def contact_forces(feet: list, com: list, gravity: list, mass: float) -> list:
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
    lam = solve_sym3(k, rhs)
    return [vadd(vscale(0.25, force), cross(lam, s)) for s in spread]


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
