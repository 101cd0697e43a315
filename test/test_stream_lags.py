"""`loink bench stream-lags` (tools/bench/stream_lags.py): the walk along the self-motion
stays on the pose, and the study's records add up to the stream's own off-target steps."""
import json
import subprocess
import sys

import numpy as np
import pytest

from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.core.runtime.pose_solver import PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench.stream_lags import LagStudy, self_motion_offset
from loink_ros.tools.bench.stream_paths import paths


@pytest.fixture(scope='module')
def panda():
    model = load_model('panda_full')
    problem = problem_for_model(model)
    return problem, PoseSolver(LOInKSolver(model, problem))


@pytest.mark.parametrize('arc', [-0.3, 0.1, 0.5])
def test_a_self_motion_offset_keeps_the_pose_and_moves_the_posture(panda, arc):
    problem, pose_solver = panda
    q = problem.example_configuration()
    target = PoseTarget(*problem.tip_pose(q))
    moved = self_motion_offset(pose_solver, q, target, arc)
    assert moved is not None
    assert np.all(moved >= problem.lower) and np.all(moved <= problem.upper)
    assert np.linalg.norm(pose_error(problem, moved, target)) < 1e-9
    # The walk's arc is at least the straight distance between its ends.
    assert 0.5 * abs(arc) < np.linalg.norm(moved - q) <= abs(arc) + 1e-6


def test_the_lag_records_add_up_to_the_stream_s_off_target_steps(panda):
    problem, pose_solver = panda
    path = paths(problem, 'smooth', 1, duration_s=2.0, seed=20261203)[0]
    study = LagStudy(pose_solver, velocity_limits(problem))
    steps = study.follow(path, 0, len(path.times), path.q[0])
    lags = study.lags(path)
    assert sum(lag['duration_ms'] for lag in lags) == sum(not s.on_target for s in steps)
    for lag in lags:
        k = round(lag['start_s'] * 1000)
        assert not steps[k - 1].on_target and (k == 1 or steps[k - 2].on_target)
        assert lag['held_by'] == steps[k - 1].lag


def test_loink_bench_stream_lags_reports_restarts_and_postures():
    out = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'bench', 'stream-lags',
                          '--tasks', '1', '--seconds', '2', '--json', '-'],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout)
    summary = report['summary']
    assert summary['steps'] == 2000 and summary['restarts'] == 2   # one per second
    assert summary['lags'] == len(report['lags'])
    assert summary['postures_studied'] == min(summary['lags'], 3) == len(report['postures'])
    for posture in report['postures']:
        assert all(ms is None or 0 <= ms <= posture['window_ms']
                   for ms in posture['on_target_ms'].values())
