"""The `loink` command line on the tiny model, each command in its own process."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def run_cli(*args, cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(p for p in (str(REPO), env.get('PYTHONPATH')) if p)
    env.setdefault('OMP_NUM_THREADS', '1')
    env.setdefault('OPENBLAS_NUM_THREADS', '1')
    env.setdefault('MPLBACKEND', 'Agg')
    return subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def ok_json(result: subprocess.CompletedProcess):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def middle_task(tiny, where: float = 0.5) -> float:
    lower, upper = tiny.result.task_lower[0], tiny.result.task_upper[0]
    return float(lower + where * (upper - lower))


def test_info(tiny, tmp_path):
    out = tmp_path / 'info.json'
    result = run_cli('info', tiny.json_path, '--json', out, cwd=tmp_path)
    info = ok_json(result)
    assert json.loads(out.read_text()) == info
    meta = json.loads(tiny.json_path.read_text())
    assert info['name'] == 'tiny' and info['version'] == meta['model_version']
    assert info['joint_names'] == list(tiny.problem.joint_names)
    assert info['joint_lower'] == tiny.problem.lower.tolist()
    assert info['task_names'] == ['tip_x'] and info['latent_dim'] == 2
    assert info['task_lower'] == tiny.result.task_lower.tolist()
    assert info['mu'] == meta['network']['mu'] and info['nu'] == meta['network']['nu']
    assert ok_json(run_cli('info', tiny.json_path, '--json', '-', cwd=tmp_path)) == info


def test_solve_with_refinement(tiny, tiny_solver, tmp_path):
    y = middle_task(tiny, 0.3)
    answer = ok_json(run_cli('solve', tiny.json_path, '--task', y, '--refine', '--json', '-',
                             cwd=tmp_path))
    assert answer['joint_names'] == list(tiny.problem.joint_names)
    q = np.array(answer['q'])
    assert np.all((q >= tiny.problem.lower) & (q <= tiny.problem.upper))
    assert answer['refined'] is True and answer['converged'] is True
    assert answer['task_error'] < 1e-9 and answer['latent'] == [0.0, 0.0]
    assert isinstance(answer['clipped'], bool) and answer['solve_time_ms'] > 0
    expected = tiny_solver.solve([y], refine_answer=True)
    assert np.allclose(q, expected.q, rtol=0, atol=1e-12)
    assert answer['cost'] == pytest.approx(expected.cost, rel=1e-12)


def test_solve_with_a_latent_and_a_seed(tiny, tiny_solver, tmp_path):
    y = middle_task(tiny, 0.6)
    answer = ok_json(run_cli('solve', tiny.json_path, '--task', y, '--latent', '0.4,-0.3',
                             '--seed-q', '0.1 0.2 0.3', cwd=tmp_path))
    assert answer['latent'] == [0.4, -0.3] and answer['refined'] is False
    assert np.allclose(answer['q'], tiny_solver.solve([y], latent=[0.4, -0.3]).q, atol=1e-9)


def test_sample_ranks_answers_that_meet_the_task_first(tiny, tiny_solver, tmp_path):
    y = middle_task(tiny)
    common = ['sample', tiny.json_path, '--task', y, '--count', 6, '--spread', 0.7,
              '--random-seed', 11, '--json', '-']
    for tolerance in (None, 0.02):
        extra = [] if tolerance is None else ['--task-tolerance', tolerance]
        answers = ok_json(run_cli(*common, *extra, cwd=tmp_path))
        assert len(answers) == 6
        expected = tiny_solver.sample([y], 6, 0.7, random_seed=11,
                                      task_tolerance=0.01 if tolerance is None else tolerance)
        assert np.allclose([a['q'] for a in answers], [s.q for s in expected], atol=1e-12)
        meets = [a['task_error'] <= (tolerance or 0.01) and not a['violations'] for a in answers]
        assert meets == sorted(meets, reverse=True)
        for group in (True, False):
            costs = [a['cost'] for a, m in zip(answers, meets) if m == group]
            assert costs == sorted(costs)


def test_help_says_spread_is_a_variance_and_how_samples_are_ranked(tmp_path):
    text = ' '.join(run_cli('sample', '--help', cwd=tmp_path).stdout.split())
    assert 'variance' in text and 'std sqrt(c)' in text
    assert '--task-tolerance' in text and 'then by cost' in text


def test_track(tiny, tmp_path):
    start, stop = middle_task(tiny, 0.3), middle_task(tiny, 0.7)
    args = ['track', tiny.json_path, '--start', start, '--stop', stop, '--steps', 7,
            '--smoothing', 2.0, '--initial-q', '0.1,-0.2,0.3', '--json', '-']
    answer = ok_json(run_cli(*args, cwd=tmp_path))
    path = answer['path']
    assert answer['smoothing'] == 2.0 and len(path) == 7
    assert np.allclose([p['task'] for p in path], np.linspace([start], [stop], 7))
    qs = np.array([[0.1, -0.2, 0.3]] + [p['q'] for p in path])
    steps = np.linalg.norm(np.diff(qs, axis=0), axis=1)
    assert answer['mean_joint_step'] == pytest.approx(steps.mean(), rel=1e-9)
    assert answer['max_joint_step'] == pytest.approx(steps.max(), rel=1e-9)
    assert np.all((qs[1:] >= tiny.problem.lower) & (qs[1:] <= tiny.problem.upper))


def test_track_from_a_tasks_file(tiny, tmp_path):
    targets = np.array([[middle_task(tiny, w)] for w in (0.2, 0.4, 0.5)])
    np.savetxt(tmp_path / 'targets.csv', targets, delimiter=',')
    answer = ok_json(run_cli('track', tiny.json_path, '--tasks-file', tmp_path / 'targets.csv',
                             '--json', '-', cwd=tmp_path))
    assert [p['task'] for p in answer['path']] == targets.tolist()


def one_line_error(result: subprocess.CompletedProcess, command: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ''
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f'loink {command}: ')
    return lines[0]


@pytest.mark.parametrize('task, code', [('nan', 'NON_FINITE_INPUT'), ('5.0', 'TASK_OUT_OF_BOUNDS'),
                                        ('0.1,0.2', 'INVALID_TASK_DIMENSION')])
def test_bad_task_exits_2_with_one_line(tiny, tmp_path, task, code):
    line = one_line_error(run_cli('solve', tiny.json_path, '--task', task, cwd=tmp_path), 'solve')
    assert code in line


def test_bad_model_and_bad_track_arguments_exit_2(tiny, tmp_path):
    line = one_line_error(run_cli('info', tmp_path / 'missing.json', cwd=tmp_path), 'info')
    assert 'does not exist' in line
    line = one_line_error(run_cli('track', tiny.json_path, '--start', '0.1', cwd=tmp_path), 'track')
    assert '--stop' in line
    line = one_line_error(run_cli('sample', tiny.json_path, '--task', middle_task(tiny),
                                  '--count', 0, cwd=tmp_path), 'sample')
    assert 'INVALID_COUNT' in line


@pytest.mark.parametrize('kind', ['latent', 'spread'])
def test_plots_write_png_files(tiny, tmp_path, kind):
    out = tmp_path / f'{kind}.png'
    result = run_cli('plot', kind, tiny.json_path, '--out', out, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert out.stat().st_size > 10_000


def test_the_learning_plot_draws_each_runs_log(tiny, tmp_path):
    out = tmp_path / 'learning.png'
    log = tiny.run_dir / 'log.csv'
    result = run_cli('plot', 'learning', log, log, '--out', out, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout[:result.stdout.rindex('}') + 1])
    last = tiny.result.history[-1]
    assert figures['run']['epochs'] == tiny.config.epochs
    assert figures['run']['val_task_rmse'] == pytest.approx(last['val_task_rmse'])
    assert out.read_bytes()[:8] == PNG_SIGNATURE and out.stat().st_size > 10_000
    line = one_line_error(run_cli('plot', 'latent', tiny.json_path, tiny.json_path, '--out',
                                  tmp_path / 'x.png', cwd=tmp_path), 'plot')
    assert 'latent takes one model, not 2' in line


def test_output_cut_short_by_the_reader_is_no_error(tiny, tmp_path):
    # `loink sample ... --json - | head -3`: the reader closes the pipe early.
    command = [sys.executable, '-m', 'loink_ros.tools.cli', 'sample', str(tiny.json_path),
               '--task', str(middle_task(tiny)), '--count', '200', '--spread', '0.5',
               '--json', '-']
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=tmp_path, env={**os.environ, 'PYTHONUNBUFFERED': '1'})
    process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=120) == 0
    assert 'Traceback' not in process.stderr.read().decode()


def test_bench_threads_reports_both_runtimes_of_every_model(tmp_path):
    out = ok_json(run_cli('bench', 'threads', '--tasks', '5', '--json', '-', cwd=tmp_path))
    assert set(out['models']) == {'planar3', 'panda', 'magneto'}
    for figures in out['models'].values():
        for runtime in ('compiled', 'numpy'):
            rates = figures[runtime]['solves_per_s']
            assert set(rates) == {'1', '2'} and all(r > 0 for r in rates.values())
            assert figures[runtime]['speedup']['1'] == 1.0


def test_bench_pose_compares_loink_with_trac_ik_on_the_same_poses(tmp_path):
    out = ok_json(run_cli('bench', 'pose', '--robot', 'panda', '--tasks', '12', '--json', '-',
                          cwd=tmp_path))
    assert out['model'] == 'panda_full' and out['poses'] == 12
    for method in ('loink', 'trac_ik_speed', 'trac_ik_distance'):
        assert 0.0 <= out[method]['success'] <= 1.0 and out[method]['time_ms_median'] > 0
    assert out['loink']['success'] >= 11 / 12 and out['loink']['regret_median'] >= 0.0
    assert out['loink_answers_outside_limits'] == 0
    assert out['loink_invalid_answers_reported_as_success'] == 0
    assert out['variants']['poses'] == 12 and 'no descent' in out['variants']


def test_bench_fit_reports_each_task_component(tmp_path):
    out = ok_json(run_cli('bench', 'fit', '--model', 'panda', '--tasks', '40', '--json', '-',
                          cwd=tmp_path))
    assert set(out['forward_rmse']) == {'panda_hand_x', 'panda_hand_y', 'panda_hand_z'}
    assert 0.0 < out['forward_position_error_median_m'] < 0.1
    assert 0.0 <= out['raw_answers_clipped'] <= 1.0
    spread = out['orientation_mean_singular_values']
    assert len(spread) == 3 and all(0.0 <= v <= 1.0 + 1e-12 for v in spread)
    assert 'orientation_share_beyond_0.9pi_of_nominal' not in out   # no pose task
    refined = out['refined']
    assert refined['targets'] == 40 and refined['fallback_available']
    fallback, network = refined['with_fallback'], refined['network_only']
    assert fallback['success'] >= network['success'] >= 0.9
    assert fallback['regret_median'] <= network['regret_median'] + 1e-9
    assert fallback['regret_median'] >= -0.05   # the reference is a local search: about its optimum


def test_runtime_finds_the_library_the_solver_loads():
    """`loink runtime` (make's set-up step): the very library the solver
    loads, up to date; a model it cannot find is one line and exit 2. (Building into an
    empty cache: test_compiled.py.)"""
    from loink_ros.core.compiled.build import library_path
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    command = [sys.executable, '-m', 'loink_ros.tools.cli', 'runtime']
    subprocess.run([*command, 'planar3'], capture_output=True, timeout=300)   # built, if not
    found = subprocess.run([*command, 'planar3'], capture_output=True, text=True, timeout=300)
    expected = library_path(problem_for_model(load_model('planar3')))
    assert found.returncode == 0 and found.stdout.split() == [str(expected), '(up', 'to',
                                                             'date)'], found.stderr
    bad = subprocess.run([*command, 'no_such_model'], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and bad.stderr.count('\n') == 1 and 'no_such_model' in bad.stderr
