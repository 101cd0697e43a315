"""Messages <-> core values: task vectors, seeds, solutions, model info."""

import math
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import JointState

from loink_msgs.msg import IKSolution
from loink_msgs.srv import GetModelInfo
from loink_ros.core.runtime.errors import ErrorCode, SolverError
from loink_ros.core.runtime.model_file import ModelFile
from loink_ros.core.runtime.solution import Solution

# Longest array a request may carry (task, latent, seed, a robot state's joint arrays); far
# above any robot's joint count.
MAX_ARRAY_LENGTH = 1024


def bounded(values: Sequence, what: str) -> Sequence:
    """The array unchanged, or REQUEST_TOO_LARGE before any work is spent on it."""
    if len(values) > MAX_ARRAY_LENGTH:
        raise SolverError(ErrorCode.REQUEST_TOO_LARGE,
                          f'{what} has {len(values)} values; the limit is {MAX_ARRAY_LENGTH}')
    return values


def joint_index(names: Sequence[str], positions: Sequence[float], what: str) -> dict[str, int]:
    """Name -> index of a JointState's lists; ValueError when they do not pair up."""
    if len(names) != len(positions):
        raise ValueError(f'{what} has {len(names)} names but {len(positions)} positions')
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        raise ValueError(f'{what} names a joint twice')
    return index


def seed_positions(seed: JointState, joint_names: Sequence[str]) -> np.ndarray | None:
    """The model's joints picked from a seed JointState (any order, extra joints ignored).

    An empty seed is no seed. A seed that lacks one of the model's joints is refused.
    """
    names, positions = bounded(seed.name, 'seed.name'), bounded(seed.position, 'seed.position')
    if not names and not positions:
        return None
    try:
        index = joint_index(names, positions, 'seed')
    except ValueError as err:
        raise SolverError(ErrorCode.INVALID_SEED_STATE, str(err)) from None
    missing = [name for name in joint_names if name not in index]
    if missing:
        raise SolverError(ErrorCode.INVALID_SEED_STATE,
                          f'seed lacks joints {missing}; the model has {list(joint_names)}')
    return np.array([positions[index[name]] for name in joint_names])


def stamp_seconds(stamp: Time) -> float:
    """A header stamp in seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def joint_state(names: Sequence[str], q: np.ndarray, stamp: Time) -> JointState:
    """A JointState of the model's joints."""
    msg = JointState(name=list(names), position=q.tolist())
    msg.header.stamp = stamp
    return msg


def solution_msg(solution: Solution, names: Sequence[str], stamp: Time) -> IKSolution:
    """A core Solution as an IKSolution message; cost +inf (infeasible) is sent as it is."""
    has_cost = not math.isnan(solution.cost)
    return IKSolution(joint_state=joint_state(names, solution.q, stamp),
                      predicted_cost=solution.predicted_cost,
                      cost=solution.cost if has_cost else math.nan, has_cost=has_cost,
                      task_error=solution.task_error, latent=solution.latent.tolist())


def is_base_frame(frame_id: str, base_frame: str) -> bool:
    """'' and the base frame, with or without a leading '/', mean the base frame."""
    return frame_id.lstrip('/') in ('', base_frame)


def model_info(model: ModelFile) -> GetModelInfo.Response:
    """The GetModelInfo answer; Lipschitz bounds are the network's certified mu and nu."""
    problem, network = model.problem, model.meta['network']
    return GetModelInfo.Response(
        model_name=model.name, model_version=model.version, robot_name=problem['robot'],
        base_frame=problem['base_frame'], tip_frame=problem['tip_frame'],
        joint_names=list(problem['joint_names']),
        joint_lower=[float(v) for v in problem['joint_lower']],
        joint_upper=[float(v) for v in problem['joint_upper']],
        task_names=list(problem['task_names']), task_dim=model.task_dim,
        task_lower=model.task_lower.tolist(), task_upper=model.task_upper.tolist(),
        latent_dim=model.latent_dim, cost_name=problem['cost_name'],
        lipschitz_lower=float(network['mu']), lipschitz_upper=float(network['nu']))
