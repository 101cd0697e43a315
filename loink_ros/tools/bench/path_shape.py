"""How a joint path moves, by the criteria the public IK-path benchmarks report (CppFlow,
IKFlow and TORM call a path valid when every waypoint is within 0.1 mm and 0.1 deg of its
pose, inside the joint limits, and no joint moves 7 deg or more between consecutive
waypoints): the largest joint step, the joint-space length and the roughness of completed
paths, and two methods compared on the paths both completed. The benches' answers are on
their poses within 1e-5 m and 1e-4 rad and inside the limits, so of those criteria only the
step can fail."""

import numpy as np

# CppFlow's largest joint step between consecutive waypoints of a valid path (deg).
VALID_STEP_DEG = 7.0


def largest_step_deg(q: np.ndarray) -> float:
    """The largest step of any joint between consecutive configurations (deg)."""
    return float(np.degrees(np.abs(np.diff(q, axis=0)).max())) if len(q) > 1 else 0.0


def joint_length(q: np.ndarray) -> float:
    """The path's length in joint space: its steps' Euclidean norms summed (rad)."""
    return float(np.linalg.norm(np.diff(q, axis=0), axis=1).sum()) if len(q) > 1 else 0.0


def roughness(q: np.ndarray) -> float:
    """The mean squared norm of the second differences (rad^2): 0 for a path at an even pace
    along a joint-space line."""
    return float(np.mean(np.sum(np.diff(q, 2, axis=0) ** 2, axis=1))) if len(q) > 2 else 0.0


def shape_figures(paths: list[np.ndarray]) -> dict:
    """The completed `paths`' largest steps, valid share, lengths and roughness."""
    if not paths:
        return {'paths': 0}
    steps = np.array([largest_step_deg(q) for q in paths])
    return {'paths': len(paths), 'valid_by_the_step_share': float(np.mean(steps < VALID_STEP_DEG)),
            'largest_step_deg': spread(steps),
            'joint_length_rad': spread(np.array([joint_length(q) for q in paths])),
            'roughness_rad2': spread(np.array([roughness(q) for q in paths]))}


def compared(ours: list[np.ndarray | None], theirs: list[np.ndarray | None]) -> dict:
    """Ours against theirs on the paths both completed (None: not completed): per path, the
    ratio of the largest steps and of the lengths, and how often ours is no larger."""
    both = [(a, b) for a, b in zip(ours, theirs) if a is not None and b is not None]
    if not both:
        return {'paths': 0}
    step = np.array([(largest_step_deg(a), largest_step_deg(b)) for a, b in both])
    length = np.array([(joint_length(a), joint_length(b)) for a, b in both])
    return {'paths': len(both),
            'largest_step_no_larger_share': float(np.mean(step[:, 0] <= step[:, 1] + 1e-9)),
            'length_no_longer_share': float(np.mean(length[:, 0] <= length[:, 1] + 1e-9)),
            'largest_step_ratio': ratios(step), 'length_ratio': ratios(length)}


def ratios(pairs: np.ndarray) -> dict:
    """Per-pair ratios (first over second; pairs with a zero second left out) and the ratio
    of the means."""
    keep = pairs[:, 1] > 0.0
    r = pairs[keep, 0] / pairs[keep, 1]
    return {'median': float(np.median(r)), 'min': float(r.min()), 'max': float(r.max()),
            'of_means': float(pairs[:, 0].mean() / pairs[:, 1].mean())} if len(r) else {}


def spread(values: np.ndarray) -> dict:
    """Median, p95 and largest of values; empty for none."""
    if not len(values):
        return {}
    return {'median': float(np.median(values)), 'p95': float(np.percentile(values, 95)),
            'max': float(values.max())}
