"""`loink robot init`: a commented robot description for the chain base -> tip of a URDF,
with every setting at its default (docs/ROBOT.md)."""

import math
import shutil
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.arms.cost_terms import TERMS
from loink_ros.core.problems.arms.described_arm import chain_joints
from loink_ros.core.problems.arms.kinematic_problem import CONTINUOUS_RANGE, is_continuous
from loink_ros.core.problems.arms.robot_spec import SECTIONS, SpecError

# Cost weights of a new description: posture first (one clear optimum), a little gravity.
DEFAULT_WEIGHTS = {'range_centre': 1.0, 'gravity_torque': 0.3}
ONE_TURN = 2 * math.pi
SECTION_NOTES = {
    'check': 'one clear optimum per target? targets, SLSQP starts, largest ambiguous share',
    'bench': 'held-out targets against multi-start SLSQP',
    'solver': 'optimum_inside_limits: the optimum as the least-norm latent whose answer is '
              'inside the limits, where z = 0\'s often is not (slower)',
}


def _yaml_value(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, list):
        return '[' + ', '.join(map(str, value)) + ']'
    if isinstance(value, float):
        # YAML 1.1 (PyYAML) reads 1e-05 as text; 1.0e-05 is a number.
        mantissa, _, exponent = repr(value).partition('e')
        return mantissa + ('' if '.' in mantissa else '.0') + (f'e{exponent}' if exponent else '')
    return str(value)


def _joint_lines(model: pin.Model, chain: list[str]) -> list[str]:
    """joints.limits: one line per chain joint; ranges over one turn come narrowed to one."""
    lines = []
    for name in chain:
        joint = model.joints[model.getJointId(name)]
        if is_continuous(joint):
            low, high = CONTINUOUS_RANGE
            note = 'continuous in the URDF: this is the range sampled and answered'
        else:
            low = float(model.lowerPositionLimit[joint.idx_q])
            high = float(model.upperPositionLimit[joint.idx_q])
            note = f'URDF: [{low:.4g}, {high:.4g}]'
            if joint.shortname().startswith('JointModelR') and high - low > ONE_TURN + 1e-9:
                mid = 0.5 * (low + high)
                low, high = mid - math.pi, mid + math.pi
                note += ('; one turn here: a wider range repeats each posture, so a target '
                         'has two equal optima')
        # Rounded inwards: the written range stays inside the URDF's.
        low, high = math.ceil(low * 1e4) / 1e4, math.floor(high * 1e4) / 1e4
        lines.append(f'    {name}: [{low:.4f}, {high:.4f}]   # {note}')
    return lines


def description_text(urdf: Path, base: str, tip: str, name: str, urdf_ref: str) -> str:
    """The YAML of a new description (raises SpecError for a bad base or tip)."""
    model = pin.buildModelFromUrdf(str(urdf))
    chain = chain_joints(model, base, tip)
    others = [n for n in model.names[1:] if n not in chain]
    kinds = {n: model.joints[model.getJointId(n)].shortname() for n in chain}
    unsupported = [n for n, k in kinds.items()
                   if model.joints[model.getJointId(n)].nv != 1]
    if unsupported:
        raise SpecError(f'joint {unsupported[0]!r} ({kinds[unsupported[0]]}) has more than one '
                        'degree of freedom; LOInK learns serial chains of single-axis joints')
    has_mass = any(model.inertias[model.getJointId(n)].mass > 0 for n in chain)
    weights = {t: DEFAULT_WEIGHTS.get(t, 0.0) for t in TERMS}
    if not has_mass:
        weights['gravity_torque'] = 0.0
    lines = [
        f'# LOInK robot description of {name} (docs/ROBOT.md). Train, check and bench with',
        '#   loink robot train <this file>',
        f'name: {name}',
        f'urdf: {urdf_ref}   # relative to this file',
        f'base: {base}   # the task is the tip position in this frame',
        f'tip: {tip}',
        'task:',
        '  axes: xyz   # the tip position axes learned (any of x, y, z)',
        'joints:',
        f'  # {len(chain)} joints from {base} to {tip}; limits may only narrow the URDF\'s',
        '  limits:',
        *_joint_lines(model, chain),
        '  # joints fixed at a value (rad or m); joints off the chain are always locked',
        f'  # (at neutral unless given here): {", ".join(others) if others else "none"}',
        '  locked: {}',
        '# J = sum of weight * term / scale; scale: the term\'s mean over the joint box,',
        '# measured at training. Terms at weight 0 are off.',
        'cost:',
        f"  range_centre: {{weight: {weights['range_centre']}}}   # distance from the range centres",
        f"  gravity_torque: {{weight: {weights['gravity_torque']}}}   # static torque over effort limits"
        + ('' if has_mass else ' (the URDF has no link masses)'),
        f"  manipulability: {{weight: {weights['manipulability']}}}   # low where the tip moves freely",
        f"  nominal_posture: {{weight: {weights['nominal_posture']}, posture: {{}}}}   "
        '# distance from a posture (joint: value)',
        f"  joint_limit_barrier: {{weight: {weights['joint_limit_barrier']}, margin: 0.1}}   "
        '# rises over the outer margin of each range',
    ]
    for section, schema in SECTIONS.items():
        if section == 'task':
            continue
        if section in SECTION_NOTES:
            lines.append(f'# {SECTION_NOTES[section]}')
        lines.append(f'{section}:')
        lines += [f'  {key}: {_yaml_value(field.default)}' for key, field in schema.items()]
    lines += ['seed: 0', f'output: {name}   # folder for the model, report and runs, beside this file']
    return '\n'.join(lines) + '\n'


def init_description(urdf: Path, base: str, tip: str, out: Path, force: bool = False) -> Path:
    """Write the description of base -> tip of `urdf` to `out` (named after its stem)."""
    if out.exists() and not force:
        raise SpecError(f'{out} exists; remove it or pass --force')
    if not urdf.is_file():
        raise SpecError(f'--urdf: {urdf} does not exist')
    name = out.stem.replace('-', '_')
    try:
        reference = str(urdf.resolve().relative_to(out.resolve().parent))
    except ValueError:
        reference = str(urdf.resolve())
    text = description_text(urdf, base, tip, name, reference)
    out.write_text(text)
    return out


def chain_summary(urdf: Path, base: str, tip: str) -> str:
    """One line: how many joints the description covers."""
    model = pin.buildModelFromUrdf(str(urdf))
    chain = chain_joints(model, base, tip)
    kinds = np.array([is_continuous(model.joints[model.getJointId(n)]) for n in chain])
    return f'{len(chain)} joints ({int(kinds.sum())} continuous): {", ".join(chain)}'


def copy_example_urdf(relative: str, out: Path) -> Path:
    """Copy a URDF of the installed example-robot-data wheel (no download): SpecError listing
    the wheel's URDFs when `relative` is not one of them."""
    from loink_ros.core.problems.arms.example_robots import ROBOTS, wheel_file
    root = wheel_file(ROBOTS)
    source = root / relative
    if source.suffix != '.urdf' or not source.is_file():
        known = sorted(str(p.relative_to(root)) for p in root.glob('*/*/*.urdf'))
        raise SpecError(f'{relative!r} is not a URDF of example-robot-data; it has: '
                        + ', '.join(known))
    shutil.copyfile(source, out)
    return out
