"""`loink plot hsa BENCH.json --out DIR`: the paper's Figs. 8-10 from one `loink bench hsa` run.

- Fig. 8: histograms of the end-effector position error, LOInK raw against IKFlow (z = 0
  and best of K), log-spaced bins;
- Fig. 9: the actuation effort over the optimisation reference's, per target;
- Fig. 10: the mean true cost of samples z ~ N(0, c I) against c, both networks.
"""

import json
from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

METHODS = {'loink_raw': 'LOInK', 'loink_refined': 'LOInK refined',
           'ikflow_z0': 'IKFlow (z = 0)', 'ikflow_best_of_k': 'IKFlow best of K'}


def plot_hsa(bench_json: Path, out_dir: Path) -> list[Path]:
    report = json.loads(Path(bench_json).read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / 'hsa_fig8_ee_error.png', out_dir / 'hsa_fig9_effort_ratio.png',
             out_dir / 'hsa_fig10_spread.png']
    _ee_error(report, paths[0])
    _effort_ratio(report, paths[1])
    _spread(report, paths[2])
    return paths


def _ee_error(report: dict, path: Path) -> None:
    per = report['per_target']
    names = ('loink_raw', 'ikflow_z0', 'ikflow_best_of_k')
    errors = [np.maximum(per[n]['ee_error_mm'], 1e-6) for n in names]
    bins = np.logspace(np.log10(min(e.min() for e in errors)),
                       np.log10(max(e.max() for e in errors)), 50)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    for name, error in zip(names, errors):
        ax.hist(error, bins=bins, histtype='step', linewidth=1.6,
                label=f'{METHODS[name]}: mean {error.mean():.2f} mm')
    ax.set(xscale='log', xlabel='end-effector position error (mm)', ylabel='targets',
           title=f'Fig. 8: EE error on {report["targets"]} held-out targets')
    ax.legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _effort_ratio(report: dict, path: Path) -> None:
    per = report['per_target']
    reference = np.asarray(per['reference_cost'])
    ratios = {name: np.asarray(per[name]['cost']) / reference for name in METHODS}
    every = np.concatenate(list(ratios.values()))
    bins = np.linspace(every.min(), every.max(), 80)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    for name, ratio in ratios.items():
        ax.hist(ratio, bins=bins, histtype='step', linewidth=1.6,
                label=f'{METHODS[name]}: mean {ratio.mean():.3f}')
    ax.axvline(1.0, color='k', linewidth=0.8)
    ax.set(yscale='log', xlabel='actuation effort / optimisation reference', ylabel='targets',
           title='Fig. 9: effort ratio to the reference (IPOPT, multi-start)')
    ax.legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _spread(report: dict, path: Path) -> None:
    spread = report['spread']
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    ax.plot(spread['c'], spread['loink_cost'], 'o-', label='LOInK')
    ax.plot(spread['c'], spread['ikflow_cost'], 's--', label='IKFlow')
    ax.set_xscale('symlog', linthresh=min(c for c in spread['c'] if c > 0))
    ax.set_xticks(spread['c'], [f'{c:g}' for c in spread['c']])
    ax.set(xlabel='latent variance c  (z ~ N(0, c I))',
           ylabel='mean actuation effort of samples',
           title=f'Fig. 10: {spread["samples"]} samples on each of {spread["targets"]} targets')
    ax.legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)
