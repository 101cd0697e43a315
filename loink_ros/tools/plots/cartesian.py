"""`loink plot cartesian MODEL`: one path of the pose stream bench, followed pose by pose by the
pose stream (greedy: its posture chosen without the path ahead) and planned at once
(core/runtime/cartesian_path.py): the joints of each against the path's own, and the pose
error of each over time. The path is the first smooth bench path (100 Hz) on which the stream
lags."""

from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from loink_ros.core.problems.arms.velocity_limits import velocity_limits  # noqa: E402
from loink_ros.core.runtime.cartesian_path import CartesianPlanner, PathRequest  # noqa: E402
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error  # noqa: E402
from loink_ros.core.runtime.pose_solver import PoseSolver  # noqa: E402
from loink_ros.core.runtime.pose_tracker import PoseTracker  # noqa: E402
from loink_ros.core.runtime.solver import LOInKSolver  # noqa: E402
from loink_ros.tools.bench.cartesian import DURATION_S, RATE_HZ, SEED  # noqa: E402
from loink_ros.tools.bench.stream_paths import paths  # noqa: E402

CANDIDATES = 20


def cartesian_plan(solver: LOInKSolver, out: Path) -> dict:
    """Plot to `out`; the figures drawn (on-target share, mean cost of each) as a dict."""
    problem = solver.problem
    pose_solver = PoseSolver(solver)
    limits = velocity_limits(problem)
    planner = CartesianPlanner(pose_solver, limits)
    for path in paths(problem, 'smooth', CANDIDATES, DURATION_S, RATE_HZ, SEED):
        targets = [PoseTarget(p, r) for p, r in zip(path.positions, path.rotations)]
        stream = PoseTracker(pose_solver, limits)
        stream.reset(path.q[0])
        streamed = np.array([stream.step(t, 1.0 / RATE_HZ).q for t in targets])
        if _errors(problem, streamed, targets).max() > 1e-5:
            break
    plan = planner.plan(PathRequest(targets, path.q[0], path.times)).q
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True, constrained_layout=True)
    colours = plt.cm.tab10(np.arange(problem.dim))
    figures = {'path': path.name}
    for ax, (name, q) in zip(axes, (('pose stream (one pose at a time)', streamed),
                                    ('planned at once', plan))):
        for j in range(problem.dim):
            ax.plot(path.times, q[:, j], color=colours[j], lw=1.0, label=problem.joint_names[j])
            ax.plot(path.times, path.q[:, j], color=colours[j], lw=0.6, ls='--')
        ax.set(ylabel='joint (rad)', title=f'{name}; dashed: the path\'s own joints')
        errors = _errors(problem, q, targets)
        axes[-1].semilogy(path.times, np.maximum(errors, 1e-16), lw=1.0, label=name)
        figures[name] = {'on_target_share': float(np.mean(errors <= 1e-5)),
                         'mean_cost': float(problem.cost(q).mean())}
    axes[0].legend(fontsize=7, ncol=problem.dim, loc='upper center')
    axes[-1].axhline(1e-5, color='k', lw=0.6, ls=':')
    axes[-1].set(xlabel='time (s)', ylabel='position error (m)')
    axes[-1].legend(fontsize=8)
    fig.suptitle(f'{solver.model.name}: {path.name} of the stream bench, {RATE_HZ:g} Hz, from '
                 'the same start')
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return figures


def _errors(problem, q: np.ndarray, targets: list[PoseTarget]) -> np.ndarray:
    return np.array([np.linalg.norm(pose_error(problem, qk, t)[:3]) for qk, t in zip(q, targets)])
