"""Commands that never move a joint faster than its velocity limit."""

import numpy as np

ROUNDING = 1e-9


def limited_step(previous: np.ndarray, target: np.ndarray,
                 reach: np.ndarray) -> tuple[np.ndarray, bool]:
    """`previous` moved towards `target`, no joint by more than its `reach` (velocity limit x
    dt): the whole step scaled down where some joint would exceed it, so the command stays on
    the straight joint-space line to the target (inside the joint limits where both ends
    are). Returns the command and whether it was limited (a step over by rounding only,
    ROUNDING of the reach, is not)."""
    reach = np.maximum(reach, 0.0)
    step = np.asarray(target, float) - previous
    share = float(np.min(np.where(np.abs(step) > reach, reach / np.maximum(np.abs(step), 1e-300),
                                  1.0)))
    if share >= 1.0 - ROUNDING:
        return np.array(target, float), False
    return previous + share * step, True
