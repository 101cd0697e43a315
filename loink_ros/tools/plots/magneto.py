"""`loink plot magneto`: the paper's Fig. 6, an optimal posture beside a non-optimal one.

Both postures stand on the same footholds at the same commanded height: the left one is
the learned optimum G^-1([y; 0]), the right one a latent sample G^-1([y; z]) (the feasible
one with the largest J_f of a few draws); both have their legs re-solved in closed form on
the footholds. Drawn in a world frame with gravity straight down (the surface inclined by
the model's angle), with the CoM, the gravity direction and each foot's required pull.
"""

from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from loink_ros.core.problems.magneto.parameters import BODY_CORNERS  # noqa: E402

SAMPLES = 24
SPREAD = 1.0
HEIGHT = 0.07


def _solve(solver, task, z):
    model, problem = solver.model, solver.problem
    w = np.hstack([model.normalization.y_to_net(task), z])[None]
    q = np.clip(model.normalization.x_from_net(model.inverse(w).x), problem.lower, problem.upper)
    return problem.refine_legs(q, task)[0]


def _draw(ax, problem, q, title, to_world):
    out = problem.forward(q[None])
    terms = problem.cost_terms(q[None])
    legs = out['leg_points'][0] @ to_world.T
    top = [(x, y, 0.12) for x, y, _ in BODY_CORNERS]
    body = np.array([*out['corners'][0], *_corners(problem, q, top)]) @ to_world.T
    # surface patch
    s = np.array([[x, y, 0.0] for x, y in ((-0.4, -0.35), (0.4, -0.35), (0.4, 0.35), (-0.4, 0.35))]) @ to_world.T
    ax.plot_trisurf(s[:, 0], s[:, 1], s[:, 2], color='0.85', alpha=0.35, linewidth=0)
    for a, b in [(0, 1), (1, 3), (3, 2), (2, 0)]:
        for off in (0, 4):
            ax.plot(*body[[a + off, b + off]].T, color='tab:gray', lw=1.5)
        ax.plot(*body[[a, a + 4]].T, color='tab:gray', lw=1.0)
    for k, leg in enumerate(legs):
        ax.plot(*leg[:4].T, '-o', color='tab:blue', lw=2.5, ms=3)
        ax.plot(*leg[3:].T, '-', color='tab:orange', lw=3)
        sigma = terms['sigma'][0, k]
        ax.text(*(leg[4] + 0.03 * to_world[:, 2]), f'{sigma:.1f} N', fontsize=8,
                color='tab:red' if sigma == terms['J_f_hard'][0] else 'k')
    com = out['com'][0] @ to_world.T
    ax.scatter(*com, color='k', s=30)
    ax.quiver(*com, 0, 0, -0.12, color='tab:red', arrow_length_ratio=0.2)
    ax.text(*(com + [0.01, 0.0, -0.13]), 'g', color='tab:red')
    ax.set_title(f"{title}\nJ_f = {terms['J_f_hard'][0]:.2f} N (J = {terms['J'][0]:.2f} N)", fontsize=10)
    ax.set(xlabel='x (m)', ylabel='y (m)', zlabel='z (m)')
    ax.set_box_aspect((1, 1, 1))
    lim = 0.35
    centre = legs[:, 4].mean(0)
    ax.set(xlim=(centre[0] - lim, centre[0] + lim), ylim=(centre[1] - lim, centre[1] + lim),
           zlim=(centre[2] - lim, centre[2] + lim))
    ax.view_init(elev=15, azim=-125)


def _corners(problem, q, points):
    """Body points given in the base frame, in F."""
    rot = problem.body_rotation(q)
    return [q[[0, 1, 5]] + rot @ np.array(p) for p in points]


def magneto_postures(solver, out: Path, task: np.ndarray | None = None, seed: int = 0) -> None:
    """Optimal vs a non-optimal (latent-sampled) posture for the same footholds (PNG)."""
    problem = solver.problem
    if task is None:
        task = np.concatenate([problem.nominal_feet.ravel(), [HEIGHT]])
    best = _solve(solver, task, np.zeros(solver.model.latent_dim))
    rng = np.random.default_rng(seed)
    other, worst = None, -np.inf
    for z in rng.normal(0.0, np.sqrt(SPREAD), (SAMPLES, solver.model.latent_dim)):
        q = _solve(solver, task, z)
        if problem.feasibility(q[None])['all'][0]:
            j_f = problem.cost_terms(q[None])['J_f_hard'][0]
            if j_f > worst:
                other, worst = q, j_f
    b = problem.inclination
    to_world = np.array([[np.cos(b), 0.0, -np.sin(b)], [0.0, 1.0, 0.0], [np.sin(b), 0.0, np.cos(b)]])
    fig = plt.figure(figsize=(12, 5.6), constrained_layout=True)
    _draw(fig.add_subplot(1, 2, 1, projection='3d'), problem, best, 'LOInK optimum (z = 0)', to_world)
    if other is not None:
        _draw(fig.add_subplot(1, 2, 2, projection='3d'), problem, other,
              f'a latent sample (z ~ N(0, {SPREAD} I), feasible, highest J_f of {SAMPLES})', to_world)
    fig.suptitle(f'Magneto on a {np.degrees(b):.0f} deg incline, same footholds and body height '
                 f'{task[12]:.3f} m: required magnet pull per foot (worst in red)')
    fig.savefig(out, dpi=120)
    plt.close(fig)
