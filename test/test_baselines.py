"""The baselines LOInK is measured against: the Magneto IPOPT variants (full and reduced
space, the rule that picks the strongest) and the single-start SLSQP of the Panda and planar3
benches."""

import numpy as np
import pytest

from loink_ros.baselines.ipopt_variants import (
    QUALIFY_FRACTION,
    REFERENCE,
    SAME_COST,
    TUNED,
    VARIANTS,
    agreement,
    strongest,
)
from loink_ros.baselines.magneto_ipopt import MagnetoIpopt
from loink_ros.baselines.magneto_reduced_ipopt import MagnetoReducedIpopt
from loink_ros.baselines.reference_optimizer import nominal_start, reference_optimum, single_start_optimum
from loink_ros.core.problems.arms.panda import PandaProblem
from loink_ros.core.problems.arms.planar3 import Planar3Problem
from loink_ros.core.problems.backends import casadi_ops
from loink_ros.core.problems.magneto.problem import MagnetoProblem
from loink_ros.tools.bench.magneto import held_out_targets
from loink_ros.tools.bench.magneto_verify import feasible_stances
from loink_ros.tools.bench.timing import speedups

SEED = 7


@pytest.fixture(scope='module')
def magneto() -> MagnetoProblem:
    return MagnetoProblem()


@pytest.fixture(scope='module')
def targets(magneto) -> np.ndarray:
    return held_out_targets(magneto, 4, SEED)


@pytest.fixture(scope='module')
def full_space(magneto, targets) -> list:
    ipopt = MagnetoIpopt(magneto)
    return [ipopt.solve(task) for task in targets]


def test_casadi_leg_ik_is_the_problems_closed_form(magneto, targets):
    import casadi as ca
    pose, feet = ca.SX.sym('pose', 6), ca.SX.sym('feet', 12)
    legs = ca.Function('legs', [pose, feet], [ca.vertcat(*magneto.legs.joints(
        casadi_ops(), [pose[i] for i in range(6)], [feet[i] for i in range(12)]))])
    rng = np.random.default_rng(SEED)
    for task in targets:
        for q in feasible_stances(magneto, task, 50, rng)[:3]:
            pose = q[:6] + rng.uniform(-0.01, 0.01, 6) * [1, 1, 1, 1, 1, 0]
            expected = magneto.refine_legs(np.concatenate([pose, q[6:]]), task)[0, 6:]
            np.testing.assert_allclose(np.array(legs(pose, task[:12])).ravel(), expected,
                                       atol=1e-12)


@pytest.mark.parametrize('gimbal_rows, options', [(True, {}), (False, TUNED)])
def test_reduced_space_reaches_the_full_space_optimum(magneto, targets, full_space,
                                                      gimbal_rows, options):
    reduced = MagnetoReducedIpopt(magneto, options=options, gimbal_rows=gimbal_rows)
    for task, full in zip(targets, full_space):
        result = reduced.solve(task)
        assert full.success and result.success, (full.status, result.status)
        assert result.cost == pytest.approx(full.cost, rel=SAME_COST)
        assert result.cost == pytest.approx(magneto.cost(result.q)[0], rel=1e-12)
        feet, _ = magneto.foot_placements(result.q[None])
        assert np.abs(feet[0] - task[:12].reshape(4, 3)).max() < 1e-9
        assert result.q[5] == task[12]
        assert magneto.feasibility(result.q, tol=1e-9)['all'][0]
        assert np.all((result.q >= magneto.lower) & (result.q <= magneto.upper))


def test_gimbal_rows_are_left_out_only_where_the_barrier_implies_them(magneto):
    assert MagnetoIpopt(magneto).n_ineq == 16 + 4
    assert MagnetoIpopt(magneto, gimbal_rows=False).n_ineq == 4
    unbarred = MagnetoProblem(w_gimbal=0.0)
    assert MagnetoIpopt(unbarred, gimbal_rows=False).n_ineq == 16 + 4


def test_the_variants_include_the_reference_and_a_reduced_space_nlp():
    names = [v.name for v in VARIANTS]
    assert len(set(names)) == len(names) and REFERENCE in names
    assert {v.space for v in VARIANTS} == {'full', 'reduced'}


def test_strongest_is_the_fastest_variant_that_reaches_the_reference_cost():
    n = 200
    reference = np.full(n, 7.0)
    ok, feasible = np.ones(n, bool), np.ones(n, bool)
    off_once = reference.copy()
    off_once[0] *= 1 + 10 * SAME_COST          # 1 target of 200 off: still qualifies
    off_often = reference.copy()
    off_often[:n // 10] *= 1 + 10 * SAME_COST  # 10 % off
    agrees = {'slow': agreement(reference, reference, ok, feasible),
              'fast_but_off': agreement(off_often, reference, ok, feasible),
              'middle': agreement(off_once, reference, ok, feasible)}
    assert np.mean(agrees['middle']) >= QUALIFY_FRACTION > np.mean(agrees['fast_but_off'])
    times = {'slow': np.full(n, 2.0), 'fast_but_off': np.full(n, 1.0), 'middle': np.full(n, 1.5)}
    assert strongest(times, agrees) == 'middle'
    infeasible = agreement(reference, reference, ok, np.zeros(n, bool))
    with pytest.raises(RuntimeError):
        strongest({'slow': times['slow']}, {'slow': infeasible})


def test_speedups_report_per_target_ratios_and_the_ratio_of_means():
    out = speedups(np.array([2.0, 2.0]), np.array([1.0, 3.0]))
    assert out['mean'] == pytest.approx((2.0 + 2.0 / 3.0) / 2)
    assert out['of_means'] == pytest.approx(1.0)
    assert (out['min'], out['max']) == pytest.approx((2.0 / 3.0, 2.0))


@pytest.mark.parametrize('make', [Planar3Problem, PandaProblem])
def test_single_start_optimiser_returns_a_feasible_optimum(make):
    problem = make()
    rng = np.random.default_rng(SEED)
    for y in problem.task(problem.sample(3, rng)):
        single = single_start_optimum(problem, y)
        assert single.starts == 1 and single.success, single.status
        assert single.task_error <= 1e-6
        assert np.linalg.norm(problem.task(single.q)[0] - y) <= 1e-6
        assert np.all((single.q >= problem.lower) & (single.q <= problem.upper))
        # A local optimum: no start of a multi-start run does better by more than round-off
        # unless it found another basin, and the single start is one of its starts.
        multi = reference_optimum(problem, y, starts=4, seed=SEED, initial=nominal_start(problem))
        assert multi.cost <= single.cost + 1e-9
        assert any(np.allclose(q, single.q, atol=1e-9) for q, _ in multi.optima)


def test_trac_ik_reaches_poses_inside_the_urdf_limits_and_agrees_with_pinocchio():
    import pinocchio as pin

    from loink_ros.baselines.trac_ik import TracIk
    panda = PandaProblem(limits=None)   # the URDF's limits
    trac = TracIk(panda)
    rng = np.random.default_rng(SEED)
    solved = 0
    for q in rng.uniform(panda.lower, panda.upper, size=(40, panda.dim)):
        pose = trac.tip_pose(q)
        np.testing.assert_allclose(pose[:3, 3], panda.tip_position(q), atol=1e-9)
        quaternion = pin.Quaternion(pose[:3, :3]).coeffs()   # x, y, z, w
        result = trac.solve(pose[:3, 3], quaternion, 0.5 * (panda.lower + panda.upper))
        if result.success:
            solved += 1
            assert np.all((result.q >= panda.lower) & (result.q <= panda.upper))
            reached = trac.tip_pose(result.q)
            assert np.linalg.norm(reached[:3, 3] - pose[:3, 3]) < 1e-4
            assert np.linalg.norm(panda.tip_position(result.q) - pose[:3, 3]) < 1e-4
            assert abs(np.trace(reached[:3, :3].T @ pose[:3, :3]) - 3.0) < 1e-6
    assert solved >= 36, solved
