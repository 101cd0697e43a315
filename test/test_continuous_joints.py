"""Continuous joints (Pinocchio nq = 2) in KinematicProblem: a URDF of our own through
dataset, a short training, export, load and solve; joints LOInK cannot learn are refused."""
import numpy as np
import pinocchio as pin
import pytest

from loink_ros.core.problems.arms.kinematic_problem import CONTINUOUS_RANGE, KinematicProblem
from loink_ros.core.problems.shipped_robots import robot_file

URDF = robot_file('arm3_continuous.urdf')


class ContinuousArm(KinematicProblem):
    """Tip x, z of arm3_continuous.urdf (wrist continuous); cost: posture."""

    def __init__(self, limits=None):
        super().__init__(URDF, 'tip', 'xz', name='arm3_continuous', cost_name='posture',
                         limits=limits)
        self.mid, self.half = 0.5 * (self.lower + self.upper), 0.5 * (self.upper - self.lower)

    def cost(self, q):
        return (((np.atleast_2d(q) - self.mid) / self.half) ** 2).sum(-1)

    def example_configuration(self):
        # Not the default middle of the ranges: that points the arm straight up, the tip at
        # full reach, on the edge of the workspace (export refuses it, see below).
        return np.array([0.3, 0.6, 1.2])


@pytest.fixture(scope='module')
def arm():
    return ContinuousArm()


def test_the_continuous_wrist_is_one_angle_on_the_declared_range(arm):
    assert arm.joint_names == ['shoulder', 'elbow', 'wrist'] and arm.dim == 3
    assert arm.continuous.tolist() == [False, False, True]
    assert arm.lower.tolist() == [-1.0, -1.5, CONTINUOUS_RANGE[0]]
    assert arm.upper.tolist() == [1.0, 1.5, CONTINUOUS_RANGE[1]]
    narrowed = ContinuousArm(limits=([-1.0, -1.5, -2.0], [1.0, 1.5, 2.5]))
    assert narrowed.lower[2] == -2.0 and narrowed.upper[2] == 2.5


def test_kinematics_follow_the_angle(arm):
    # Tip = sum of the link vectors in the x-z plane; the wrist angle adds to the others.
    rng = np.random.default_rng(0)
    q = rng.uniform(arm.lower, arm.upper, (20, 3))
    angles = np.cumsum(q, axis=1)
    lengths = np.array([0.4, 0.3, 0.15])
    tip = np.column_stack([(lengths * np.sin(angles)).sum(1), (lengths * np.cos(angles)).sum(1)])
    assert np.abs(arm.task(q) - tip).max() < 1e-12
    # One turn of the wrist is the same pose.
    assert np.abs(arm.task(q + [0.0, 0.0, 2 * np.pi]) - tip).max() < 1e-12
    for row in q[:5]:
        eps = 1e-6
        numeric = np.column_stack([arm.task(row + eps * e)[0] - arm.task(row - eps * e)[0]
                                   for e in np.eye(3)]) / (2 * eps)
        assert np.abs(arm.task_jacobian(row) - numeric).max() < 1e-8
    assert arm.gravity_torque(q).shape == (20, 3)
    assert np.all(np.isfinite(arm.cost(q)))


def test_dataset_training_export_load_and_solve(arm, tmp_path):
    from loink_ros.core.dataset import generate_dataset
    from loink_ros.core.export import export_model
    from loink_ros.core.network.loink_net import NetworkConfig
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    from loink_ros.core.training import TrainConfig, train

    data = generate_dataset(arm, 3000, seed=0, progress=False)
    assert data.x.shape == (3000, 3) and data.y.shape == (3000, 2)
    config = TrainConfig(NetworkConfig(blocks=[16, 16], depth=2, cost_hidden=[16]), epochs=3,
                         batch_size=256, lr=5e-3, seed=1, device='cpu')
    result = train(data, arm, config, tmp_path / 'run', resume=False, progress=False)
    straight_up = ContinuousArm()
    straight_up.example_configuration = lambda: np.zeros(3)
    with pytest.raises(ValueError, match='example_configuration'):
        export_model(result, straight_up, tmp_path / 'refused')
    assert not (tmp_path / 'refused.onnx').exists()
    _, json_path = export_model(result, arm, tmp_path / 'arm3_continuous')
    model = load_model(str(json_path))
    assert model.problem['joint_lower'] == arm.lower.tolist()
    assert model.example_configuration.tolist() == arm.example_configuration().tolist()
    solver = LOInKSolver(model, arm)
    rng = np.random.default_rng(5)
    # Targets reached by configurations with the wrist far round, where cos/sin matter.
    shrink = np.array([0.6, 0.6, 0.9])
    targets = arm.task(rng.uniform(arm.lower * shrink, arm.upper * shrink, (8, 3)))
    for y in [solver.example_task(), *targets]:
        answer = solver.solve(y, refine_answer=True)
        assert answer.task_error < 1e-9, (y, answer)
        assert np.abs(arm.task(answer.q)[0] - y).max() < 1e-9
        assert np.all((answer.q >= arm.lower) & (answer.q <= arm.upper))
        assert np.isfinite(answer.cost) and answer.violations == ()


class ContinuousArmLike(KinematicProblem):
    """A problem on any test URDF with frame `tip`."""

    def __init__(self, urdf, locked_joints=(), limits=None):
        super().__init__(urdf, 'tip', 'x', name='odd', cost_name='zero',
                         locked_joints=locked_joints, limits=limits)

    def cost(self, q):
        return np.zeros(len(np.atleast_2d(q)))


URDF_HEAD = '<?xml version="1.0"?><robot name="odd"><link name="base_link"/>'
CHILD = '<link name="{0}"/>'


def joint(name, kind, parent, child, extra=''):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/>{extra}</joint><link name="{child}"/>')


REVOLUTE = joint('hinge', 'revolute', 'base_link', 'a',
                 '<limit lower="-1" upper="1" effort="1" velocity="1"/>')
REFUSED = {
    'floating': (joint('free', 'floating', 'a', 'tip'), 'free', 'lock it'),
    'planar': (joint('slider2d', 'planar', 'a', 'tip'), 'slider2d', 'lock it'),
    'prismatic without a range': (
        joint('slide', 'prismatic', 'a', 'tip',
              '<limit lower="0" upper="0" effort="1" velocity="1"/>'),
        'slide', 'give limits'),
}


@pytest.mark.parametrize('case', REFUSED)
def test_joints_that_cannot_be_learned_are_refused_by_name(tmp_path, case):
    body, name, advice = REFUSED[case]
    urdf = tmp_path / 'odd.urdf'
    urdf.write_text(URDF_HEAD + REVOLUTE + body + '</robot>')
    with pytest.raises(ValueError) as caught:
        ContinuousArmLike(urdf)
    message = str(caught.value)
    assert f"'{name}'" in message and advice in message and '\n' not in message
    # Locking the joint (or, for the slide, giving limits) makes the robot usable.
    if case == 'prismatic without a range':
        fixed = ContinuousArmLike(urdf, limits=([-1.0, 0.0], [1.0, 0.2]))
        assert fixed.upper.tolist() == [1.0, 0.2]
    else:
        assert ContinuousArmLike(urdf, locked_joints=(name,)).joint_names == ['hinge']


def test_limits_of_the_wrong_length_or_empty_are_refused(arm):
    with pytest.raises(ValueError, match='3 values'):
        ContinuousArm(limits=([-1.0, -1.0], [1.0, 1.0]))
    with pytest.raises(ValueError, match="'wrist'"):
        ContinuousArm(limits=([-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]))


def test_pinocchio_sees_the_wrist_as_cos_sin(arm):
    # Premise of the conversion: Pinocchio's q has 4 entries for the 3 joints.
    model = pin.buildModelFromUrdf(str(URDF))
    assert (model.nq, model.nv) == (4, 3)
    q = arm.pinocchio_configuration(np.array([0.1, 0.2, 2.5]))
    assert q == pytest.approx([0.1, 0.2, np.cos(2.5), np.sin(2.5)])
