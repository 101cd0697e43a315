"""The planar HSA robot's steady-state model (core/problems/hsa/statics.py) against jsrm."""
import dataclasses
import json

import numpy as np
import pytest
from conftest import JSRM_PROCESS, start_jsrm_one_segment

from loink_ros.core.problems.hsa.parameters import fpu_control
from loink_ros.core.problems.hsa.problem import HsaProblem
from loink_ros.core.problems.hsa.statics import HsaStatics

MM, DEG = 1e-3, np.pi / 180


def pose_mm_deg(statics: HsaStatics, phi) -> np.ndarray:
    return statics.end_effector(np.array([phi], float))[0] / [MM, MM, DEG]


@pytest.mark.parametrize('phi, expected', [
    ([0.0, 0.0], (0.0, 110.14, 0.0)),
    ([3.49, 3.49], (0.0, 144.50, 0.0)),
    ([3.49, 0.0], (44.74, 114.95, -37.93)),
    ([np.pi, np.pi / 2], (22.51, 130.52, -17.54)),
])
def test_one_segment_with_gravity_matches_jsrms_shipped_expressions(phi, expected):
    """jsrm's shipped one-segment model (planar_hsa_ns-1_nrs-2), FPU control parameters."""
    got = pose_mm_deg(HsaStatics(fpu_control(1)), phi)
    assert np.allclose(got[:2], expected[:2], atol=0.05), got
    assert abs(got[2] - expected[2]) <= 0.05, got


@pytest.fixture(scope='module')
def jsrm_one_segment(request):
    """jsrm_one_segment.py's JSON: started by conftest.py in the background at collection,
    or here when it was not."""
    process = request.config.stash.get(JSRM_PROCESS, None) or start_jsrm_one_segment()
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return json.loads(out)


@pytest.mark.parametrize('gravity', [[0.0, 9.81], [0.0, 0.0]])
def test_one_segment_agrees_with_jsrms_own_derivation(jsrm_one_segment, gravity):
    """Where jsrm's own closed forms balance, started beside our steady state: the same state
    and the same end-effector pose."""
    ours = HsaStatics(dataclasses.replace(fpu_control(1), g=np.array(gravity)))
    rows = jsrm_one_segment[json.dumps(gravity)]
    assert len(rows) == 6
    for row in rows:
        phi = np.array(row['phi'])
        assert np.max(np.abs(np.array(row['xi']) - ours.steady_state(phi[None])[0])) < 1e-9
        assert np.max(np.abs(np.array(row['pose']) - ours.end_effector(phi[None])[0])) < 1e-10


def test_a_stack_of_three_without_gravity_matches_the_stacked_poses():
    """phi = [max, 0] on every segment, no gravity: about (274, 158) mm with each cap along
    its platform, (234, 183) mm with jsrm's caps added in the world frame."""
    params = dataclasses.replace(fpu_control(3), g=np.zeros(2))
    phi = [params.phi_max, 0.0] * 3
    right = pose_mm_deg(HsaStatics(params), phi)
    as_jsrm = pose_mm_deg(HsaStatics(params, caps_in_world_frame=True), phi)
    assert np.allclose(right[:2], [274.0, 158.0], atol=0.5), right
    assert np.allclose(as_jsrm[:2], [234.0, 183.0], atol=0.5), as_jsrm
    assert right[2] == pytest.approx(as_jsrm[2], abs=1e-9)   # the caps move, they do not turn


def test_one_segment_is_the_same_in_both_cap_conventions():
    phi = np.random.default_rng(3).uniform(0.0, 3.0, (5, 2))
    assert np.allclose(HsaStatics(fpu_control(1)).end_effector(phi),
                       HsaStatics(fpu_control(1), caps_in_world_frame=True).end_effector(phi),
                       atol=1e-14)


def test_three_segments_at_rest_are_330_mm_long():
    weightless = HsaStatics(dataclasses.replace(fpu_control(3), g=np.zeros(2)))
    assert np.allclose(pose_mm_deg(weightless, [0.0] * 6), [0.0, 330.0, 0.0], atol=1e-9)
    hanging = pose_mm_deg(HsaStatics(fpu_control(3)), [0.0] * 6)
    assert abs(hanging[0]) < 1e-9 and 330.0 < hanging[1] < 332.0   # gravity along the axis stretches it


def test_swapping_each_segments_rods_mirrors_the_pose():
    statics = HsaStatics(fpu_control(3))
    phi = np.random.default_rng(5).uniform(0.0, statics.params.phi_max, (8, 6))
    mirrored = phi.reshape(8, 3, 2)[:, :, ::-1].reshape(8, 6)
    assert np.allclose(statics.end_effector(mirrored), statics.end_effector(phi) * [-1, 1, -1],
                       atol=1e-12)


def test_steady_state_balances_and_the_task_jacobian_is_exact():
    problem = HsaProblem()
    rng = np.random.default_rng(11)
    phi = rng.uniform(problem.lower, problem.upper, (4, problem.dim))
    xi = problem.statics.steady_state(phi)
    residual = np.asarray(problem.statics.residual.map(4)(xi.T, phi.T)).T
    assert np.abs(residual).max() <= 1e-12
    step = 1e-6
    for q in phi:
        numeric = np.stack([(problem.task(q + step * e) - problem.task(q - step * e))[0] / (2 * step)
                            for e in np.eye(problem.dim)], axis=1)
        assert np.allclose(problem.task_jacobian(q), numeric, atol=1e-7)


def test_the_cost_is_the_mean_squared_normalised_twist():
    problem = HsaProblem()
    assert problem.cost(problem.lower[None])[0] == 0.0
    assert problem.cost(problem.upper[None])[0] == pytest.approx(1.0)
    half = 0.5 * problem.upper
    assert problem.cost(half[None])[0] == pytest.approx(0.25)


@pytest.fixture(scope='module')
def reference():
    """IPOPT from 4 starts on the three-segment robot (reference.problem)."""
    from loink_ros.baselines.hsa_reference import HsaReference
    return HsaReference(HsaProblem(), starts=4)


def test_the_reference_finds_one_cheapest_answer_per_target(reference):
    """IPOPT on the statics from several starts: valid answers no costlier than the sampled
    twists that reached the target, and every start ends at the same optimum."""
    problem = reference.problem
    rng = np.random.default_rng(21)
    sampled = rng.uniform(problem.lower, problem.upper, (3, problem.dim))
    for q, target in zip(sampled, problem.task(sampled)):
        answer = reference.solve(target, rng)
        assert answer.valid and answer.position_error <= 1e-6 and answer.angle_error <= 1e-6
        assert np.all(answer.phi >= problem.lower) and np.all(answer.phi <= problem.upper)
        assert answer.cost <= problem.cost(q[None])[0] + 1e-9
        assert len(answer.optima) == 4 and np.abs(answer.optima - answer.phi).max() < 1e-6


def test_the_projection_reaches_the_target_inside_the_range():
    problem = HsaProblem()
    rng = np.random.default_rng(13)
    q = rng.uniform(0.3, problem.params.phi_max - 0.3, (5, problem.dim))
    targets = problem.task(q)
    for start, target in zip(q + rng.normal(0.0, 0.1, q.shape), targets):
        projected = problem.statics.project(start, target, problem.lower, problem.upper)
        assert np.all(projected >= problem.lower) and np.all(projected <= problem.upper)
        error = problem.task(projected[None])[0] - target
        assert np.linalg.norm(error[:2]) <= 1e-9 and abs(error[2]) <= 1e-9
    # A start beyond the range, near a solution with a twist close to 0: brought inside, and
    # still on the target (a local method: from far away it may stop at the bounds).
    reached = q[0].copy()
    reached[1] = 0.05
    target = problem.task(reached[None])[0]
    start = reached.copy()
    start[1] = -0.3
    edge = problem.statics.project(start, target, problem.lower, problem.upper)
    assert np.all(edge >= 0.0)
    assert np.linalg.norm(problem.task(edge[None])[0] - target) <= 1e-9


def test_the_refinement_reaches_the_references_least_effort_on_the_target(reference):
    """The SQP from a start 0.3 rad away (or beyond the range) lands on the reference's
    optimum: on the target to 1e-9, inside the range, no costlier than IPOPT's best."""
    problem = reference.problem
    rng = np.random.default_rng(31)
    sampled = rng.uniform(problem.lower, problem.upper, (4, problem.dim))
    for q, target in zip(sampled, problem.task(sampled)):
        best = reference.solve(target, rng)
        start = best.phi + rng.normal(0.0, 0.3, problem.dim)
        refined = problem.closed_form_refine(start, target)
        assert np.all(refined >= problem.lower) and np.all(refined <= problem.upper)
        assert np.abs(problem.task(refined[None])[0] - target).max() <= 1e-9
        assert problem.cost(refined[None])[0] <= best.cost * (1 + 1e-6)
        assert problem.cost(refined[None])[0] < problem.cost(q[None])[0]
