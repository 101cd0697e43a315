"""Magneto: URDF against the published numbers, kinematics (Pinocchio vs CasADi), the
required-adhesion cost, the IPOPT baseline and the shipped model (docs/MAGNETO.md)."""
import math

import numpy as np
import pinocchio as pin
import pytest

from loink_ros.core.problems.magneto.geometry import LEGS
from loink_ros.core.problems.magneto.parameters import (
    BODY_CORNERS,
    CLEARANCE,
    EXAMPLE_HEIGHT,
    FRICTION,
    GRAVITY,
    MAGNET_FORCE,
)
from loink_ros.core.problems.magneto.problem import MagnetoProblem
from loink_ros.core.problems.shipped_robots import robot_file

SIGNS = {'AR': (1, -1), 'AL': (1, 1), 'BR': (-1, -1), 'BL': (-1, 1)}
PSI = {'AR': -0.785, 'AL': 0.785, 'BR': -2.355, 'BL': 2.355}


@pytest.fixture(scope='module')
def problem():
    return MagnetoProblem()


@pytest.fixture(scope='module')
def configs(problem):
    return problem.sample(40, np.random.default_rng(11))


def stance_model():
    model = pin.buildModelFromUrdf(str(robot_file('magneto.urdf')), pin.JointModelFreeFlyer())
    q = pin.neutral(model)
    for leg in LEGS:
        q[model.idx_qs[model.getJointId(f'{leg}_femur_joint')]] = math.pi / 20
        q[model.idx_qs[model.getJointId(f'{leg}_tibia_joint')]] = -math.pi / 2 - math.pi / 20
    return model, q


# ---- URDF against ROBOTS.md's public numbers -----------------------------------------------

def test_urdf_masses_and_stance_check():
    model, q = stance_model()
    data = model.createData()
    assert sum(i.mass for i in model.inertias) == pytest.approx(5.78357, abs=1e-9)
    assert model.inertias[1].mass == pytest.approx(1.24521)
    pin.framesForwardKinematics(model, data, q)
    for leg, (sx, sy) in SIGNS.items():
        foot = data.oMf[model.getFrameId(f'{leg}_foot')]
        assert foot.translation == pytest.approx([sx * 0.230, sy * 0.200, -0.036], abs=1.5e-3)
        assert foot.rotation[:, 2] == pytest.approx([0, 0, 1], abs=1e-12)   # magnet face flat
    assert pin.centerOfMass(model, data, q) == pytest.approx([0, 0, 0.069], abs=1e-4)


def test_urdf_joints_and_links():
    model, _ = stance_model()
    masses = {'femur': 0.25695, 'tibia': 0.20721, 'gimbal_z': 0.03591, 'gimbal_y': 0.02961,
              'gimbal_x': 0.19862, 'coxa': 0.05629 + 0.35}   # the hip carries the depth sensor
    for leg, (sx, sy) in SIGNS.items():
        def jid(part):
            return model.getJointId(f'{leg}_{part}_joint')
        coxa = model.jointPlacements[jid('coxa')]
        assert coxa.translation == pytest.approx([sx * 0.125585, sy * 0.095614, 0.0527])
        assert pin.rpy.matrixToRpy(coxa.rotation) == pytest.approx([math.pi / 2, 0, PSI[leg]], abs=1e-12)
        assert model.jointPlacements[jid('femur')].translation == pytest.approx([0, 0.0393, 0])
        assert model.jointPlacements[jid('tibia')].translation == pytest.approx([0.150, 0, 0])
        assert model.jointPlacements[jid('gimbal_z')].translation == pytest.approx([0.120, 0, 0])
        kinds = [model.joints[jid(p)].shortname() for p in
                 ('coxa', 'femur', 'tibia', 'gimbal_z', 'gimbal_y', 'gimbal_x')]
        assert kinds == ['JointModelRY', 'JointModelRZ', 'JointModelRZ', 'JointModelRZ',
                         'JointModelRY', 'JointModelRX']
        limits = {'coxa': (-2.355, 2.355), 'femur': (-1.571, 2.355), 'tibia': (-2.355, 0.001),
                  'gimbal_z': (-0.524, 0.524), 'gimbal_y': (-0.419, 0.419), 'gimbal_x': (-2.077, 2.077)}
        for part, (lo, hi) in limits.items():
            i = model.idx_qs[jid(part)]
            assert (model.lowerPositionLimit[i], model.upperPositionLimit[i]) == pytest.approx((lo, hi))
        for part, mass in masses.items():
            assert model.inertias[jid(part)].mass == pytest.approx(mass)
        foot = model.frames[model.getFrameId(f'{leg}_foot')]
        assert foot.placement.translation == pytest.approx([0.031, 0, 0])
        assert pin.rpy.matrixToRpy(foot.placement.rotation) == pytest.approx([0, -math.pi / 2, 0], abs=1e-12)


# ---- kinematics ------------------------------------------------------------------------

def test_casadi_kinematics_match_pinocchio(problem, configs):
    import casadi as ca
    ex = problem.casadi_expressions()
    f = ca.Function('fk', [ex['q']], [ex['task'], ex['com'], ex['gimbal_angles'], ex['J'],
                                      ca.jacobian(ex['task'], ex['q'])])
    feet_pin, normals = problem.foot_placements(configs)
    assert np.abs(normals - [0, 0, 1]).max() < 1e-12           # resolved gimbals: feet flat
    task_pin, com_pin, cost_pin = problem.task(configs), problem.com(configs), problem.cost(configs)
    gimbals = problem.full_configuration(configs)[:, problem.gimbal_index.ravel()]
    for i, q in enumerate(configs):
        task, com, angles, cost, jac = (np.array(v) for v in f(q))
        assert np.abs(task.ravel() - task_pin[i]).max() < 1e-9
        assert np.abs(task.ravel()[:12] - feet_pin[i].ravel()).max() < 1e-9
        assert np.abs(com.ravel() - com_pin[i]).max() < 1e-9
        assert np.abs(angles.ravel() - gimbals[i]).max() < 1e-9
        assert abs(cost.item() - cost_pin[i]) < 1e-9
        assert np.abs(jac - problem.task_jacobian(q)).max() < 1e-9


def test_leg_ik_inverts_the_kinematics(problem, configs):
    again = problem.refine_legs(configs, problem.task(configs))
    assert np.abs(again - configs).max() < 1e-10
    one = problem.refine_legs(configs[0], problem.task(configs[0]))
    assert np.abs(one[0] - configs[0]).max() < 1e-10


def test_sampler_gives_feasible_stances_near_the_surface(problem, configs):
    assert problem.feasibility(configs)['all'].all()
    feet = problem.task(configs)[:, :12].reshape(-1, 4, 3)
    assert np.abs(feet[..., 2]).max() <= 0.02 + 1e-12


# ---- the cost --------------------------------------------------------------------------

def test_min_norm_forces_closed_form_equals_the_6x6_solve(problem, configs):
    out = problem.forward(configs)
    terms = problem.terms_from(configs, out['feet'], out['com'])
    for i in range(len(configs)):
        feet, com = out['feet'][i], out['com'][i]
        a = np.zeros((6, 12))
        for k in range(4):
            a[:3, 3 * k:3 * k + 3] = np.eye(3)
            a[3:, 3 * k:3 * k + 3] = pin.skew(feet[k] - com)
        w = np.concatenate([-problem.mass * problem.gravity, np.zeros(3)])
        f = a.T @ np.linalg.solve(a @ a.T, w)
        assert np.abs(f.reshape(4, 3) - terms['forces'][i]).max() < 1e-9
        assert np.abs(a @ terms['forces'][i].ravel() - w).max() < 1e-9   # static equilibrium


def test_flat_ground_needs_no_adhesion(configs):
    flat = MagnetoProblem(inclination_deg=0.0)
    terms = flat.cost_terms(configs)
    assert terms['J_f_hard'].max() == 0.0
    assert terms['J_f'].max() < 1e-9


def test_ceiling_needs_at_least_a_quarter_of_the_weight_per_magnet(configs):
    terms = MagnetoProblem(inclination_deg=180.0).cost_terms(configs)
    assert terms['J_f_hard'].min() >= problem_weight() / 4 - 1e-9


def problem_weight():
    return 5.78357 * GRAVITY


def test_incline_lower_bound_and_uphill_shift(problem, configs):
    b = problem.inclination
    bound = problem_weight() / 4 * (math.sin(b) / FRICTION - math.cos(b))
    assert problem.cost_terms(configs)['J_f_hard'].min() >= bound - 1e-9
    # Shifting the body uphill (x) lowers the required pull (docs/MAGNETO.md).
    task = np.concatenate([problem.nominal_feet.ravel(), [0.07]])
    q = np.tile(problem.stance_configuration(0.07), (5, 1))
    q[:, 0] = np.linspace(0.0, 0.06, 5)
    q = problem.refine_legs(q, np.tile(task, (5, 1)))
    assert np.all(np.diff(problem.cost_terms(q)['J_f_hard']) < 0)


def test_degenerate_footprint_cannot_hold(problem):
    # All four feet on one line: no moment about that line can be balanced.
    feet = np.array([[[0.3, 0.0, 0.0], [0.1, 0.0, 0.0], [-0.1, 0.0, 0.0], [-0.3, 1e-7, 0.0]]])
    com = np.array([[0.0, 0.02, 0.12]])
    q = problem.stance_configuration(0.07)[None]
    assert problem.terms_from(q, feet, com)['J_f_hard'][0] > MAGNET_FORCE


def test_cost_is_inf_exactly_past_a_gimbal_limit_and_never_raises(problem):
    # Uniform over the box most stances put a gimbal past its limit: the barrier's
    # -log(4u(1-u)) raised 'math domain error' there (one row) or gave NaN (batches).
    q = np.random.default_rng(21).uniform(problem.lower, problem.upper, (300, 18))
    with np.errstate(all='raise'):
        batch = problem.cost(q)
    rows = np.array([problem.cost(row[None])[0] for row in q])
    past = ~problem.feasibility(q)['gimbals']
    assert 0 < past.sum() < len(q)
    for costs in (batch, rows):
        assert np.array_equal(np.isinf(costs), past) and np.all(costs > 0)
    for row in q[past][:20]:
        assert any(v.startswith('gimbal') and 'exceeded by' in v for v in problem.violations(row))


def test_violations_name_the_clearance_and_the_magnet_force(problem):
    low = problem.example_configuration()
    low[4] = 0.4   # pitched nose-down at 0.07 m: the front corners dip under the clearance
    found = problem.violations(low)
    assert [v for v in found if v.startswith('body clearance')], found
    corners = low[5] + (problem.body_rotation(low) @ np.array(BODY_CORNERS).T)[2]
    assert f'{corners.min():.3g} m below {CLEARANCE:g} m' in ' '.join(found)
    # The nominal stance needs about 6.3 N of adhesion: a 5 N magnet cannot hold it.
    stance = problem.example_configuration()
    need = problem.cost_terms(stance)['J_f_hard'][0]
    assert 5.0 < need < MAGNET_FORCE and problem.violations(stance) == []
    weak = MagnetoProblem(magnet_force=5.0).violations(stance)
    assert weak == [f'required adhesion {need:.4g} N above the magnet force 5 N']


def test_example_configuration_is_the_feasible_nominal_stance(problem):
    q = problem.example_configuration()
    assert q[5] == EXAMPLE_HEIGHT and np.all(q[:5] == 0.0)
    feet, normals = problem.foot_placements(q[None])
    assert np.abs(feet[0] - problem.nominal_feet).max() < 1e-12
    assert np.abs(normals[0] - [0.0, 0.0, 1.0]).max() < 1e-12
    assert problem.feasibility(q[None])['all'][0] and problem.violations(q) == []
    assert np.isfinite(problem.cost(q[None])[0])


def test_left_right_mirror_has_the_same_cost(problem, configs):
    mirror = configs.copy()
    mirror[:, [1, 2, 3]] *= -1                     # y, yaw, roll
    legs = mirror[:, 6:].reshape(-1, 4, 3)[:, [1, 0, 3, 2]]   # AR<->AL, BR<->BL
    legs[..., 0] *= -1                             # coxa angles mirror
    mirror[:, 6:] = legs.reshape(-1, 12)
    a, b = problem.cost_terms(configs, 'numpy'), problem.cost_terms(mirror, 'numpy')
    for k in ('J', 'J_f', 'J_f_hard', 'posture', 'barrier', 'gimbal'):
        assert np.abs(a[k] - b[k]).max() < 1e-9, k


# ---- IPOPT and the shipped model -------------------------------------------------------

@pytest.fixture(scope='module')
def ipopt(problem):
    from loink_ros.baselines.magneto_ipopt import MagnetoIpopt
    return MagnetoIpopt(problem)


def test_ipopt_solves_the_nominal_target(problem, ipopt):
    task = np.concatenate([problem.nominal_feet.ravel(), [0.07]])
    result = ipopt.solve(task)
    assert result.success, result.status
    assert np.abs(problem.task(result.q)[0] - task).max() < 1e-6
    assert problem.feasibility(result.q, tol=1e-6)['all'][0]
    assert result.cost == pytest.approx(problem.cost(result.q)[0], rel=1e-9)
    # Interior optimum: uphill shift, a clear margin to every gimbal limit.
    assert result.q[0] > 0.005
    gimbals = problem.forward(result.q)['gimbal_angles'][0]
    assert np.all(np.minimum(gimbals - problem.gimbal_lower, problem.gimbal_upper - gimbals) > 0.1)


def test_shipped_model_against_ipopt(problem, ipopt):
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.tools.bench.magneto import LOInKMagneto, held_out_targets
    model = load_model('magneto')
    assert model.problem['joint_names'] == problem.joint_names
    assert model.problem['inclination_deg'] == problem.inclination_deg
    loink = LOInKMagneto(model, problem)
    ratios = []
    for task in held_out_targets(problem, 20, seed=4321):
        q = loink.solve(task, refine=True)
        feet, _ = problem.foot_placements(q[None])
        assert np.abs(feet[0] - task[:12].reshape(4, 3)).max() < 1e-9
        assert problem.feasibility(q[None])['all'][0]
        reference = ipopt.solve(task)
        assert reference.success
        ratios.append(problem.cost(q)[0] / reference.cost)
    assert np.mean(ratios) < 1.05 and np.max(ratios) < 1.15


def test_plot_magneto(tmp_path, problem):
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    from loink_ros.tools.plots.magneto import magneto_postures
    out = tmp_path / 'fig6.png'
    magneto_postures(LOInKSolver(load_model('magneto'), problem), out)
    assert out.stat().st_size > 10_000
