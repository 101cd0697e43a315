"""The report of `loink robot train`: report.md beside the model, with its PNG figures (loss
curves, task error and regret histograms, the cost over the latent space, the ambiguity
check) and the commands that reproduce it."""

from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from loink_ros.core.runtime.solver import LOInKSolver  # noqa: E402
from loink_ros.tools.ambiguity import AMBIGUOUS_SPAN  # noqa: E402
from loink_ros.tools.robot.check import CheckResult  # noqa: E402

LATENT_TARGETS = 3
LATENT_GRID = 41
LATENT_RANGE = 2.5


def plot_check(result: CheckResult, path: Path) -> Path:
    """Ambiguity: the near-optimal span of every checked target against the threshold."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    span = result.span[result.solved]
    ax.hist(span, bins=30, color='tab:blue')
    ax.axvline(AMBIGUOUS_SPAN, color='tab:red', ls='--', label=f'ambiguous beyond {AMBIGUOUS_SPAN} rad')
    ax.set(xlabel='distance from the best optimum to its farthest near-optimal rival (rad)',
           ylabel='targets', title=f'One clear optimum? {result.ambiguous_fraction:.0%} ambiguous')
    ax.legend()
    return _save(fig, path)


def plot_losses(history: list[dict], path: Path) -> Path:
    epochs = [row['epoch'] for row in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    for key, label in (('train_loss', 'train'), ('val_loss', 'validation')):
        left.plot(epochs, [row[key] for row in history], label=label)
    left.set(xlabel='epoch', ylabel='loss', title='Loss')
    left.legend()
    right.semilogy(epochs, [row['val_task_rmse'] for row in history])
    right.set(xlabel='epoch', ylabel='m', title='Validation task RMSE')
    return _save(fig, path)


def plot_histograms(bench: dict, path: Path) -> Path:
    per = bench['per_target']
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    errors = {label: np.log10(np.maximum(np.asarray(per[key]), 1e-16))
              for key, label in (('error', 'raw'), ('error_refined', 'refined'))}
    _histograms(left, errors)
    left.set(xlabel='log10 task error (m)', ylabel='targets', title='Task error')
    regrets = {label: np.asarray(per[key], float)
               for key, label in (('regret', 'raw'), ('regret_refined', 'refined (successes)'))}
    _histograms(right, {k: v[np.isfinite(v)] for k, v in regrets.items()})
    right.set(xlabel='(J - J_ref) / J_ref', ylabel='targets', title='Regret vs multi-start SLSQP')
    return _save(fig, path)


def _histograms(ax, series: dict[str, np.ndarray]) -> None:
    """Overlaid histograms on shared bins (a tight series stays visible beside a wide one)."""
    edges = np.histogram_bin_edges(np.concatenate(list(series.values())), bins=30)
    for label, values in series.items():
        ax.hist(values, bins=edges, alpha=0.7, label=label)
    ax.legend()


def plot_latent(solver: LOInKSolver, targets: np.ndarray, path: Path) -> Path:
    """The true cost of the network's answer over the first one or two latent coordinates
    (the others 0) for a few targets; z = 0 marked."""
    m = solver.model.latent_dim
    grid = np.linspace(-LATENT_RANGE, LATENT_RANGE, LATENT_GRID if m == 1 else 25)
    fig, axes = plt.subplots(1, len(targets), figsize=(3.6 * len(targets), 3.3), squeeze=False)
    for ax, y in zip(axes[0], targets):
        if m == 1:
            cost = [solver.solve(y, [z]).cost for z in grid]
            ax.plot(grid, cost)
            ax.axvline(0.0, color='tab:red', ls='--')
            ax.set(xlabel='z', ylabel='cost J')
        else:
            cost = np.array([[solver.solve(y, [a, b] + [0.0] * (m - 2)).cost for a in grid]
                             for b in grid])
            image = ax.contourf(grid, grid, cost, levels=20)
            ax.plot(0, 0, 'r+', ms=12)
            ax.set(xlabel='z1', ylabel='z2')
            fig.colorbar(image, ax=ax)
        ax.set_title(f'target {np.round(y, 3).tolist()}', fontsize=8)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _row(name: str, stats: dict, unit: str = '', scale: float = 1.0) -> str:
    return (f"| {name} | {scale * stats['mean']:.3g}{unit} | {scale * stats['median']:.3g}{unit} | "
            f"{scale * stats['min']:.3g}{unit} | {scale * stats['max']:.3g}{unit} |")


def _pose_lines(pose: dict) -> list[str]:
    """The full-pose bench's paragraph (bench.py's pose_figures)."""
    return [f"Full poses ({pose['poses']} poses of configurations in the limits, MoveIt's "
            f"{1e3 * pose['timeout_s']:g} ms timeout; the node's ~/solve_pose and the MoveIt "
            f"plugin answer the same): {pose['success_fraction']:.1%} within 1e-5 m / 1e-4 rad "
            f"inside the limits, regret median {pose['regret']['median']:.2%}, p95 "
            f"{pose['regret_p95']:.2%} against {pose['reference']}; "
            f"{pose['solve_ms']['median']:.2f} ms median, {pose['solve_ms']['p99']:.2f} ms p99.", '']


def write_report(out: Path, name: str, commands: list[str], check: dict, bench: dict,
                 training: dict, figures: dict[str, Path], notes: list[str]) -> Path:
    """report.md: the figures and the commands that made them."""
    ratio = bench['reference_over_refined']
    lines = [
        f'# {name}: LOInK model report', '',
        'Made by `loink robot train`; every figure below is measured by these commands:', '',
        '```bash', *commands, '```', '',
        '## One clear optimum (METHOD.md s.6)', '',
        f"{check['ambiguous_fraction']:.1%} of {check['targets']} targets are ambiguous "
        f"(allowed {check['max_ambiguous']:.0%}): {'passed' if check['passed'] else 'FAILED'}.", '',
        f"![ambiguity]({figures['check'].name})", '',
        '## Training', '',
        f"{training['epochs']} epochs, {training['samples']} samples, {training['minutes']:.1f} min; "
        f"final validation task RMSE {training['val_task_rmse']:.3g} m.", '',
        f"![losses]({figures['losses'].name})", '',
        f"## Bench ({bench['targets']} held-out targets)", '',
        f"Reference: {bench['reference']} (valid on {bench['reference_ok_fraction']:.0%}). "
        f"Timing: {bench['timing']}. Refined answers on the target and inside the limits: "
        f"{bench['success_fraction']:.1%}.", '',
        '| | mean | median | min | max |', '|---|---|---|---|---|',
        _row('task error, raw', bench['task_error_m'], ' mm', 1e3),
        _row('task error, refined', bench['task_error_refined_m'], ' mm', 1e3),
        _row('regret, raw', bench['regret']), _row('regret, refined', bench['regret_refined']),
        _row('LOInK solve', bench['solve_ms'], ' ms'),
        _row('LOInK solve, refined', bench['refined_solve_ms'], ' ms'),
        _row('reference', bench['reference_ms'], ' ms'),
        _row('reference / LOInK refined', ratio, 'x'), '',
        f"Ratio of mean times: {ratio['of_means']:.3g}x.", '',
        *_pose_lines(bench['pose']),
        f"![errors and regret]({figures['histograms'].name})", '',
        *[f'**Advice.** {note}\n' for note in notes],
        '## Cost over the latent space', '',
        'The true cost of the network\'s answer for latents around z = 0 (marked): the '
        'optimum should sit at z = 0.', '',
        f"![latent]({figures['latent'].name})", '',
    ]
    path = out / 'report.md'
    path.write_text('\n'.join(lines) + '\n')
    return path
