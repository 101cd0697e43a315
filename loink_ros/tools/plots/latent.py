"""`loink plot latent|spread`: the learned latent space (paper Fig. 3) and cost against spread
(Fig. 10)."""

from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from loink_ros.core.runtime.solver import LOInKSolver  # noqa: E402

LATENT_RADIUS = 2.5
GRID = 121
SPREADS = np.linspace(0.0, 2.0, 11)


def latent_space(solver: LOInKSolver, out: Path) -> None:
    """True cost over the latent plane of three tasks, with the learned optimum z = 0."""
    model, problem = solver.model, solver.problem
    if model.latent_dim != 2:
        raise ValueError('the latent plot needs a 2-D latent space')
    tasks = np.linspace(model.task_lower, model.task_upper, 5)[1:4]
    axis = np.linspace(-LATENT_RADIUS, LATENT_RADIUS, GRID)
    z = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), constrained_layout=True)
    for ax, y in zip(axes, tasks):
        w = np.hstack([np.repeat(model.normalization.y_to_net(y)[None], len(z), 0), z])
        q = model.normalization.x_from_net(model.inverse(w).x)
        inside = np.all((q >= problem.lower) & (q <= problem.upper), axis=1)
        cost = np.where(inside, problem.cost(np.clip(q, problem.lower, problem.upper)), np.nan)
        filled = ax.contourf(axis, axis, cost.reshape(GRID, GRID), levels=20, cmap='viridis')
        ax.contour(axis, axis, 0.5 * (z ** 2).sum(1).reshape(GRID, GRID), levels=6,
                   colors='white', linestyles='dashed', linewidths=0.7)
        best = np.nanargmin(cost)
        ax.plot(*z[best], 'r*', ms=12, label='lowest true cost')
        ax.plot(0, 0, 'wo', mfc='none', ms=10, label='z = 0 (learned optimum)')
        ax.set(title=f'{model.problem["task_names"][0]} = {y[0]:.3f} m', xlabel='z1',
               ylabel='z2', aspect='equal')
        fig.colorbar(filled, ax=ax, label=f'true cost ({model.problem["cost_name"]})')
    axes[0].legend(loc='lower left', fontsize=8)
    fig.suptitle('Latent space of the planar arm: true cost (colour), learned '
                 '0.5||z||^2 (dashed); blank = outside joint limits')
    fig.savefig(out, dpi=120)
    plt.close(fig)


def cost_against_spread(solver: LOInKSolver, out: Path, n_tasks: int = 30,
                        count: int = 64) -> None:
    """Mean true cost of sampled (refined) solutions against the latent variance c."""
    model = solver.model
    rng = np.random.default_rng(0)
    tasks = rng.uniform(model.task_lower, model.task_upper, size=(n_tasks, model.task_dim))
    means, predicted = [], []
    for c in SPREADS:
        batch = [solver.sample(y, count, c, refine_answer=True, random_seed=i)
                 for i, y in enumerate(tasks)]
        means.append([np.mean([s.cost for s in b]) for b in batch])
        predicted.append([np.mean([s.predicted_cost for s in b]) for b in batch])
    means, predicted = np.array(means), np.array(predicted)
    fig, ax = plt.subplots(figsize=(6, 4.2), constrained_layout=True)
    ax.plot(SPREADS, means.mean(1), 'o-', label='true cost (refined samples)')
    ax.fill_between(SPREADS, np.percentile(means, 10, 1), np.percentile(means, 90, 1),
                    alpha=0.25, label='10-90 % over tasks')
    ax.plot(SPREADS, predicted.mean(1), 's--', label='predicted cost')
    ax.set(xlabel='latent variance c  (z ~ N(0, c I))', ylabel='mean cost of samples',
           title=f'{model.name}: {count} samples per task, {n_tasks} tasks')
    ax.legend()
    fig.savefig(out, dpi=120)
    plt.close(fig)

