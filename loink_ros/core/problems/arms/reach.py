"""A certified upper bound of how far a link can be from the base frame's origin o over
every configuration inside the joint limits: a pose farther than that is unreachable, for
certain, before any search.

The pivot c is the last joint origin that no joint moves (on most arms the shoulder, where
the first two axes meet): |p - o| <= |c - o| + |p - c| (p: the link's position), tight when
the farthest configuration can point along c - o, as an arm can straight up. Joints before
the pivot move p and c together, and the next ones turn about axes through c (the upper
arm's own axis), so |p - c| depends on the others alone: the elbow and the wrist. Where the
farthest configuration cannot point along c - o, that bound is loose and `reach` searches
|p - o| itself too, over every joint but those turning about axes through o (slower).

Branch and bound over their box on f(q) = |p(q) - c|^2: on a sub-box of centre m and
half-widths h, Taylor's theorem with the remainder bounded by M >= |d2f / dqi dqj| over all
configurations gives f <= f(m) + sum |df/dqi(m)| hi + 1/2 sum Mij hi hj. The bound is second
order, so the boxes around the farthest configurations shrink until it is within TOLERANCE
of f(m), a value reached; boxes whose bound lies below the largest value reached are
dropped, the others halved along the joint that loosens their bound most.

M: with J_i = dp/dqi (a_i x (p - o_i) turning, a_i sliding), the derivative of J_j along a
turning joint i is a_i x J_j (i <= j) or a_j x J_i (i > j), along a sliding one 0, so
|d2f / dqi dqj| = 2 |J_i . J_j + (p - c) . dJ_j / dqi| <= 2 (s_i s_j + |p - c| s_max(i, j)),
s_i >= |J_i|: the chain's length beyond joint i (its placements' lengths, the slides'
largest travels, the link's offset) for a turning joint, 1 for a slide.
"""

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem

TOLERANCE = 1e-4  # m: the bound is at most this above the farthest distance reached ...
BUDGET = 500_000  # ... unless it would take more boxes than this (~1.5 s; the bound holds)
SAFETY = 1e-9  # relative: covers the rounding of the floating-point arithmetic
AXIS_SLACK = 1e-5  # m: an axis this close to a point counts as through it (plus the slack)
SAMPLES = 4096  # random configurations whose farthest distance starts the pruning
LOOSE = 0.01  # relative: a bound from the pivot this far above a distance reached is retried


@dataclass(frozen=True)
class ChainJoint:
    """One joint between the root and the link: its fixed placement in the parent joint's
    frame, its unit axis, whether it turns (else slides) and its index in the limits."""

    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    revolute: bool
    index: int


@dataclass(frozen=True)
class Reach:
    """The certified bound (m) and the largest distance found at a configuration (m): the
    true reach lies between them."""

    bound: float
    reached: float


def chain(problem: KinematicProblem, frame: str) -> tuple[list[ChainJoint], np.ndarray]:
    """The joints from the root to `frame`'s joint, root first, and the frame's position in
    that joint's frame."""
    model = problem.model
    placement = model.frames[model.getFrameId(frame)]
    neutral = pin.neutral(model)
    joints, j = [], placement.parentJoint
    while j != 0:
        joint = model.joints[j]
        data = joint.createData()
        joint.calc(data, neutral[joint.idx_q:joint.idx_q + joint.nq])
        motion = np.array(data.S).reshape(6)
        revolute = bool(np.linalg.norm(motion[3:]) > 0.0)
        axis = motion[3:] if revolute else motion[:3]
        fixed = model.jointPlacements[j]
        joints.append(ChainJoint(fixed.rotation.copy(), fixed.translation.copy(),
                                 axis / np.linalg.norm(axis), revolute, j - 1))
        j = model.parents[j]
    return joints[::-1], placement.placement.translation.copy()


def turns(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotation matrices (N, 3, 3) about a unit axis by each angle (N,) (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]],
                  [-axis[1], axis[0], 0.0]])
    sin, cos = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + sin * k + (1.0 - cos) * (k @ k)


class ReachBound:
    """The chain of one link, the centre c the search measures from, and the bounds of the
    derivatives; `reach` runs the search."""

    def __init__(self, problem: KinematicProblem, frame: str, pivoted: bool = True):
        """`pivoted`: c is the pivot (module note); else the base origin itself, every joint
        searched but those turning about axes through it."""
        self.joints, self.offset = chain(problem, frame)
        base = problem.base_placement
        self.origin = np.zeros(3) if base is None else base.translation.copy()
        index = [joint.index for joint in self.joints]
        self.lower, self.upper = problem.lower[index].copy(), problem.upper[index].copy()
        self.limits = (self.lower.copy(), self.upper.copy())
        if not self.joints:
            return
        self.centre, start, self.slack, self.far = self.find_centre(pivoted)
        self.speed = self.speed_bounds()
        # Joints before the pivot move p and c together, the next ones turn about axes
        # through c, the last may turn about one through the link: none of them changes
        # |p - c| (but for the slack); they stay at their lower limits.
        still = (np.arange(len(self.joints)) < start) | (self.speed == 0.0)
        self.upper[still] = self.lower[still]
        self.curvature = self.hessian_bound()

    def find_centre(self, pivoted: bool) -> tuple[np.ndarray, int, float, float]:
        """The centre c; the first joint that does not turn about an axis through c (nor
        come before the pivot); the slack; and a bound of |p - c| (the chain's length).

        The pivot is the last joint origin on the axes of all the joints before it, so that
        no configuration moves it. "On an axis" allows AXIS_SLACK (URDF angles such as
        1.5708 miss pi / 2 by 4e-6 rad): a turn about an axis at distance a from c moves c,
        or changes |p - c|, by at most 2 a; a is measured at the lower limits and grows by
        2 a' for each such joint between (a' its own distance); joints before both move
        them rigidly together."""
        axes, origins = self.frames_at_lower()

        def miss(i: int, point: np.ndarray) -> float:
            if not self.joints[i].revolute:
                return math.inf
            return float(np.linalg.norm(np.cross(axes[i], point - origins[i])))

        pivot = 0
        while pivoted and pivot + 1 < len(self.joints) and all(
                miss(i, origins[pivot + 1]) <= AXIS_SLACK for i in range(pivot + 1)):
            pivot += 1
        centre = origins[pivot] if pivoted else self.origin
        far = self.lengths()[pivot] + float(np.linalg.norm(origins[pivot] - centre))
        start = pivot
        while start < len(self.joints) and miss(start, centre) <= AXIS_SLACK:
            start += 1
        before = []  # joints before the pivot move c: from the pivot down
        for i in range(pivot - 1, -1, -1):
            before.append(miss(i, centre) + 2.0 * sum(before))
        after = []  # joints from the pivot on change |p - c|: from the pivot up
        for i in range(pivot, start):
            after.append(miss(i, centre) + 2.0 * sum(after))
        return centre, start, 2.0 * (sum(before) + sum(after)), far

    def frames_at_lower(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each joint's axis and origin in the root frame, every joint at its lower limit."""
        rotation, position, axes, origins = np.eye(3), np.zeros(3), [], []
        for value, joint in zip(self.lower, self.joints):
            position = position + rotation @ joint.translation
            rotation = rotation @ joint.rotation
            axes.append(rotation @ joint.axis)
            origins.append(position)
            if joint.revolute:
                rotation = rotation @ turns(joint.axis, np.array([value]))[0]
            else:
                position = position + value * axes[-1]
        return axes, origins

    def lengths(self) -> np.ndarray:
        """Per joint, the chain's length beyond its origin: its own largest travel (a
        slide), the later placements' lengths and travels, the link's offset."""
        travel = [0.0 if j.revolute else max(abs(low), abs(high))
                  for j, low, high in zip(self.joints, *self.limits)]
        steps = [float(np.linalg.norm(j.translation)) + t for j, t in zip(self.joints, travel)]
        return np.array([float(np.linalg.norm(self.offset)) + sum(steps[i + 1:]) + travel[i]
                         for i in range(len(self.joints))])

    def speed_bounds(self) -> np.ndarray:
        """s_i >= |J_i| everywhere: a slide's 1; a turning joint's length beyond it, exact
        for the last: the link's distance from its axis."""
        speed = np.where([j.revolute for j in self.joints], self.lengths(), 1.0)
        if self.joints[-1].revolute:
            speed[-1] = float(np.linalg.norm(np.cross(self.joints[-1].axis, self.offset)))
        return speed

    def hessian_bound(self) -> np.ndarray:
        """M (K, K): |d2f / dqi dqj| <= Mij everywhere, f = |p - centre|^2 (module note)."""
        k = len(self.joints)
        turning = np.array([j.revolute for j in self.joints])
        i, j = np.meshgrid(np.arange(k), np.arange(k), indexing='ij')
        cross = np.where(turning[np.minimum(i, j)], self.speed[np.maximum(i, j)], 0.0)
        return 2.0 * (np.outer(self.speed, self.speed) + self.far * cross)

    def values(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At configurations q (N, K) of the chain: f = |p - centre|^2 (N,), its gradient
        (N, K) and |p - o| (N,)."""
        n = len(q)
        rotation, position = np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3))
        axes, origins = [], []
        for i, joint in enumerate(self.joints):
            position = position + rotation @ joint.translation
            rotation = rotation @ joint.rotation
            axes.append(rotation @ joint.axis)
            origins.append(position)
            if joint.revolute:
                rotation = rotation @ turns(joint.axis, q[:, i])
            else:
                position = position + q[:, i, None] * axes[-1]
        link = position + rotation @ self.offset
        jacobian = np.stack([np.cross(a, link - o) if joint.revolute else a
                             for a, o, joint in zip(axes, origins, self.joints)], axis=1)
        arm = link - self.centre
        return (np.sum(arm * arm, axis=1), 2.0 * np.einsum('nc,nkc->nk', arm, jacobian),
                np.linalg.norm(link - self.origin, axis=1))

    def reach(self, rng: np.random.Generator) -> Reach:
        """Branch and bound on |p - centre| until every open box is within TOLERANCE of the
        farthest reached, or the BUDGET of boxes is spent; plus |centre - o| (triangle
        inequality)."""
        samples = rng.uniform(*self.limits, (SAMPLES, len(self.joints)))
        square, _, distance = self.values(samples)
        best, reached, settled = float(square.max()), float(distance.max()), 0.0
        lower, upper, spent = self.lower[None], self.upper[None], 0
        while True:
            mid, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
            square, gradient, distance = self.values(mid)
            best = max(best, float(square.max()))
            loosening = half * (np.abs(gradient) + 0.5 * half @ self.curvature)
            bound = square + loosening.sum(axis=1)
            open_ = np.sqrt(np.maximum(bound, 0.0)) > math.sqrt(best) + TOLERANCE
            settled = max(settled, float(bound[~open_].max(initial=0.0)))
            spent += len(lower)
            if not open_.any() or spent + 2 * open_.sum() > BUDGET:
                break
            lower, upper = split(lower[open_], upper[open_], np.argmax(loosening[open_], axis=1))
        top = float(np.linalg.norm(self.centre - self.origin)) + self.slack + math.sqrt(
            max(settled, float(bound.max()), best))
        return Reach(top * (1.0 + SAFETY) + SAFETY, reached)


def split(lower: np.ndarray, upper: np.ndarray, along: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each box halved along its chosen joint: (2N, K) lower and upper corners."""
    rows = np.arange(len(lower))
    mid = 0.5 * (lower[rows, along] + upper[rows, along])
    low_upper, high_lower = upper.copy(), lower.copy()
    low_upper[rows, along], high_lower[rows, along] = mid, mid
    return np.vstack([lower, high_lower]), np.vstack([low_upper, upper])


def reach(problem: KinematicProblem, frame: str | None = None, seed: int = 0) -> Reach:
    """The certified bound of `frame`'s (default: the tip's) distance from the base frame's
    origin inside the joint limits, and the farthest distance found. From the pivot first;
    when that bound is more than LOOSE above the distance found (the farthest configuration
    cannot point away from the base through the pivot), also from the base origin."""
    frame = frame or problem.tip_frame
    pivoted = ReachBound(problem, frame)
    if not pivoted.joints:  # the link is fixed to the root
        distance = float(np.linalg.norm(pivoted.offset - pivoted.origin))
        return Reach(distance * (1.0 + SAFETY) + SAFETY, distance)
    found = pivoted.reach(np.random.default_rng(seed))
    if found.bound <= (1.0 + LOOSE) * found.reached:
        return found
    direct = ReachBound(problem, frame, pivoted=False).reach(np.random.default_rng(seed))
    return Reach(min(found.bound, direct.bound), max(found.reached, direct.reached))
