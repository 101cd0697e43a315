"""`loink bench public-paths`: whole Cartesian paths in the style of the public IK-path
benchmarks (CppFlow, IKFlow, TORM: long lines through the workspace, circles and squares of
0.3-0.9 m, tilts of the tool in place), planned as `~/compute_cartesian_path` plans them (a
free start, the service's smoothing and default step bound, waypoints 5 mm apart), against
MoveIt's greedy CartesianInterpolator with KDL through the same waypoints from the plan's start
(moveit_resources' Panda, tip panda_link8), and a path that needs a reconfiguration by
construction.

Paths: a centre in front of the arm (x 0.3-0.6 m, y +/-0.3 m, z 0.2-0.6 m), the tool pointing
down, turned about the vertical at random and tilted by up to 0.4 rad; lines of 0.3-0.9 m through
it in random directions; circles of 0.3-0.9 m diameter and squares of 0.3-0.9 m side in random
planes through it; tilts of the tool about a random horizontal axis through its point, 0 to +a,
to -a, back to 0, a of 0.4-1.0 rad. Some leave the arm's reach: both methods then stop, and the
plan says why.

Per family and method: paths completed, valid by CppFlow's criteria (path_shape.py: here the
step, every answer being on its pose within 1e-5 m and 1e-4 rad), the largest joint step, the
joint-space length and the roughness of the completed paths; the plan against KDL on the paths
both completed (largest step and length no larger: share, per-path ratios with min and max,
ratio of the means; the model's mean cost); why each plan that stops stops; planning time
per waypoint (the plan and its smoothing; not the timing).

The reconfiguration path: the tip carried once around the base's axis at its start posture's
radius and height, the tool turning with it (the start: joint 1 at 0). Joint 1 spans 332 deg,
so no continuous path goes round; the plan must stop with the reason "no configuration reaches
it ... from pose k - 1", naming the joint at its limit, and KDL's greedy interpolator stops or
jumps.
"""

from __future__ import annotations

import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from scipy.spatial.transform import Rotation
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.cartesian_path import (
    UNTIMED_MAX_JOINT_STEP,
    UNTIMED_SMOOTHING,
    CartesianPlanner,
    PathRequest,
    interpolate,
)
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.tools.bench import moveit_cartesian, path_shape
from loink_ros.tools.bench.cartesian import _link, _tip
from loink_ros.tools.bench.timing import load_average

SEED = 20261207
FAMILIES = ('lines', 'circles', 'squares', 'tilts')
DEFAULT_PATHS = 25
# Waypoint spacing (m), and of the tilts (rad): MoveIt's interpolation of the plan's request.
SPACING = 0.005
TILT_SPACING = 3.5 * SPACING
# The front of the arm where the paths' centres lie (m), and the tool's tilt from down (rad).
CENTRE_LOW, CENTRE_HIGH = np.array([0.3, -0.3, 0.2]), np.array([0.6, 0.3, 0.6])
TILT = 0.4
SIZES = (0.3, 0.9)


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _horizontal(rng: np.random.Generator) -> np.ndarray:
    angle = rng.uniform(-np.pi, np.pi)
    return np.array([np.cos(angle), np.sin(angle), 0.0])


def _centre(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A centre in front of the arm and the tool's orientation there (pointing down)."""
    down = Rotation.from_euler('x', np.pi)
    tilt = Rotation.from_rotvec(TILT * rng.uniform() * _horizontal(rng))
    turn = Rotation.from_euler('z', rng.uniform(-np.pi, np.pi))
    return rng.uniform(CENTRE_LOW, CENTRE_HIGH), (tilt * turn * down).as_matrix()


def _polyline(corners: list[np.ndarray], rotation: np.ndarray) -> list[PoseTarget]:
    """Poses SPACING apart along the corners, the orientation fixed."""
    out = [PoseTarget(corners[0], rotation)]
    for a, b in zip(corners[:-1], corners[1:]):
        steps = max(1, int(np.ceil(np.linalg.norm(b - a) / SPACING)))
        out += [PoseTarget(a + (b - a) * t, rotation) for t in np.linspace(0.0, 1.0, steps + 1)[1:]]
    return out


def family_paths(family: str, count: int, seed: int = SEED) -> list[list[PoseTarget]]:
    """`count` paths of `family` (module docstring), the group tip's (panda_link8's) poses."""
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    out = []
    for _ in range(count):
        centre, rotation = _centre(rng)
        size = rng.uniform(*SIZES)
        a = _unit(rng)
        b = np.cross(a, _unit(rng))
        b /= np.linalg.norm(b)
        if family == 'lines':
            out.append(_polyline([centre - 0.5 * size * a, centre + 0.5 * size * a], rotation))
        elif family == 'circles':
            angles = np.linspace(0.0, 2.0 * np.pi, int(np.ceil(np.pi * size / SPACING)) + 1)
            out.append([PoseTarget(centre + 0.5 * size * (np.cos(t) * a + np.sin(t) * b), rotation)
                        for t in angles])
        elif family == 'squares':
            h = 0.5 * size
            corners = [centre + h * (sa * a + sb * b)
                       for sa, sb in ((-1, -1), (1, -1), (1, 1), (-1, 1), (-1, -1))]
            out.append(_polyline(corners, rotation))
        else:
            axis = _horizontal(rng)
            angle = rng.uniform(0.4, 1.0)
            steps = int(np.ceil(angle / TILT_SPACING))
            sweep = np.concatenate([np.linspace(0, angle, steps + 1), np.linspace(angle, -angle, 2 * steps + 1)[1:],
                                    np.linspace(-angle, 0, steps + 1)[1:]])
            out.append([PoseTarget(centre, Rotation.from_rotvec(t * axis).as_matrix() @ rotation)
                        for t in sweep])
    return out


def reconfiguration_path(problem, offset) -> tuple[np.ndarray, list[PoseTarget]]:
    """The start (joint 1 at 0) and the group tip's poses once around the base's axis, the tool
    turning with them, a degree apart."""
    q0 = np.array([0.0, 0.2, 0.0, -1.8, 0.0, 2.0, 0.785])
    start = _link(PoseTarget(*problem.tip_pose(q0)), offset)
    turns = [Rotation.from_euler('z', t).as_matrix() for t in np.radians(np.arange(0.0, 361.0))]
    return q0, [PoseTarget(r @ start.position, r @ start.rotation) for r in turns]


def _planned(planner: CartesianPlanner, poses: list[PoseTarget], offset,
             start: np.ndarray | None = None) -> tuple[object, float]:
    """The service's plan of the group tip's `poses` (its interpolation at SPACING, its
    smoothing and step bound), and its time per pose (ms)."""
    first, rest = (poses[0], poses[1:])
    dense = [_tip(p, offset) for p in interpolate(first, rest, SPACING)[0]]
    if start is not None:
        dense[0] = PoseTarget(*planner.problem.tip_pose(start))
    began = time.perf_counter()
    plan = planner.plan(PathRequest(dense, start, jump=np.full(planner.problem.dim, UNTIMED_MAX_JOINT_STEP),
                                    smoothing=UNTIMED_SMOOTHING))
    return plan, 1e3 * (time.perf_counter() - began) / len(dense)


def _case_line(start: np.ndarray, poses: list[PoseTarget]) -> str:
    body = ' '.join(moveit_cartesian._pose_text(p.position, p.rotation) for p in poses)
    return f'waypoints {" ".join(f"{v:.17g}" for v in start)} {len(poses)} {body}'


def _kind(reason: str) -> str:
    """A stop's reason without its pose numbers."""
    for kind in ('beyond the arm\'s reach', 'unreachable', 'no configuration reaches it'):
        if kind in reason:
            return kind
    return reason


def _family(arm, problem, planner, offset, paths, folder: Path) -> dict:
    """One family: the plans, KDL's interpolator from each plan's start, their figures."""
    plans, starts, ms, reasons = [], [], [], {}
    for poses in tqdm(paths, unit='path', leave=False):
        plan, per_pose = _planned(planner, poses, offset)
        ms.append(per_pose)
        plans.append(plan.q if plan.complete else None)
        starts.append(plan.q[0] if len(plan.q) else None)
        if plan.reason:
            reasons[_kind(plan.reason)] = reasons.get(_kind(plan.reason), 0) + 1
    cases = [_case_line(q0, poses[1:]) for q0, poses in zip(starts, paths) if q0 is not None]
    results = iter(moveit_cartesian.run_plugin(arm, moveit_cartesian.KDL, moveit_cartesian.kdl_parameters(),
                                               cases, folder) if cases else [])
    kdl = [None if q0 is None else _completed(next(results)) for q0 in starts]
    return {'paths': len(plans),
            'plan': {**_shape(plans), 'stopped_because': reasons,
                     'ms_per_waypoint': path_shape.spread(np.array(ms))},
            'interpolator_kdl': _shape(kdl),
            'plan_against_interpolator_kdl': {**path_shape.compared(plans, kdl),
                                              'mean_cost': _costs(problem, plans, kdl)}}


def _costs(problem, plans: list, kdl: list) -> dict:
    """The model's mean cost over the paths both completed, plan and KDL."""
    both = [(a, b) for a, b in zip(plans, kdl) if a is not None and b is not None]
    if not both:
        return {}
    return {'plan': float(np.mean([problem.cost(a).mean() for a, _ in both])),
            'interpolator_kdl': float(np.mean([problem.cost(b).mean() for _, b in both]))}


def _completed(result: dict) -> np.ndarray | None:
    return np.array(result['states']) if result['fraction'] >= 1.0 - 1e-12 else None


def _shape(paths: list[np.ndarray | None]) -> dict:
    """Completed share, valid share (CppFlow's step, over all paths), the completed ones' shape."""
    done = [q for q in paths if q is not None]
    valid = sum(path_shape.largest_step_deg(q) < path_shape.VALID_STEP_DEG for q in done)
    return {'completed': len(done) / len(paths), 'valid': valid / len(paths),
            **path_shape.shape_figures(done)}


def _reconfiguration(arm, problem, planner, offset, folder: Path) -> dict:
    """The plan and KDL's interpolator once around the base (module docstring)."""
    q0, poses = reconfiguration_path(problem, offset)
    plan, ms = _planned(planner, poses, offset, q0)
    last = plan.q[plan.reached - 1]
    at_limit = [name for name, v, lo, hi in zip(problem.joint_names, last, problem.lower, problem.upper)
                if min(v - lo, hi - v) <= 1e-6]
    kdl = moveit_cartesian.run_plugin(arm, moveit_cartesian.KDL, moveit_cartesian.kdl_parameters(),
                                      [_case_line(q0, poses[1:])], folder)[0]
    states = np.array(kdl['states'])
    return {'waypoints': len(poses), 'plan': {
                'complete': plan.complete, 'reason': plan.reason, 'joints_at_a_limit_where_it_stops': at_limit,
                'largest_step_deg': path_shape.largest_step_deg(plan.q[:plan.reached]), 'ms_per_waypoint': ms},
            'interpolator_kdl': {'fraction': kdl['fraction'],
                                 'largest_step_deg': path_shape.largest_step_deg(states)}}


def run(count: int = DEFAULT_PATHS, seed: int = SEED) -> dict:
    """Each family's `count` paths and the reconfiguration path, the Panda (module docstring)."""
    model = load_model('panda_full')
    problem = problem_for_model(model)
    planner = CartesianPlanner(PoseSolver(LOInKSolver(model, problem)), velocity_limits(problem))
    out = {'robot': 'panda_full; MoveIt: moveit_resources Panda, panda_arm, tip panda_link8', 'seed': seed,
           'spacing_m': SPACING, 'step_bound_rad': UNTIMED_MAX_JOINT_STEP, 'smoothing': UNTIMED_SMOOTHING,
           'valid': f'every waypoint on its pose, no joint stepping {path_shape.VALID_STEP_DEG} deg or more',
           'load_average_before': load_average(), 'families': {}}
    with threadpool_limits(1), TemporaryDirectory() as folder:
        arm = moveit_cartesian.panda()
        offset = problem.rigid_links()[arm.tip]
        for family in FAMILIES:
            out['families'][family] = _family(arm, problem, planner, offset, family_paths(family, count, seed),
                                              Path(folder))
        out['reconfiguration'] = _reconfiguration(arm, problem, planner, offset, Path(folder))
    out['load_average_after'] = load_average()
    return out
