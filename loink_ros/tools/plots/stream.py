"""`loink plot stream MODEL`: the smoothing mu_s on a pose stream (the paper's Fig. 4 for full
poses): the joint velocities of PoseTracker's answers along one smooth bench trajectory, for
two values of mu_s, with the cost along the way."""

from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from loink_ros.core.problems.arms.velocity_limits import velocity_limits  # noqa: E402
from loink_ros.core.runtime.pose_refine import PoseTarget  # noqa: E402
from loink_ros.core.runtime.pose_solver import PoseSolver  # noqa: E402
from loink_ros.core.runtime.pose_tracker import PoseTracker  # noqa: E402
from loink_ros.core.runtime.solver import LOInKSolver  # noqa: E402
from loink_ros.tools.bench.stream import RATE_HZ, SEED  # noqa: E402
from loink_ros.tools.bench.stream_paths import paths  # noqa: E402

SMOOTHING = (0.0, 1e3)
DURATION_S = 4.0


def stream_smoothing(solver: LOInKSolver, out: Path) -> dict:
    """Plot to `out`; the figures drawn (per mu: largest joint speed, mean cost, on-target
    share) as a dict."""
    problem = solver.problem
    path = paths(problem, 'smooth', 1, DURATION_S, RATE_HZ, SEED)[0]
    limits, dt = velocity_limits(problem), 1.0 / RATE_HZ
    pose_solver = PoseSolver(solver)
    fig, axes = plt.subplots(len(SMOOTHING) + 1, 1, figsize=(9, 8), sharex=True,
                             constrained_layout=True)
    figures = {}
    for ax, mu in zip(axes, SMOOTHING):
        stream = PoseTracker(pose_solver, limits, smoothing=mu)
        stream.reset(path.q[0])
        steps = [stream.step(PoseTarget(p, r), dt) for p, r in zip(path.positions, path.rotations)]
        q = np.array([s.q for s in steps])
        speed = np.diff(np.vstack([path.q[:1], q]), axis=0) / dt
        ax.plot(path.times, speed, lw=0.8)
        ax.set(ylabel='joint velocity (rad/s)', title=f'mu_s = {mu:g}')
        cost = problem.cost(q)
        axes[-1].plot(path.times, cost, label=f'mu_s = {mu:g}')
        figures[f'{mu:g}'] = {'largest_joint_speed_over_limit': float((np.abs(speed) / limits).max()),
                              'mean_cost': float(cost.mean()),
                              'on_target_share': float(np.mean([s.on_target for s in steps]))}
    axes[-1].plot(path.times, problem.cost(path.q), 'k--', lw=0.8, label='the path itself')
    axes[-1].set(xlabel='time (s)', ylabel=f'cost ({problem.cost_name})')
    axes[-1].legend(fontsize=8)
    fig.suptitle(f'{solver.model.name}: the pose stream along one trajectory at '
                 f'{RATE_HZ:g} Hz, for two smoothings')
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return figures
