"""Robot descriptions (docs/ROBOT.md): `loink robot init` on URDFs not shipped with the repo,
the checks that name a bad key, and the problem a description defines (continuous and
locked joints, a base frame that is not the URDF root, the cost terms and their CasADi form)."""
import subprocess
import sys

import casadi as ca
import numpy as np
import pytest
import yaml

from loink_ros.core.problems.arms.described_arm import DescribedArmProblem
from loink_ros.core.problems.arms.example_robots import robot_file
from loink_ros.core.problems.arms.kinematic_problem import CONTINUOUS_RANGE
from loink_ros.core.problems.arms.robot_spec import SpecError, load_spec
from loink_ros.core.problems.arms.symbolic_chain import SymbolicChain
from loink_ros.tools.robot.init import init_description
from loink_ros.tools.robot.train import described_problem

UR5 = robot_file('ur_description/urdf/ur5_robot.urdf')
JACO2 = robot_file('kinova_description/robots/kinova.urdf')
Z1 = robot_file('z1_description/urdf/z1.urdf')
EVERY_TERM = {'range_centre': {'weight': 1.0}, 'gravity_torque': {'weight': 0.5},
              'manipulability': {'weight': 0.2},
              'nominal_posture': {'weight': 0.3, 'posture': {'j2s6s200_joint_2': 3.0}},
              'joint_limit_barrier': {'weight': 0.4, 'margin': 0.2}}


def loink(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'loink_ros.tools.cli', *args],
                          capture_output=True, text=True, timeout=300)


def described(tmp_path, urdf, base, tip, **changes):
    """A description written by init, with `changes` merged into its YAML."""
    path = init_description(urdf, base, tip, tmp_path / 'arm.yaml', force=True)
    data = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and key in data else value
    path.write_text(yaml.safe_dump(data))
    return path


def test_init_describes_the_ur5_chain_with_one_turn_per_joint(tmp_path):
    result = loink('robot', 'init', '--urdf', str(UR5), '--base', 'base_link', '--tip', 'tool0',
                   '--out', str(tmp_path / 'ur5.yaml'))
    assert result.returncode == 0, result.stderr
    assert '6 joints (0 continuous)' in result.stdout
    assert 'loink robot train' in result.stdout
    spec = load_spec(tmp_path / 'ur5.yaml')
    assert spec.name == 'ur5' and spec.urdf == UR5.resolve() and spec.axes == 'xyz'
    problem = DescribedArmProblem(spec)
    # The URDF's +/-2 pi ranges come narrowed to one turn, inside the URDF's limits.
    assert np.all(problem.upper - problem.lower <= 2 * np.pi) and problem.dim == 6
    assert np.all(problem.lower >= -2 * np.pi) and problem.upper[0] == pytest.approx(np.pi, abs=1e-3)
    again = loink('robot', 'init', '--urdf', str(UR5), '--base', 'base_link', '--tip', 'tool0',
                  '--out', str(tmp_path / 'ur5.yaml'))
    assert again.returncode == 2 and 'exists' in again.stderr


def test_continuous_joints_take_the_declared_range_and_off_chain_joints_are_locked(tmp_path):
    problem = DescribedArmProblem(load_spec(described(
        tmp_path, JACO2, 'j2s6s200_link_base', 'j2s6s200_end_effector')))
    assert problem.continuous.tolist() == [True, False, False, True, False, True]
    assert problem.lower[0] == pytest.approx(CONTINUOUS_RANGE[0], abs=1e-3)
    # Z1: the gripper joint hangs off the chain base -> link06 and is locked.
    z1 = DescribedArmProblem(load_spec(described(tmp_path, Z1, 'link00', 'link06')))
    assert z1.joint_names == [f'joint{i}' for i in range(1, 7)]


def test_locked_joints_are_fixed_at_their_value(tmp_path):
    spec = load_spec(described(tmp_path, UR5, 'base_link', 'tool0',
                               joints={'limits': {}, 'locked': {'wrist_3_joint': 0.7,
                                                                'elbow_joint': -1.0}}))
    problem = DescribedArmProblem(spec)
    assert 'elbow_joint' not in problem.joint_names and problem.dim == 4
    full = DescribedArmProblem(load_spec(described(tmp_path, UR5, 'base_link', 'tool0')))
    q = np.array([0.3, -1.1, 0.4, 0.9])
    q_full = np.array([0.3, -1.1, -1.0, 0.4, 0.9, 0.7])
    assert np.allclose(problem.task(q), full.task(q_full), atol=1e-12)


def test_a_base_frame_off_the_root_expresses_the_task_in_it(tmp_path):
    # ur5_robot.urdf: 'base' is base_link turned half a turn about z (the ROS-I convention).
    in_link = DescribedArmProblem(load_spec(described(tmp_path, UR5, 'base_link', 'tool0')))
    in_base = DescribedArmProblem(load_spec(described(tmp_path, UR5, 'base', 'tool0')))
    q = np.random.default_rng(3).uniform(in_link.lower, in_link.upper, (5, 6))
    turned = in_link.task(q) * np.array([-1.0, -1.0, 1.0])
    assert np.allclose(in_base.task(q), turned, atol=1e-12)
    jac = in_base.task_jacobian(q[0])
    step = 1e-7 * np.eye(6)
    numeric = (in_base.task(q[0] + step) - in_base.task(q[0] - step)).T / 2e-7
    assert np.allclose(jac, numeric, atol=1e-6)


def test_every_cost_term_matches_its_casadi_form_and_gradient(tmp_path):
    spec = load_spec(described(tmp_path, JACO2, 'j2s6s200_link_base', 'j2s6s200_end_effector',
                               cost=EVERY_TERM))
    problem = DescribedArmProblem(spec)
    assert set(problem.resolved_cost()) == set(EVERY_TERM)
    x = ca.SX.sym('q', problem.dim)
    symbolic = ca.Function('J', [x], [problem.symbolic_cost(x, SymbolicChain(problem.model, x))])
    q = np.random.default_rng(4).uniform(problem.lower, problem.upper, (6, problem.dim))
    costs = problem.cost(q)
    assert np.all(np.isfinite(costs)) and np.all(costs > 0)
    for row, cost in zip(q, costs):
        assert float(symbolic(row)) == pytest.approx(cost, rel=1e-9)
        step = 1e-6 * np.eye(problem.dim)
        numeric = (problem.cost(row + step) - problem.cost(row - step)) / 2e-6
        assert np.allclose(problem.cost_gradient(row), numeric, rtol=1e-5, atol=1e-6)
    # Each term is scaled to mean 1 over the joint box: weight 1 means its typical size.
    box = np.random.default_rng(0).uniform(problem.lower, problem.upper, (1000, problem.dim))
    for term, weight, scale in problem.terms:
        assert term.value(problem, box).mean() / scale == pytest.approx(1.0, rel=1e-9)


def test_the_stored_description_rebuilds_the_same_cost(tmp_path):
    from loink_ros.core.problems.arms.robot_spec import spec_from_dict
    problem = DescribedArmProblem(load_spec(described(
        tmp_path, JACO2, 'j2s6s200_link_base', 'j2s6s200_end_effector', cost=EVERY_TERM)))
    stored = problem.metadata()['description']
    rebuilt = DescribedArmProblem(spec_from_dict({**stored, 'urdf': str(JACO2)}, tmp_path, 'model'))
    q = np.random.default_rng(5).uniform(problem.lower, problem.upper, (20, problem.dim))
    assert np.array_equal(rebuilt.cost(q), problem.cost(q))
    assert rebuilt.lower.tolist() == problem.lower.tolist()


BAD = [
    ({'cost': {'range_centre': {'weight': 1.0}, 'gravity_torqe': {'weight': 1.0}}},
     "cost.gravity_torqe: unknown key; did you mean 'gravity_torque'?"),
    ({'training': {'epoch': 3}}, "training.epoch: unknown key; did you mean 'epochs'?"),
    ({'training': {'epochs': 'ten'}}, "training.epochs: must be an integer, got 'ten'"),
    ({'training': {'lr': '1e-3'}}, 'training.lr: must be a number'),
    ({'network': {'blocks': [64, 0]}}, 'network.blocks: must be a list of positive integers'),
    ({'task': {'axes': 'xyw'}}, 'task.axes: must be position axes'),
    ({'joints': {'limits': {'elbow': [-1, 1]}}},
     'joints.limits.elbow: no such joint; the chain base_link -> tool0 has shoulder_pan_joint'),
    ({'joints': {'limits': {'elbow_joint': [-4.0, 1.0]}}},
     'joints.limits.elbow_joint: [-4, 1] is not inside the URDF limits'),
    ({'joints': {'limits': {'elbow_joint': [1.0, -1.0]}}},
     'joints.limits.elbow_joint: lower 1 must be below upper -1'),
    ({'tip': 'shoulder_link', 'base': 'tool0'}, "tip: 'shoulder_link' is not below base 'tool0'"),
    ({'base': 'nowhere'}, "base: no frame 'nowhere' in the URDF; its links:"),
    ({'cost': {'range_centre': {'weight': 0.0}}}, 'cost: every weight is 0'),
    ({'cost': {'manipulability': {'wieght': 1.0}}}, "cost.manipulability.wieght: unknown key"),
    ({'dataset': {'samples': 10}}, 'dataset.samples: must be >= 1000'),
    ({'urdf': 'missing.urdf'}, 'urdf: '),
]


@pytest.mark.parametrize('change, message', BAD, ids=[m.split(':')[0] for _, m in BAD])
def test_a_bad_description_names_the_key(tmp_path, change, message):
    path = described(tmp_path, UR5, 'base_link', 'tool0')
    data = yaml.safe_load(path.read_text())
    for key, value in change.items():   # a cost replaces the written one; sections merge
        merge = isinstance(data.get(key), dict) and key != 'cost'
        data[key] = {**data[key], **value} if merge else value
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError) as err:
        described_problem(path)
    assert message in str(err.value) and str(path) in str(err.value), str(err.value)


def test_the_command_line_reports_a_bad_description_in_one_message(tmp_path):
    path = described(tmp_path, UR5, 'base_link', 'tool0')
    path.write_text(path.read_text().replace('epochs:', 'epoks:'))
    result = loink('robot', 'train', str(path))
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert "training.epoks: unknown key; did you mean 'epochs'?" in result.stderr
    path.write_text('name: [unclosed')
    result = loink('robot', 'check', str(path))
    assert result.returncode == 2 and 'not valid YAML' in result.stderr


def test_the_polish_finds_the_local_optimum_slsqp_finds_from_the_same_start(tmp_path):
    from loink_ros.baselines.reference_optimizer import local_optimum
    problem = DescribedArmProblem(load_spec(described(tmp_path, UR5, 'base_link', 'tool0')))
    rng = np.random.default_rng(6)
    for q in problem.sample(5, rng):
        y = problem.task(q)[0]
        polished = problem.local_optimum(q, y)
        assert np.linalg.norm(problem.task(polished)[0] - y) <= 1e-9
        assert np.all(polished >= problem.lower) and np.all(polished <= problem.upper)
        reference = np.clip(local_optimum(problem, y, q).x, problem.lower, problem.upper)
        assert problem.cost(polished)[0] < problem.cost(q)[0]
        assert problem.cost(polished)[0] == pytest.approx(problem.cost(reference)[0], rel=1e-6)


@pytest.mark.parametrize('name, urdf', [('ur5', 'ur_description/urdf/ur5_robot.urdf'),
                                        ('jaco2', 'kinova_description/robots/kinova.urdf')])
def test_the_documented_descriptions_load_beside_their_example_urdf(tmp_path, name, urdf):
    from pathlib import Path

    from loink_ros.tools.robot.init import copy_example_urdf
    docs = Path(__file__).resolve().parents[1] / 'docs' / 'robots'
    (tmp_path / f'{name}.yaml').write_text((docs / f'{name}.yaml').read_text())
    copy_example_urdf(urdf, tmp_path / f'{name}.urdf')
    problem = described_problem(tmp_path / f'{name}.yaml')
    assert problem.name == name and problem.dim == 6
    assert problem.spec.sections['training']['epochs'] == 80


def test_optimum_inside_limits_selects_the_bounded_latent_optimum(tmp_path):
    default = DescribedArmProblem(load_spec(described(tmp_path, UR5, 'base_link', 'tool0')))
    inside = DescribedArmProblem(load_spec(described(
        tmp_path, UR5, 'base_link', 'tool0', solver={'optimum_inside_limits': True})))
    assert not default.optimum_on_bounds and inside.optimum_on_bounds
    assert inside.metadata()['description']['solver'] == {'optimum_inside_limits': True}
