"""`loink robot train` end to end at CI size (docs/ROBOT.md): a UR5 (example-robot-data, not
shipped in the repo) from `loink robot init` to a model served by `ros2 launch`, with no
code written; the NaN-loss stop and the ambiguous-cost stop, each with its message."""
import json
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from background import Background

from loink_ros.core.problems.arms.example_robots import robot_file

UR5 = robot_file('ur_description/urdf/ur5_robot.urdf')
# A CI-sized run of the whole command: a few thousand samples, a few epochs.
CI_SIZE = {'dataset': {'samples': 20000}, 'training': {'epochs': 4},
           'check': {'targets': 8, 'starts': 6, 'max_ambiguous': 0.5},
           'bench': {'targets': 12, 'starts': 4}}
SERVE_TIMEOUT = 90.0
CALL_TIMEOUT = 60.0


def loink(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def edited(path, changes: dict, name: str):
    """The description at `path` with sections merged, written as <name>.yaml beside it."""
    data = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        data[key] = {**data[key], **value} if key != 'cost' else value
    out = path.with_name(f'{name}.yaml')
    out.write_text(yaml.safe_dump(data))
    return out


@pytest.fixture(scope='module')
def ur5(tmp_path_factory):
    """init, then the whole `loink robot train` at CI size; (folder, summary, description)."""
    folder = tmp_path_factory.mktemp('robot')
    shutil.copyfile(UR5, folder / 'ur5.urdf')
    made = loink('robot', 'init', '--urdf', 'ur5.urdf', '--base', 'base_link', '--tip', 'tool0',
                 '--out', 'ur5.yaml', cwd=folder)
    assert made.returncode == 0, made.stderr
    description = edited(folder / 'ur5.yaml', CI_SIZE, 'ur5')
    result = loink('robot', 'train', 'ur5.yaml', '--json', 'summary.json', cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder, json.loads((folder / 'summary.json').read_text()), description


def test_train_runs_every_stage_and_writes_model_report_and_parameters(ur5):
    folder, summary, _ = ur5
    out = folder / 'ur5'
    for name in ('ur5.json', 'ur5.onnx', 'ur5.yaml', 'ur5.urdf', 'check.json', 'check.png',
                 'dataset.npz', 'bench.json', 'report.md', 'losses.png', 'bench.png',
                 'latent.png'):
        assert (out / name).is_file(), name
    assert summary['model'] == str(out / 'ur5.json')
    assert summary['training']['epochs'] == CI_SIZE['training']['epochs']
    assert summary['training']['samples'] == CI_SIZE['dataset']['samples']
    bench = json.loads((out / 'bench.json').read_text())
    assert bench['targets'] == CI_SIZE['bench']['targets']
    assert bench['reference_ok_fraction'] > 0.5
    assert bench['task_error_refined_m']['min'] < 1e-6
    assert all(np.isfinite(bench[k]['mean']) for k in ('solve_ms', 'reference_ms', 'regret'))
    # A CI-sized network fits loosely: the refined answers are the multi-start fallback's.
    assert bench['multistart_fallback'] and bench['success_fraction'] >= 11 / 12
    assert bench['regret_refined']['median'] <= 0.02
    pose = bench['pose']
    assert pose['poses'] == CI_SIZE['bench']['targets'] and pose['success_fraction'] >= 11 / 12
    assert 0.0 < pose['solve_ms']['median'] <= pose['solve_ms']['p99']
    report = (out / 'report.md').read_text()
    assert 'Full poses (12 poses' in report
    for figure in ('check.png', 'losses.png', 'bench.png', 'latent.png'):
        assert f']({figure})' in report
    assert 'loink robot train' in report and f'model:={out / "ur5.json"}' in report
    parameters = yaml.safe_load((out / 'ur5.yaml').read_text())['/**']['ros__parameters']
    assert parameters['model'] == str(out / 'ur5.json') and parameters['group_name'] == 'ur5'


def test_the_model_carries_its_robot_and_answers_inside_the_limits(ur5):
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    folder, summary, _ = ur5
    model = load_model(summary['model'])
    problem = problem_for_model(model)
    assert problem.name == 'ur5' and problem.dim == 6 and problem.urdf.parent == folder / 'ur5'
    solver = LOInKSolver(model, problem)
    assert solver.runtime == 'compiled'
    y = solver.example_task()
    solution = solver.solve(y, refine_answer=True)
    assert solution.task_error <= 1e-6
    assert np.all(solution.q >= problem.lower) and np.all(solution.q <= problem.upper)
    assert np.allclose(problem.task(solution.q)[0], y, atol=1e-6)
    # Refined, the optimum is polished: a local optimum SLSQP cannot improve.
    from loink_ros.baselines.reference_optimizer import local_optimum
    unpolished = solver.solve_rows(y[None], np.zeros((1, model.latent_dim)), True)[0][0]
    assert solution.cost <= unpolished.cost
    further = np.clip(local_optimum(problem, y, solution.q).x, problem.lower, problem.upper)
    assert problem.cost(further)[0] >= solution.cost * (1 - 1e-6)


def test_a_second_run_resumes_instead_of_starting_again(ur5):
    folder, _, _ = ur5
    checkpoints = list((folder / 'ur5' / 'runs').glob('*/checkpoint.pt'))
    assert len(checkpoints) == 1
    written = checkpoints[0].stat().st_mtime_ns
    again = loink('robot', 'train', 'ur5.yaml', cwd=folder)
    assert again.returncode == 0, again.stderr[-2000:]
    # Check and dataset are kept; training resumes at its last epoch (nothing left to do,
    # so no epoch runs and the checkpoint is not written again).
    assert 'check ur5' not in again.stderr and 'dataset ur5' not in again.stderr
    assert json.loads(again.stdout)['training']['epochs'] == CI_SIZE['training']['epochs']
    assert checkpoints[0].stat().st_mtime_ns == written


def test_a_diverging_training_stops_with_the_epoch_and_batch(ur5):
    folder, _, description = ur5
    bad = edited(description, {'training': {'lr': 1.0e6, 'lr_final': 1.0e6}}, 'ur5_diverging')
    data = yaml.safe_load(bad.read_text())
    data['output'] = 'ur5'        # the same check and dataset: only training differs
    bad.write_text(yaml.safe_dump(data))
    result = loink('robot', 'train', bad.name, cwd=folder)
    assert result.returncode != 0 and 'Traceback' not in result.stderr
    assert 'training diverged at epoch 1, batch' in result.stderr, result.stderr[-2000:]
    assert 'lower learning rate' in result.stderr


def test_an_ambiguous_cost_stops_with_the_fixes_the_check_found(ur5):
    folder, _, description = ur5
    ambiguous = edited(description, {'cost': {'manipulability': {'weight': 1.0}},
                                     'check': {'max_ambiguous': 0.1}}, 'ur5_ambiguous')
    data = yaml.safe_load(ambiguous.read_text())
    data['output'] = 'ur5_ambiguous'
    ambiguous.write_text(yaml.safe_dump(data))
    result = loink('robot', 'train', ambiguous.name, cwd=folder)
    assert result.returncode == 2 and 'Traceback' not in result.stderr, result.stderr[-2000:]
    message = result.stderr
    assert 'the one-clear-optimum check failed' in message and 'check.png' in message
    assert 'near-equal optima' in message and 'The joint that differs most' in message
    assert 'cost.range_centre.weight' in message and 'joints.limits.' in message
    assert '--accept-ambiguity' in message
    assert (folder / 'ur5_ambiguous' / 'check.png').is_file()
    assert not (folder / 'ur5_ambiguous' / 'dataset.npz').exists()


@pytest.mark.needs_setup(shutil.which('ros2') is not None,
                         'the ros2 command line is not on PATH: scripts/setup.sh installs '
                         '.ros2tools from ../shared/ros2tools (source ./env.sh)')
def test_ros2_launch_serves_the_exported_model(ur5, tmp_path):
    from loink_ros.tools.node_process import isolate_ros_environment
    isolate_ros_environment()
    folder, summary, _ = ur5
    line = summary['launch'] + ' namespace:=ur5_ci'
    assert line.startswith('ros2 launch loink_ros loink.launch.py model:=')
    node = Background(line, tmp_path / 'node.log')
    try:
        assert node.wait_for('call it with:', SERVE_TIMEOUT), node.output()
        time.sleep(0.5)
        from loink_ros.core.runtime.model_file import load_model
        task = load_model(summary['model']).example_configuration
        calls = [
            '/ur5_ci/loink_node/solve loink_msgs/srv/Solve "{task: %s, refine: true}"',
            '/ur5_ci/loink_node/sample loink_msgs/srv/Sample "{task: %s, count: 3, refine: true}"',
        ]
        from loink_ros.core.problems.registry import problem_for_model
        y = problem_for_model(load_model(summary['model'])).task(task)[0]
        target = '[' + ', '.join(f'{v:.4f}' for v in y) + ']'
        for call in calls:
            reply = subprocess.run(f'ros2 service call {call % target}', shell=True,
                                   capture_output=True, text=True, timeout=CALL_TIMEOUT)
            assert reply.returncode == 0 and 'success=True' in reply.stdout, reply.stdout
        ik = subprocess.run(
            'ros2 service call /ur5_ci/loink_node/compute_ik moveit_msgs/srv/GetPositionIK '
            f'"{{ik_request: {{group_name: ur5, pose_stamped: {{header: {{frame_id: base_link}}, '
            f'pose: {{position: {{x: {y[0]:.4f}, y: {y[1]:.4f}, z: {y[2]:.4f}}}}}}}}}}}"',
            shell=True, capture_output=True, text=True, timeout=CALL_TIMEOUT)
        assert ik.returncode == 0 and 'val=1' in ik.stdout, ik.stdout
    finally:
        code = node.stop()
    assert code == 0 and 'Traceback' not in node.output(), node.output()


@pytest.fixture(scope='module')
def ur5_library(ur5, tmp_path_factory):
    """`loink moveit-library <model json>` for the trained UR5 (docs/ROBOT.md's MoveIt lines),
    into a cache of its own: (the cache folder, the library's path)."""
    import os
    cache = tmp_path_factory.mktemp('library_cache')
    _, summary, _ = ur5
    built = subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', 'moveit-library', summary['model']],
                           capture_output=True, text=True, timeout=900,
                           env={**os.environ, 'LOINK_CACHE_DIR': str(cache)})
    assert built.returncode == 0, built.stderr
    return cache, built.stdout.split()[0]


def test_the_moveit_library_of_a_described_arm_answers_full_poses(ur5, ur5_library):
    """The in-process plugin's library of the trained UR5 (`loink moveit-library`), with the
    URDF's limits, answers full poses as the node does."""
    from test_model_library import library_solve

    from loink_ros.core.compiled.model_library import load_library
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.pose_refine import PoseTarget
    from loink_ros.core.runtime.pose_solver import PoseRequest, PoseSolver
    from loink_ros.core.runtime.solver import LOInKSolver
    _, summary, _ = ur5
    library = load_library(ur5_library[1])
    model = load_model(summary['model'])
    pose_solver = PoseSolver(LOInKSolver(model, problem_for_model(model)))
    problem = pose_solver.problem
    assert np.array_equal(np.ctypeslib.as_array(library[1].lower, shape=(6,)), problem.lower)
    solved = 0
    for q in problem.sample(10, np.random.default_rng(3)):
        request = PoseRequest(PoseTarget(*problem.tip_pose(q)))
        node = pose_solver.solve_ranked(request, 2)
        answers, found = library_solve(library, pose_solver, request, 2)
        assert found == (len(node) if node[0].success else 0)
        assert all(np.array_equal(a, b.q) for a, b in zip(answers, node))
        solved += found > 0
    assert solved >= 9


def test_moveit_paths_continue_across_a_full_turn_joint_s_model_range(ur5, ur5_library, tmp_path, monkeypatch):
    """`loink robot init` gives the UR5's two-turn joints one turn in the model ([-3.1415,
    3.1415]); MoveIt's interpolator through the plugin still turns the wrist on past +/- pi,
    and continues from a start a turn on (within the URDF's limits, beyond the model's)."""
    from scipy.spatial.transform import Rotation

    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.tools import moveit_plugin
    from loink_ros.tools.bench import moveit_cartesian
    _, summary, _ = ur5
    monkeypatch.setenv('LOINK_CACHE_DIR', str(ur5_library[0]))   # where the plugin finds it
    problem = problem_for_model(load_model(summary['model']))
    assert problem.upper[5] < np.pi < 6.28   # the model's one turn; the URDF's two
    robot = moveit_cartesian.arm(summary['model'], tmp_path)
    starts = np.array([[0.3, -1.2, 1.5, -1.8, 1.2, 2.9], [0.3, -1.2, 1.5, -1.8, 1.2, 4.2]])
    cases = []
    for q, angle in zip(starts, (0.6, -0.6)):
        pose = moveit_plugin.tip_poses(q[None], robot.tip, robot.urdf)[0]
        axis = Rotation.from_quat(pose[3:]).as_matrix()[:, 2]   # tool0's z: the wrist's axis
        cases.append('rotate ' + ' '.join(f'{v:.17g}' for v in (*q, *axis, angle)))
    results = moveit_cartesian.run_plugin(
        robot, 'loink_kinematics/LOInKKinematicsPlugin', moveit_cartesian.loink_parameters(robot.model),
        cases, tmp_path)
    for start, result in zip(starts, results):
        states = np.array(result['states'])
        assert result['fraction'] == 1.0, result
        assert np.abs(np.diff(np.vstack([start, states]), axis=0)).max() < 0.1
        assert np.abs(states[:, :5] - start[:5]).max() < 0.05   # the wrist alone turns
    first, second = (np.array(r['states'])[-1, 5] for r in results)
    assert abs(first - 2.9) > 0.5 and first > np.pi   # across the model's bound
    assert abs(second - 4.2) > 0.5 and second > np.pi
