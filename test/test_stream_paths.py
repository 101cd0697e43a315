"""The pose-streaming bench's paths (tools/bench/stream_paths.py), the URDF velocity limits and the
stream baselines (baselines/stream_baselines.py), on short paths."""
import json
import subprocess
import sys

import numpy as np
import pytest

from loink_ros.baselines.stream_baselines import TrackingPink, TrackingTracIk
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.posture_arm import PostureArmProblem
from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget, pose_error
from loink_ros.tools.bench.stream_paths import OUTSIDE_REACH, RAMP_SHARE, SINGULAR_SIGMA, paths

ADAPTER_TIMEOUT_S = 0.05   # TRAC-IK in the adapter tests (below)
RATE_HZ = 1000.0
DT = 1.0 / RATE_HZ


@pytest.fixture(scope='module', params=['panda_full', 'xarm7_full'])
def arm(request) -> KinematicProblem:
    return problem_for_model(load_model(request.param))


@pytest.fixture(scope='module')
def panda() -> KinematicProblem:
    return problem_for_model(load_model('panda_full'))


@pytest.fixture(scope='module')
def panda_path(panda):
    """The baselines' path: 0.5 s of a smooth Panda path."""
    return paths(panda, 'smooth', 1, duration_s=0.5, seed=3)[0]


def test_velocity_limits_are_the_urdf_s(panda):
    assert np.array_equal(velocity_limits(panda), [2.175] * 4 + [2.61] * 3)


def test_a_joint_without_a_velocity_limit_is_named(tmp_path):
    urdf = tmp_path / 'two.urdf'
    joint = ('<joint name="{0}" type="revolute"><parent link="{1}"/><child link="{2}"/>'
             '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="{3}"/></joint>')
    urdf.write_text('<robot name="two"><link name="a"/><link name="b"/><link name="c"/>'
                    + joint.format('j1', 'a', 'b', 1.5) + joint.format('j2', 'b', 'c', 0)
                    + '</robot>')
    problem = PostureArmProblem(urdf, 'c', 'xyz', 'two', 'posture', base_frame='a')
    with pytest.raises(ValueError, match="'j2'"):
        velocity_limits(problem)


def test_smooth_paths_are_free_within_the_joint_and_velocity_limits_and_match_fk(arm):
    limits = velocity_limits(arm)
    for path in paths(arm, 'smooth', 2, duration_s=1.0, seed=5):
        assert path.times.shape == (1001,) and path.q.shape == (1001, arm.dim)
        assert np.allclose(np.diff(path.times), DT)
        assert np.all((path.q >= arm.lower) & (path.q <= arm.upper))
        assert np.all(np.abs(np.diff(path.q, axis=0)) / DT <= limits)
        assert not any(arm.self_collisions(q) for q in path.q)
        assert path.reachable.all()
        for k in range(0, len(path.q), 100):
            position, rotation = arm.tip_pose(path.q[k])
            assert np.allclose(path.positions[k], position, atol=1e-12)
            assert np.allclose(path.rotations[k], rotation, atol=1e-12)


def test_paths_are_deterministic_for_a_seed(panda):
    first, again = (paths(panda, 'smooth', 1, duration_s=0.3, seed=7)[0] for _ in range(2))
    other = paths(panda, 'smooth', 1, duration_s=0.3, seed=8)[0]
    assert np.array_equal(first.q, again.q) and np.array_equal(first.positions, again.positions)
    assert not np.allclose(first.q, other.q)


def test_singular_paths_pass_near_a_singularity(arm):
    for path in paths(arm, 'singular', 2, duration_s=1.0, seed=2):
        assert path.min_singular_value <= SINGULAR_SIGMA
        assert not any(arm.self_collisions(q) for q in path.q)
        assert np.all((path.q >= arm.lower) & (path.q <= arm.upper))


def test_unreachable_paths_leave_the_reach_over_their_masked_stretch(panda):
    path = paths(panda, 'unreachable', 1, duration_s=2.0, seed=1)[0]
    masked = np.flatnonzero(~path.reachable)
    assert len(masked) > 0 and np.all(np.diff(masked) == 1)   # one stretch
    distance = np.linalg.norm(path.positions, axis=1)
    ramp = int(RAMP_SHARE * len(masked))
    assert np.all(distance[masked[ramp:-ramp]] > panda.tip_reach)
    assert np.isclose(distance.max(), OUTSIDE_REACH * panda.tip_reach)
    assert np.all(distance[path.reachable] <= panda.tip_reach)
    fk = np.array([panda.tip_pose(q)[0] for q in path.q[path.reachable]])
    assert np.allclose(path.positions[path.reachable], fk, atol=1e-12)


def track(solver, path) -> np.ndarray:
    """The solver's answers along the path (N, n), from its first configuration."""
    solver.reset(path.q[0])
    steps = [solver.step(p, r, DT) for p, r in zip(path.positions[1:], path.rotations[1:])]
    return np.vstack([path.q[:1], steps])


def position_errors(problem, path, answers) -> np.ndarray:
    return np.array([np.linalg.norm(pose_error(problem, q, PoseTarget(p, r))[:3])
                     for q, p, r in zip(answers, path.positions, path.rotations)])


@pytest.mark.parametrize('mode', ['Distance', 'Speed'])
def test_trac_ik_tracks_a_smooth_path_within_the_limits(panda, panda_path, mode):
    # 50 ms, not the bench's 1 ms: this checks the adapter, and on a loaded machine even
    # TRAC-IK's own 5 ms runs out now and then (the bench measures the time). Distance
    # searches for all of it at every step: the path's first 0.1 s.
    path = panda_path if mode == 'Speed' else paths(panda, 'smooth', 1, duration_s=0.1, seed=3)[0]
    answers = track(TrackingTracIk(panda, mode, timeout_s=ADAPTER_TIMEOUT_S), path)
    assert np.all((answers >= panda.lower) & (answers <= panda.upper))
    assert np.mean(position_errors(panda, path, answers) <= 1e-5) >= 0.9


def test_a_velocity_share_sets_the_fastest_joint_s_speed(panda):
    """--velocity-share: the fastest joint reaches that share of its limit (to the sample
    grid's rounding), the default paths' 0.9 moved down; shares outside (0, 1] refused."""
    limits = velocity_limits(panda)
    for share in (0.5, 0.9):
        path = paths(panda, 'smooth', 1, duration_s=1.0, seed=5, velocity_share=share)[0]
        fastest = np.max(np.abs(np.diff(path.q, axis=0)) / DT / limits)
        assert share * 0.9 <= fastest <= share
    for share in (0.0, 1.5):
        with pytest.raises(ValueError, match='velocity share'):
            paths(panda, 'smooth', 1, duration_s=0.1, velocity_share=share)


def test_pink_steps_within_the_joint_and_velocity_limits(panda, panda_path):
    answers = track(TrackingPink(panda), panda_path)
    assert np.all((answers >= panda.lower) & (answers <= panda.upper))
    assert np.all(np.abs(np.diff(answers, axis=0)) <= velocity_limits(panda) * DT * (1 + 1e-6))
    assert np.median(position_errors(panda, panda_path, answers)) < 1e-4


def test_the_stream_bench_judges_every_method_on_the_same_paths():
    """`loink bench stream` on one short path of each kind: every method judged; LOInK's
    steps within the velocity limits (no flip, no violation), inside the joint limits."""
    from loink_ros.tools.bench import stream as bench_stream
    report = bench_stream.run('panda', smooth=1, duration_s=0.3)
    assert report['paths'] == {'smooth': 1, 'singular': 1, 'unreachable': 1}
    methods = report['methods']
    assert set(methods) == {'loink', 'trac_ik_distance', 'trac_ik_speed', 'pink'}
    for figures in methods.values():
        assert set(figures) == {'all', 'smooth', 'singular', 'unreachable'}
        assert figures['all']['reachable_steps'] == sum(
            figures[kind]['reachable_steps'] for kind in ('smooth', 'singular', 'unreachable'))
    loink = methods['loink']['all']
    assert loink['branch_flips'] == loink['velocity_violations'] == loink['steps_outside_limits'] == 0
    assert methods['loink']['smooth']['on_target_share'] >= 0.6


def test_loink_bench_stream_alone_at_a_velocity_share():
    """The CLI's --no-baselines and --velocity-share reach the bench: LOInK alone, the share
    recorded."""
    out = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'bench', 'stream',
                          '--tasks', '1', '--seconds', '0.2', '--no-baselines',
                          '--velocity-share', '0.5', '--json', '-'],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout)
    assert set(report['methods']) == {'loink'} and report['path_velocity_share'] == 0.5
    assert report['methods']['loink']['all']['velocity_violations'] == 0


def test_loink_bench_stream_refuses_a_zero_velocity_share():
    """--velocity-share 0 reaches the paths' check (not the default in its place)."""
    out = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'bench', 'stream',
                          '--tasks', '1', '--seconds', '0.1', '--no-baselines',
                          '--velocity-share', '0', '--json', '-'],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode != 0 and 'velocity share must lie in (0, 1]' in out.stderr
