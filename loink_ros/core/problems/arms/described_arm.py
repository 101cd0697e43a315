"""A serial arm from a robot description (robot_spec.py): the chain from `base` to `tip` of
any URDF, the tip position as the task and a weighted sum of named cost terms."""

import threading
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.arms.cost_terms import TERMS, CostTerm
from loink_ros.core.problems.arms.kinematic_problem import KinematicProblem
from loink_ros.core.problems.arms.robot_spec import RobotSpec, SpecError
from loink_ros.core.problems.arms.symbolic_chain import SymbolicChain

# The polish (local_optimum): CasADi's sqpmethod with qrqp for the joint bounds and a BFGS
# Hessian (the exact one is indefinite away from an optimum, and SQP steps on it can leave
# the target).
TASK_SCALE = 1e-3      # m per scaled task row, so the tolerances mean the same on every row
SQP_OPTIONS = {
    'qpsol': 'qrqp', 'qpsol_options': {'print_iter': False, 'print_header': False,
                                       'error_on_fail': False},
    'print_time': False, 'print_iteration': False, 'print_header': False,
    'print_status': False, 'error_on_fail': False,
    'hessian_approximation': 'limited-memory', 'max_iter': 60, 'tol_pr': 1e-10, 'tol_du': 1e-9,
}
SCALE_SAMPLES = 1000   # configurations a term's scale (its mean over the joint box) is taken on
EXAMPLE_CANDIDATES = 64
LIMIT_SLACK = 1e-6   # rad or m a narrowed limit may pass the URDF's by (rounding)


def chain_joints(model: pin.Model, base: str, tip: str) -> list[str]:
    """The joints moving the tip relative to the base, root first; a SpecError when a frame
    is missing or the tip does not hang below the base."""
    for key, frame in (('base', base), ('tip', tip)):
        if not model.existFrame(frame):
            links = sorted(f.name for f in model.frames if f.type == pin.FrameType.BODY)
            raise SpecError(f'{key}: no frame {frame!r} in the URDF; its links: {", ".join(links)}')
    base_joint = model.frames[model.getFrameId(base)].parentJoint
    tip_joint = model.frames[model.getFrameId(tip)].parentJoint
    below_tip = list(model.supports[tip_joint])
    if base_joint not in below_tip:
        raise SpecError(f'tip: {tip!r} is not below base {base!r} in the URDF tree')
    chain = below_tip[below_tip.index(base_joint) + 1:]
    if not chain:
        raise SpecError(f'tip: no joint moves {tip!r} relative to {base!r}')
    return [model.names[j] for j in chain]


class DescribedArmProblem(KinematicProblem):
    """Joints off the base-tip chain are locked at their `locked` value (neutral otherwise), as
    are the chain joints `locked` names; J = sum_k w_k t_k(q) / s_k (cost_terms.py)."""

    def __init__(self, spec: RobotSpec, urdf: Path | None = None):
        """`urdf` replaces the description's file (the robot's own, at the node)."""
        full = pin.buildModelFromUrdf(str(urdf or spec.urdf))
        chain = chain_joints(full, spec.base, spec.tip)
        for key, names in (('joints.limits', spec.limits), ('joints.locked', spec.locked)):
            unknown = [n for n in names if not full.existJointName(n)]
            if unknown:
                raise SpecError(f'{key}.{unknown[0]}: no such joint; the chain {spec.base} -> '
                                f'{spec.tip} has {", ".join(chain)}')
        locked = [n for n in full.names[1:] if n not in chain or n in spec.locked]
        if len(locked) == len(full.names) - 1:
            raise SpecError('joints.locked: every joint of the chain is locked')
        super().__init__(urdf or spec.urdf, spec.tip, spec.axes, name=spec.name,
                         cost_name=' + '.join(n for n, t in spec.cost.items() if t['weight'] > 0),
                         base_frame=spec.base,
                         locked_joints=tuple(locked), locked_positions=spec.locked)
        self.spec = spec
        # The optimum as the least-norm latent inside the limits, not z = 0's answer clipped.
        self.optimum_on_bounds = spec.sections['solver']['optimum_inside_limits']
        self._narrow(spec.limits)
        # Terms at weight 0 are off: not evaluated, not stored with the model.
        self.terms = [(TERMS[name](self, settings), settings['weight'], settings.get('scale'))
                      for name, settings in spec.cost.items() if settings['weight'] > 0]
        self.terms = [(term, weight, scale or self._scale(term))
                      for term, weight, scale in self.terms]
        self._gradient = self._polish = None
        self._build_lock = threading.Lock()

    def _narrow(self, limits: dict[str, tuple[float, float]]) -> None:
        """The description's limits, inside the URDF's (any range for a continuous joint)."""
        for name, (lower, upper) in limits.items():
            i = self.joint_names.index(name)
            if not self.continuous[i] and (lower < self.lower[i] - LIMIT_SLACK
                                           or upper > self.upper[i] + LIMIT_SLACK):
                raise SpecError(f'joints.limits.{name}: [{lower:g}, {upper:g}] is not inside '
                                f'the URDF limits [{self.lower[i]:g}, {self.upper[i]:g}]; '
                                'limits may only narrow them')
            self.lower[i], self.upper[i] = lower, upper

    def _scale(self, term: CostTerm) -> float:
        q = np.random.default_rng(0).uniform(self.lower, self.upper, (SCALE_SAMPLES, self.dim))
        mean = float(term.value(self, q).mean())
        return mean if mean > 0 else 1.0

    def cost(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        return sum(weight / scale * term.value(self, q) for term, weight, scale in self.terms)

    def symbolic_cost(self, q, chain):
        return sum(weight / scale * term.symbolic(self, q, chain)
                   for term, weight, scale in self.terms)

    def cost_gradient(self, q: np.ndarray) -> np.ndarray:
        """d cost / d q at one configuration (n,), from the CasADi form (built once)."""
        with self._build_lock:
            if self._gradient is None:
                import casadi as ca
                x = ca.SX.sym('q', self.dim)
                cost = self.symbolic_cost(x, SymbolicChain(self.model, x))
                self._gradient = ca.Function('cost_gradient', [x], [ca.gradient(cost, x)])
        return np.asarray(self._gradient(np.asarray(q, float))).reshape(-1)

    def local_optimum(self, q: np.ndarray, task: np.ndarray) -> np.ndarray:
        """min J(q) s.t. task(q) = y within the limits, by SQP from q (built once)."""
        with self._build_lock:
            if self._polish is None:
                import casadi as ca
                x, y = ca.SX.sym('q', self.dim), ca.SX.sym('y', self.task_dim)
                chain = SymbolicChain(self.model, x)
                task_rows = (self.symbolic_position(chain)[self.rows] - y) / TASK_SCALE
                program = {'x': x, 'p': y, 'f': self.symbolic_cost(x, chain), 'g': task_rows}
                self._polish = ca.nlpsol(f'{self.name}_local_optimum', 'sqpmethod', program,
                                         SQP_OPTIONS)
        out = self._polish(x0=np.clip(q, self.lower, self.upper), p=np.asarray(task, float),
                           lbx=self.lower, ubx=self.upper, lbg=0.0, ubg=0.0)
        return np.asarray(out['x']).reshape(-1)

    def cost_minimiser(self) -> np.ndarray | None:
        """The centre of the ranges when range_centre is the only weighted term."""
        weighted = [term.name for term, weight, _ in self.terms if weight > 0]
        return 0.5 * (self.lower + self.upper) if weighted == ['range_centre'] else None

    def example_configuration(self) -> np.ndarray:
        """Of a few seeded samples, the one whose tip is nearest their median tip: a target
        well inside the workspace the model is trained on."""
        q = np.random.default_rng(0).uniform(self.lower, self.upper,
                                             (EXAMPLE_CANDIDATES, self.dim))
        y = self.task(q)
        return q[np.argmin(np.linalg.norm(y - np.median(y, axis=0), axis=1))]

    def resolved_cost(self) -> dict[str, dict]:
        """Each term's weight, scale and resolved options, as stored with a model."""
        return {term.name: {'weight': weight, 'scale': scale, **term.settings()}
                for term, weight, scale in self.terms}

    def compile_key(self) -> str:
        return f'{super().compile_key()} cost {sorted(self.resolved_cost().items())!r}'

    def metadata(self) -> dict:
        return {**super().metadata(), 'description': self.stored_description()}

    def stored_description(self) -> dict:
        """The description as a model stores it: URDF path dropped (the model ships its own
        copy), cost terms resolved so the node rebuilds exactly this cost."""
        data = self.spec.to_dict()
        data['cost'] = self.resolved_cost()
        data.pop('urdf')
        return data
