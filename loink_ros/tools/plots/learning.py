"""`loink plot learning LOG.csv [LOG.csv ...] --out PNG`: training runs' learning curves
(validation task RMSE and cost loss per epoch, against the training time spent), from the
log.csv that `loink train` writes; a run is labelled by its folder's name."""

import csv
from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_log(path: Path) -> dict[str, np.ndarray]:
    """A log.csv's columns as float arrays."""
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f'{path} has no epochs')
    return {key: np.array([float(row[key]) for row in rows]) for key in rows[0]}


def learning_curves(logs: list[Path], out: Path) -> dict:
    """Plot to `out`; per run: epochs, hours spent and the last validation figures."""
    fig, (task_ax, cost_ax) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    figures = {}
    for path in logs:
        log, name = read_log(path), path.parent.name
        hours = np.cumsum(log['seconds']) / 3600.0
        task_ax.semilogy(hours, log['val_task_rmse'], marker='.', label=name)
        cost_ax.semilogy(hours, log['val_cost'], marker='.', label=name)
        figures[name] = {'epochs': int(log['epoch'][-1]), 'hours': float(hours[-1]),
                         'val_task_rmse': float(log['val_task_rmse'][-1]),
                         'val_cost': float(log['val_cost'][-1])}
    task_ax.set(xlabel='training time (h, one thread)', ylabel='validation task RMSE (task units)',
                title='task fit')
    cost_ax.set(xlabel='training time (h, one thread)', ylabel='validation cost loss (normalised)',
                title='cost fit')
    for ax in (task_ax, cost_ax):
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=8)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return figures
