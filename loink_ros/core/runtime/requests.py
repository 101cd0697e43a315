"""Checks of request inputs, each failure a SolverError with a specific code."""

import numpy as np

from loink_ros.core.runtime.errors import ErrorCode, SolverError

MAX_SAMPLES = 10_000
# The spread is the variance c of the sampled latents z ~ N(0, c I) (the paper's c).
MAX_SPREAD = 100.0
# Largest |z_i| of a requested latent: 100 standard deviations of the widest sample
# (sqrt(MAX_SPREAD) = 10), so sampling never comes near it, yet far past any useful latent
# (with nu <= 10, |z| = 1000 lands >= 100 normalised units outside the [-1, 1] joint box).
# Bounded, the predicted cost 0.5 ||z||^2 + phi(y) stays finite.
MAX_LATENT_ABS = 100.0 * MAX_SPREAD ** 0.5


def finite_vector(value, length: int, what: str, wrong_length: ErrorCode) -> np.ndarray:
    """A float vector of the given length with only finite entries."""
    try:
        vector = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise SolverError(wrong_length, f'{what} is not a list of numbers') from None
    if vector.size != length:
        raise SolverError(wrong_length, f'{what} has {vector.size} values, expected {length}')
    if not np.all(np.isfinite(vector)):
        raise SolverError(ErrorCode.NON_FINITE_INPUT, f'{what} contains NaN or inf: {vector.tolist()}')
    return vector


def task_box(lower: np.ndarray, upper: np.ndarray, margin: float) -> tuple[np.ndarray, ...]:
    """(lower, upper, low, high): the training bounds and them widened by `margin` of their
    range, as task_in_box takes them."""
    slack = margin * (upper - lower)
    return lower, upper, lower - slack, upper + slack


def task_in_box(task, lower: np.ndarray, upper: np.ndarray, low: np.ndarray,
                high: np.ndarray) -> np.ndarray:
    """A task inside [low, high] (the training bounds [lower, upper] widened, task_box): a
    good task costs two comparisons (NaN fails them, and takes the checks that name what is
    wrong)."""
    try:
        y = np.asarray(task, dtype=float).reshape(-1)
        if y.size == len(low) and ((y >= low) & (y <= high)).all():
            return y
    except (TypeError, ValueError):
        pass
    if task is None or np.size(task) == 0:
        raise SolverError(ErrorCode.EMPTY_REQUEST, 'the request has no task')
    y = finite_vector(task, len(lower), 'task', ErrorCode.INVALID_TASK_DIMENSION)
    outside = (y < low) | (y > high)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise SolverError(ErrorCode.TASK_OUT_OF_BOUNDS,
                          f'task[{i}] = {y[i]:.6g} is outside the training bounds '
                          f'[{lower[i]:.6g}, {upper[i]:.6g}]')
    return y


def latent_vector(latent, length: int) -> np.ndarray:
    """The latent z, each |z_i| <= MAX_LATENT_ABS; empty or None means the optimum z = 0."""
    if latent is None or np.size(latent) == 0:
        return np.zeros(length)
    z = finite_vector(latent, length, 'latent', ErrorCode.INVALID_LATENT)
    beyond = np.abs(z) > MAX_LATENT_ABS
    if beyond.any():
        i = int(np.flatnonzero(beyond)[0])
        raise SolverError(ErrorCode.INVALID_LATENT, f'latent[{i}] = {z[i]:.6g} is beyond the '
                          f'bound |z_i| <= {MAX_LATENT_ABS:g}')
    return z


def sample_count(count) -> int:
    """A count in 1..MAX_SAMPLES."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
        raise SolverError(ErrorCode.INVALID_COUNT, f'count must be an integer, got {count!r}')
    if not 1 <= count <= MAX_SAMPLES:
        raise SolverError(ErrorCode.INVALID_COUNT, f'count = {count}, allowed 1..{MAX_SAMPLES}')
    return int(count)


def sample_spread(spread) -> float:
    """The spread: the variance c of z ~ N(0, c I), in [0, MAX_SPREAD] (std sqrt(c))."""
    try:
        c = float(spread)
    except (TypeError, ValueError):
        raise SolverError(ErrorCode.INVALID_SPREAD, f'spread must be a number, got {spread!r}') from None
    if not np.isfinite(c):
        raise SolverError(ErrorCode.NON_FINITE_INPUT, f'spread is {c}')
    if not 0.0 <= c <= MAX_SPREAD:
        raise SolverError(ErrorCode.INVALID_SPREAD, f'spread = {c:g}, allowed 0..{MAX_SPREAD:g}')
    return c
