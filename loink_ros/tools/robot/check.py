"""The one-clear-optimum check of a robot description (METHOD.md s.6), and where it fails, the
changes of limits or weights it tries and finds to fix it.

On held-out targets, multi-start SLSQP finds every local optimum of the cost; a target is
ambiguous when an optimum within NEAR_OPTIMAL of the best cost lies more than AMBIGUOUS_SPAN
from the best (tools/ambiguity.py): the network would settle between the two.
"""

from dataclasses import dataclass, replace

import numpy as np
from tqdm import tqdm

from loink_ros.baselines.reference_optimizer import reference_optimum
from loink_ros.core.forked_pool import forked_map, shared
from loink_ros.core.problems.arms.described_arm import DescribedArmProblem
from loink_ros.core.problems.arms.robot_spec import RobotSpec
from loink_ros.tools.ambiguity import AMBIGUOUS_SPAN, NEAR_OPTIMAL

RANGE_CENTRE_BOOST = 4.0   # the weight fix: range_centre this many times heavier


@dataclass
class CheckResult:
    """Per target: the best optimum, its farthest near-optimal rival and their distance."""

    targets: np.ndarray
    best: np.ndarray
    rival: np.ndarray
    span: np.ndarray
    solved: np.ndarray
    max_ambiguous: float

    @property
    def ambiguous(self) -> np.ndarray:
        return self.solved & (self.span > AMBIGUOUS_SPAN)

    @property
    def ambiguous_fraction(self) -> float:
        return float(self.ambiguous.mean())

    @property
    def passed(self) -> bool:
        return self.ambiguous_fraction <= self.max_ambiguous

    def culprit(self) -> int | None:
        """The joint that differs most between the ambiguous targets' optimum and rival."""
        if not self.ambiguous.any():
            return None
        gap = np.abs(self.rival[self.ambiguous] - self.best[self.ambiguous]).mean(0)
        return int(np.argmax(gap))

    def figures(self) -> dict:
        return {'targets': len(self.targets), 'solved_fraction': float(self.solved.mean()),
                'ambiguous_fraction': self.ambiguous_fraction,
                'max_ambiguous': self.max_ambiguous, 'passed': self.passed,
                'near_optimal_span_median_rad': float(np.median(self.span[self.solved]))
                if self.solved.any() else None,
                'near_optimal_span_rad': self.span.tolist()}


def _optima(job: tuple[np.ndarray, int, int]) -> tuple[np.ndarray, np.ndarray, float, bool]:
    y, starts, seed = job
    problem = shared()
    result = reference_optimum(problem, y, starts, seed=seed)
    if not result.success:
        return result.q, result.q, 0.0, False
    close = [q for q, j in result.optima if j <= result.cost * (1 + NEAR_OPTIMAL) + 1e-12]
    rival = max(close, key=lambda q: np.linalg.norm(q - result.q))
    return result.q, rival, float(np.linalg.norm(rival - result.q)), True


def check(problem: DescribedArmProblem, workers: int, progress: bool = True,
          label: str = 'check') -> CheckResult:
    """The check on the description's own settings (check.targets, check.starts, seed)."""
    settings, seed = problem.spec.sections['check'], problem.spec.seed + 1
    rng = np.random.default_rng(seed)
    targets = problem.task(problem.sample(settings['targets'], rng))
    jobs = [(y, settings['starts'], seed + i) for i, y in enumerate(targets)]
    with forked_map(workers, problem) as imap:
        rows = list(tqdm(imap(_optima, jobs), total=len(jobs), desc=f'{label} {problem.name}',
                         unit='target', disable=not progress))
    best, rival, span, solved = (np.array(v) for v in zip(*rows))
    return CheckResult(targets, best, rival, span, solved.astype(bool), settings['max_ambiguous'])


def candidate_fixes(problem: DescribedArmProblem, result: CheckResult) -> list[tuple[str, RobotSpec]]:
    """(the change in YAML words, the changed description) for a failed check."""
    spec, fixes = problem.spec, []
    joint = result.culprit()
    if joint is not None:
        name = problem.joint_names[joint]
        mid = 0.5 * (problem.lower[joint] + problem.upper[joint])
        quarter = 0.25 * (problem.upper[joint] - problem.lower[joint])
        narrowed = (round(mid - quarter, 4), round(mid + quarter, 4))
        fixes.append((f'joints.limits.{name}: [{narrowed[0]:g}, {narrowed[1]:g}]  '
                      f'(the middle half of its range; {name} differs most between the '
                      'near-equal optima)',
                      replace(spec, limits={**spec.limits, name: narrowed})))
    centre = spec.cost.get('range_centre', {'weight': 0.0})
    total = sum(t['weight'] for t in spec.cost.values())
    weight = round(RANGE_CENTRE_BOOST * centre['weight'] if centre['weight'] > 0 else total, 4)
    boosted = {**spec.cost, 'range_centre': {**centre, 'weight': weight}}
    boosted['range_centre'].pop('scale', None)
    fixes.append((f'cost.range_centre.weight: {weight:g}  (a stronger pull to the range '
                  'centres breaks the tie)', replace(spec, cost=boosted)))
    return fixes


def try_fixes(problem: DescribedArmProblem, result: CheckResult, workers: int,
              progress: bool = True) -> list[dict]:
    """Each candidate fix, checked the same way; best first."""
    tried = []
    for change, spec in candidate_fixes(problem, result):
        fixed = check(DescribedArmProblem(spec), workers, progress, label='fix')
        tried.append({'change': change, 'ambiguous_fraction': fixed.ambiguous_fraction,
                      'passes': fixed.passed})
    return sorted(tried, key=lambda t: t['ambiguous_fraction'])


def failure_message(problem: DescribedArmProblem, result: CheckResult, fixes: list[dict]) -> str:
    """What failed, and the fixes the check found (or that none passed)."""
    lines = [f'{result.ambiguous_fraction:.0%} of {len(result.targets)} targets have two '
             f'near-equal optima more than {AMBIGUOUS_SPAN} rad apart (allowed: '
             f'check.max_ambiguous = {result.max_ambiguous:g}); the network would settle '
             'between them.']
    joint = result.culprit()
    if joint is not None:
        lines.append(f'The joint that differs most between them: {problem.joint_names[joint]}.')
    passing = [f for f in fixes if f['passes']]
    if passing:
        lines.append('Changes the check tried that fix it (edit the description, then run '
                     'the same command again):')
    else:
        lines.append('No change the check tried is enough; the best ones:')
    lines += [f"  {f['change']}  -> {f['ambiguous_fraction']:.0%} ambiguous"
              for f in (passing or fixes)]
    lines.append('Or accept it with --accept-ambiguity (answers may then be far from optimal).')
    return '\n'.join(lines)
