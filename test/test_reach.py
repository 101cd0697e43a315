"""core/problems/arms/reach.py in process: the certified reach is an upper bound of every
configuration's distance from the base origin, close to the largest one, for the tip and the
links rigid with it; far poses are caught, near ones are not."""

import numpy as np
import pytest

from loink_ros.core.problems.arms import reach as reach_module
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.reach import ReachBound, reach
from loink_ros.core.problems.registry import make_problem


def distances(problem: KinematicProblem, frame: str, q: np.ndarray) -> np.ndarray:
    """|frame - base origin| at configurations q (N, n), by Pinocchio."""
    import pinocchio as pin
    model, data = problem.model, problem.model.createData()
    frame_id = model.getFrameId(frame)
    origin = np.zeros(3) if problem.base_placement is None else problem.base_placement.translation
    out = []
    for row in q:
        pin.framesForwardKinematics(model, data, problem.pinocchio_configuration(row))
        out.append(np.linalg.norm(data.oMf[frame_id].translation - origin))
    return np.array(out)


def configurations(problem: KinematicProblem, count: int, seed: int) -> np.ndarray:
    """Uniform ones, and as many with each joint at one of its limits or uniform (the
    farthest configurations of arms often sit at a limit)."""
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(problem.lower, problem.upper, (count, problem.dim))
    corners = np.where(rng.random((count, problem.dim)) < 0.5, problem.lower, problem.upper)
    mixed = np.where(rng.random((count, problem.dim)) < 0.5, corners,
                     rng.uniform(problem.lower, problem.upper, (count, problem.dim)))
    return np.vstack([uniform, mixed])


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_the_reach_bounds_every_configuration_and_is_tight(name):
    problem = make_problem(name)
    q = configurations(problem, 20_000, 7)
    for frame in sorted(problem.rigid_links()):
        bound = reach(problem, frame).bound
        farthest = distances(problem, frame, q).max()
        assert farthest <= bound, frame
        # Within 0.5 % of the farthest sampled (the search stops 0.1 mm above a value reached).
        assert bound <= 1.005 * farthest, (frame, bound, farthest)
    assert reach(problem).bound == reach(problem, problem.tip_frame).bound


def test_the_shipped_arms_reach_as_measured():
    """The figures docs/NODE.md quotes (panda_full: 1.191 m, xarm7_full: 1.039 m)."""
    panda, xarm = reach(make_problem('panda_full')), reach(make_problem('xarm7_full'))
    assert 1.185 <= panda.reached <= panda.bound <= 1.1912
    assert 1.035 <= xarm.reached <= xarm.bound <= 1.0393


def test_the_pivot_is_the_shoulder_and_only_the_elbow_and_wrist_are_searched():
    searched = ReachBound(make_problem('xarm7_full'), 'link_eef')
    assert searched.centre == pytest.approx([0.0, 0.0, 0.267])
    # joint1..3 turn about axes through the shoulder and joint7 about one through link_eef.
    assert (searched.upper > searched.lower).tolist() == [False] * 3 + [True] * 3 + [False]
    # The URDF's 1.5708 rad misses pi / 2: the slack covers it, a few micrometres.
    assert 0.0 < searched.slack < 1e-5


@pytest.mark.parametrize('pivoted', [True, False])
def test_a_search_cut_short_still_bounds(monkeypatch, pivoted):
    """Out of budget, the bound is looser, never below a configuration's distance."""
    monkeypatch.setattr(reach_module, 'BUDGET', 3000)
    problem = make_problem('xarm7_full')
    bound = ReachBound(problem, 'link_eef', pivoted).reach(np.random.default_rng(0)).bound
    farthest = distances(problem, 'link_eef', configurations(problem, 5000, 5)).max()
    assert farthest <= bound


SLIDER = """<?xml version="1.0"?>
<robot name="slider">
  <link name="root"/><link name="base"/><link name="a"/><link name="b"/><link name="c"/>
  <link name="tip"/>
  <joint name="mount" type="fixed"><parent link="root"/><child link="base"/>
    <origin xyz="0.05 0 -0.02" rpy="0 0 0.3"/></joint>
  <joint name="turn" type="revolute"><parent link="root"/><child link="a"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="a"/><child link="b"/>
    <origin xyz="0.1 0 0" rpy="0 0.4 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.1" upper="0.5" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="continuous"><parent link="b"/><child link="c"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="flange" type="fixed"><parent link="c"/><child link="tip"/>
    <origin xyz="0 0 0.1"/></joint>
</robot>
"""


class Slider(KinematicProblem):
    """A turn, a slide and a continuous wrist, the base frame off the URDF root."""

    def __init__(self, urdf):
        super().__init__(urdf, 'tip', 'xyz', name='slider', cost_name='zero',
                         base_frame='base')

    def cost(self, q):
        return np.zeros(len(np.atleast_2d(q)))


def test_slides_continuous_joints_and_a_moved_base_are_bounded(tmp_path):
    urdf = tmp_path / 'slider.urdf'
    urdf.write_text(SLIDER)
    problem = Slider(urdf)
    assert problem.base_placement is not None
    result = reach(problem)
    farthest = distances(problem, 'tip', configurations(problem, 20_000, 3)).max()
    assert farthest <= result.bound <= 1.01 * farthest, (result, farthest)


def farthest_found(problem: KinematicProblem, q: np.ndarray) -> float:
    """The largest tip distance after a local ascent from the 10 farthest of q: a
    configuration's, so the true reach is at least this."""
    from scipy.optimize import minimize
    start = q[np.argsort(distances(problem, problem.tip_frame, q))[-10:]]
    return max(-minimize(lambda x: -np.linalg.norm(problem.tip_position(x)), row,
                         bounds=list(zip(problem.lower, problem.upper)), method='L-BFGS-B').fun
               for row in start)


@pytest.mark.parametrize('name', ['panda_full', 'xarm7_full'])
def test_poses_1_percent_beyond_the_reach_are_caught(name):
    """With the node's default position tolerance (0.01 m) on top of the bound."""
    problem = make_problem(name)
    bound = reach(problem).bound
    farthest = farthest_found(problem, configurations(problem, 5000, 11))
    assert farthest <= bound < 1.01 * farthest - 0.01, (bound, farthest)
