"""`loink robot train`: one robot description to a served model, in stages that each report
progress and resume: check, dataset, training, export, bench, node parameters, report.

Everything goes to the description's output folder: a copy of the URDF (the model is
self-contained), check.json/.png, dataset.npz, runs/<settings digest>/ (checkpoint, log.csv:
the same settings resume there), <name>.onnx and
.json, bench.json, <name>.yaml (the node's parameters) and report.md with its figures.
"""

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from loink_ros.core.problems.arms.described_arm import DescribedArmProblem
from loink_ros.core.problems.arms.robot_spec import RobotSpec, SpecError, load_spec

STAGES = ('check', 'dataset', 'train', 'export', 'bench', 'parameters', 'report')


class CheckFailed(RuntimeError):
    """The one-clear-optimum check failed; the message says which changes fix it."""


def _stage(index: int, name: str, detail: str = '') -> None:
    """A stage's heading, on stderr with the progress bars (stdout holds the summary)."""
    print(f'[{index}/{len(STAGES)}] {name}{": " + detail if detail else ""}', file=sys.stderr,
          flush=True)


def workers(spec: RobotSpec) -> int:
    setting = spec.sections['dataset']['workers']
    return os.cpu_count() or 1 if setting == 'auto' else setting


def problem_in_output(spec: RobotSpec) -> DescribedArmProblem:
    """The problem on the URDF copy in the output folder (the one the model names)."""
    spec.output.mkdir(parents=True, exist_ok=True)
    copy = spec.output / f'{spec.name}.urdf'
    if copy.resolve() != spec.urdf.resolve():
        shutil.copyfile(spec.urdf, copy)
    return DescribedArmProblem(replace(spec, urdf=copy))


def described_problem(path: Path) -> DescribedArmProblem:
    """Load, check and build a description; SpecErrors name the file."""
    spec = load_spec(path)
    try:
        return problem_in_output(spec)
    except SpecError as err:
        raise SpecError(f'{path}: {err}') from None
    except (ValueError, RuntimeError) as err:   # Pinocchio: a URDF it cannot read
        raise SpecError(f'{path}: {" ".join(str(err).split())}') from None


def _cached(path: Path, key: dict) -> dict | None:
    """A stage's stored result when it was made from the same key."""
    if not path.exists():
        return None
    stored = json.loads(path.read_text())
    return stored if stored.get('key') == json.loads(json.dumps(key)) else None


def run_check(problem: DescribedArmProblem, accept: bool, progress: bool = True):
    """check.json and check.png (kept while the description is the same); CheckFailed, with
    the fixes found, unless it passes."""
    from loink_ros.tools.robot import check as robot_check
    from loink_ros.tools.robot import report as robot_report
    out, key = problem.spec.output, _key(problem, 'check')
    stored = _cached(out / 'check.json', key)
    if stored is None or not (out / 'check.png').exists():
        result = robot_check.check(problem, workers(problem.spec), progress)
        fixes = [] if result.passed else robot_check.try_fixes(problem, result,
                                                               workers(problem.spec), progress)
        message = None if result.passed else robot_check.failure_message(problem, result, fixes)
        stored = {'key': key, **result.figures(), 'fixes': fixes, 'message': message}
        (out / 'check.json').write_text(json.dumps(stored, indent=1))
        robot_report.plot_check(result, out / 'check.png')
    figures = {k: v for k, v in stored.items() if k not in ('key', 'message')}
    message = stored['message']
    if message and not accept:
        raise CheckFailed(f'{problem.spec.source}: the one-clear-optimum check failed '
                          f'(figure: {out / "check.png"}).\n{message}')
    return figures, message


def _key(problem: DescribedArmProblem, stage: str) -> dict:
    """What a stage's result depends on: the robot, task, limits and cost, the seed and the
    stage's own settings (not, e.g., the training or bench settings)."""
    sections = problem.spec.sections
    meta = problem.metadata()
    meta['description'] = {k: v for k, v in meta['description'].items()
                           if k == 'task' or k not in sections}
    extra = {'check': sections['check'], 'dataset': sections['dataset']['samples']}[stage]
    return {'problem': meta, 'seed': problem.spec.seed, stage: extra}


def run_dataset(problem: DescribedArmProblem, progress: bool = True):
    from loink_ros.core.dataset import generate_dataset, load_dataset, save_dataset
    out = problem.spec.output
    path, stamp = out / 'dataset.npz', out / 'dataset.json'
    key = _key(problem, 'dataset')
    if path.exists() and _cached(stamp, key):
        return load_dataset(path)
    parts = out / 'dataset.parts'
    data = generate_dataset(problem, problem.spec.sections['dataset']['samples'],
                            problem.spec.seed, workers=workers(problem.spec), parts=parts,
                            progress=progress)
    save_dataset(data, path)
    stamp.write_text(json.dumps({'key': key}))
    shutil.rmtree(parts, ignore_errors=True)
    return data


def run_folder(out: Path, config) -> Path:
    """runs/<digest of the settings>: the same settings resume, changed ones start anew."""
    digest = hashlib.sha256(json.dumps(asdict(config), sort_keys=True).encode()).hexdigest()
    return out / 'runs' / digest[:10]


def train_config(spec: RobotSpec):
    from loink_ros.core.network.loink_net import NetworkConfig
    from loink_ros.core.training import TrainConfig
    net, training = spec.sections['network'], spec.sections['training']
    return TrainConfig(NetworkConfig(net['blocks'], net['depth'], net['mu'], net['nu'],
                                     net['learn_bounds'], net['cost_hidden']),
                       training['cost_weight'], training['epochs'], training['batch_size'],
                       training['lr'], training['lr_final'], training['val_fraction'],
                       spec.seed, training['device'], training['threads'])


PARAMETERS = """# loink_node parameters for {name} (made by `loink robot train`); every other
# parameter keeps its default (docs/NODE.md). Start it with
#   ros2 launch loink_ros loink.launch.py model:={json}
/**:
  ros__parameters:
    model: {json}
    urdf: ""                   # empty: robot_description, else the model's own URDF copy
    group_name: {name}         # GetPositionIK group_name this node answers
    refine: true               # refine every answer on the true kinematics
    task_tolerance: 0.002      # m
    position_only_ik: true     # GetPositionIK: the tip position only (the model's task)
    runtime: compiled          # C, built once and cached (docs/COMPILED.md)
"""


def write_parameters(out: Path, name: str, json_path: Path) -> Path:
    path = out / f'{name}.yaml'
    path.write_text(PARAMETERS.format(name=name, json=json_path))
    return path


# Beyond these the report advises narrowing the limits or training more (docs/ROBOT.md).
LOOSE_SUCCESS = 0.95    # share of refined answers on the target, inside the limits
LOOSE_REGRET = 0.05     # median regret of those
LOOSE_CLIPPED = 0.5     # share of raw answers outside the joint limits


def advice(bench: dict) -> list[str]:
    """What to change when the bench shows a loose fit; empty when it does not."""
    success, clipped = bench['success_fraction'], bench['clipped_fraction']
    regret = bench['regret_refined']['median']
    if success >= LOOSE_SUCCESS and regret <= LOOSE_REGRET and clipped <= LOOSE_CLIPPED:
        return []
    refined = f"{success:.0%} of the refined answers succeed, at a median regret of {regret:.1%}."
    if bench['multistart_fallback']:
        refined = (f"Refined answers then come from the multi-start search the solver falls "
                   f"back on ({success:.0%} succeed, median regret {regret:.1%}, "
                   f"{bench['refined_solve_ms']['median']:.2f} ms median), not from the "
                   "network's answer.")
    return [f"The network fits this workspace loosely: raw answers miss the target by "
            f"{1e3 * bench['task_error_m']['median']:.0f} mm (median) and {clipped:.0%} of "
            f"them leave the joint limits. {refined} For the network's own, faster answers, "
            "narrow joints.limits to the range the robot works in (a full turn per joint is "
            "far harder to learn than a working range), give it more samples, epochs or a wider "
            "network (dataset.samples, training.epochs, network.blocks), or, where many raw "
            "answers leave the limits, set solver.optimum_inside_limits: true (the same "
            "network, slower answers)."]


def train_robot(path: Path, accept_ambiguity: bool = False, progress: bool = True) -> dict:
    """All stages; returns where everything went and the headline figures."""
    from loink_ros.core.export import export_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    from loink_ros.core.training import pick_device, train
    from loink_ros.tools.robot import bench as robot_bench
    from loink_ros.tools.robot import report as robot_report
    began = time.perf_counter()
    problem = described_problem(path)
    spec, out = problem.spec, problem.spec.output
    _stage(1, 'check', f'{spec.sections["check"]["targets"]} targets, one clear optimum each?')
    check, warning = run_check(problem, accept_ambiguity, progress)
    if warning:
        print(f'warning, accepted (--accept-ambiguity): {warning}', file=sys.stderr)
    _stage(2, 'dataset', f'{spec.sections["dataset"]["samples"]} samples, '
           f'{workers(spec)} processes')
    data = run_dataset(problem, progress)
    config = train_config(spec)
    run = run_folder(out, config)
    device = pick_device(spec.sections['training']['device'])
    _stage(3, 'train', f'{config.epochs} epochs on {device}; resumable in {run}')
    result = train(data, problem, config, run, progress=progress)
    minutes = sum(row['seconds'] for row in result.history) / 60   # resumed runs included
    _stage(4, 'export')
    _, json_path = export_model(result, problem, out / spec.name)
    _stage(5, 'bench', f'{spec.sections["bench"]["targets"]} held-out targets against '
           'multi-start SLSQP')
    model = load_model(str(json_path))
    bench = robot_bench.run(problem, model, progress)
    (out / 'bench.json').write_text(json.dumps(bench, indent=1))
    _stage(6, 'parameters')
    params = write_parameters(out, spec.name, json_path)
    _stage(7, 'report')
    solver = LOInKSolver(model, problem)
    targets = problem.task(problem.sample(robot_report.LATENT_TARGETS,
                                          np.random.default_rng(spec.seed + 3)))
    figures = {'check': out / 'check.png',
               'losses': robot_report.plot_losses(result.history, out / 'losses.png'),
               'histograms': robot_report.plot_histograms(bench, out / 'bench.png'),
               'latent': robot_report.plot_latent(solver, targets, out / 'latent.png')}
    training = {'epochs': len(result.history), 'samples': len(data), 'minutes': minutes,
                'val_task_rmse': result.history[-1]['val_task_rmse']}
    commands = [f'loink robot train {spec.source}',
                f'ros2 launch loink_ros loink.launch.py model:={json_path}']
    notes = advice(bench)
    for note in notes:
        print(f'advice: {note}', file=sys.stderr)
    report = robot_report.write_report(out, spec.name, commands, check, bench, training,
                                       figures, notes)
    return {'advice': notes, 'model': str(json_path), 'parameters': str(params), 'report': str(report),
            'check': {k: v for k, v in check.items() if k != 'near_optimal_span_rad'},
            'training': training, 'minutes': (time.perf_counter() - began) / 60,
            'bench': {k: v for k, v in bench.items() if k != 'per_target'},
            'launch': commands[1]}
