"""`loink`: dataset, train, export, info, solve, sample, track, bench, design, plot, robot, demo."""

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from loink_ros.core.runtime.errors import ModelFileError, SolverError
from loink_ros.core.runtime.requests import MAX_LATENT_ABS, MAX_SPREAD


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.replace(',', ' ').split()]


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.replace(',', ' ').split()]


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f'a probability in [0, 1], not {text}')
    return value


def _emit(result, json_path: str | None) -> None:
    """Print as JSON; also write to a file when asked ('-' is standard output only)."""
    text = json.dumps(result, indent=2)
    if json_path and json_path != '-':
        Path(json_path).write_text(text + '\n')
    print(text)


def cmd_dataset(args) -> None:
    from loink_ros.core.dataset import generate_dataset, save_dataset
    from loink_ros.core.problems.registry import make_problem
    parts = args.out.with_name(args.out.name + '.parts')
    data = generate_dataset(make_problem(args.problem), args.count, args.seed,
                            workers=args.workers, parts=parts, on_bounds=args.on_bounds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_dataset(data, args.out)
    shutil.rmtree(parts)
    print(f'wrote {len(data)} samples to {args.out}')


def cmd_train(args) -> None:
    from loink_ros.core.dataset import load_datasets
    from loink_ros.core.export import export_model
    from loink_ros.core.network.loink_net import NetworkConfig
    from loink_ros.core.problems.registry import make_problem
    from loink_ros.core.training import TrainConfig, TrainingDiverged, train
    try:
        data = load_datasets(args.data)
    except ValueError as err:
        raise SystemExit(f'loink train: {err}') from None
    problem = make_problem(data.problem)
    network = NetworkConfig(args.blocks, args.depth, args.mu, args.nu, args.learn_bounds,
                            args.cost_hidden)
    config = TrainConfig(network, args.cost_weight, args.epochs, args.batch_size, args.lr,
                         args.lr_final, args.val_fraction, args.seed, args.device, args.threads)
    try:
        result = train(data, problem, config, args.out, resume=not args.no_resume)
    except TrainingDiverged as err:
        raise SystemExit(f'loink train: {err}') from None
    print(f"trained {len(result.history)} epochs; validation task RMSE "
          f"{result.history[-1]['val_task_rmse']:.3g}; checkpoint and log.csv in {args.out}")
    if args.export:
        for path in export_model(result, problem, args.export):
            print(f'wrote {path}')


def cmd_train_ikflow(args) -> None:
    from dataclasses import fields

    from loink_ros.baselines.ikflow import IkflowConfig, export_ikflow, train_ikflow
    from loink_ros.core.dataset import load_dataset
    data = load_dataset(args.data)
    config = IkflowConfig(**{f.name: getattr(args, f.name) for f in fields(IkflowConfig)})
    flow, norm, log = train_ikflow(data, config)
    args.export.parent.mkdir(parents=True, exist_ok=True)
    export_ikflow(flow, norm, config, log, data.problem, args.export)
    print(f'trained {config.epochs} epochs; validation loss {log[-1]["val_loss"]:.4f}; '
          f'wrote {args.export}.onnx and .json')


def cmd_export(args) -> None:
    from loink_ros.core.export import export_model
    from loink_ros.core.problems.registry import make_problem
    from loink_ros.core.training import load_trained
    result = load_trained(args.run)
    for path in export_model(result, make_problem(result.problem), args.out):
        print(f'wrote {path}')


def _solver(args):
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    model = load_model(args.model)
    return LOInKSolver(model, problem_for_model(model))


def _solution_dict(solver, solution) -> dict:
    return {'joint_names': list(solver.problem.joint_names), 'q': solution.q.tolist(),
            'latent': solution.latent.tolist(), 'predicted_cost': solution.predicted_cost,
            'cost': solution.cost, 'task_error': solution.task_error,
            'clipped': solution.clipped, 'refined': solution.refined,
            'converged': solution.converged, 'violations': list(solution.violations)}


def cmd_info(args) -> None:
    from loink_ros.core.runtime.model_file import load_model
    model = load_model(args.model)
    net = model.meta['network']
    _emit({'name': model.name, 'version': model.version, 'path': str(model.path),
           **{k: model.problem[k] for k in ('joint_names', 'joint_lower', 'joint_upper',
                                            'task_names', 'task_lower', 'task_upper', 'cost_name')},
           'latent_dim': model.latent_dim, 'mu': net['mu'], 'nu': net['nu']}, args.json)


def cmd_solve(args) -> None:
    import time
    solver = _solver(args)
    began = time.perf_counter()
    solution = solver.solve(args.task, args.latent, args.refine, args.seed_q)
    result = _solution_dict(solver, solution)
    result['solve_time_ms'] = 1e3 * (time.perf_counter() - began)
    _emit(result, args.json)


def cmd_sample(args) -> None:
    solver = _solver(args)
    solutions = solver.sample(args.task, args.count, args.spread, args.refine, args.random_seed,
                              args.task_tolerance)
    _emit([_solution_dict(solver, s) for s in solutions], args.json)


def cmd_track(args) -> None:
    from loink_ros.core.runtime.tracking import Tracker
    solver = _solver(args)
    if args.tasks_file:
        targets = np.atleast_2d(np.loadtxt(args.tasks_file, delimiter=',', ndmin=2))
    else:
        start, stop = np.asarray(args.start), np.asarray(args.stop)
        targets = np.linspace(start, stop, args.steps)
    tracker = Tracker(solver, args.smoothing, args.refine)
    tracker.reset(None if args.initial_q is None else np.asarray(args.initial_q))
    path = [_solution_dict(solver, tracker.step(y)) | {'task': y.tolist()} for y in targets]
    qs = np.array(([args.initial_q] if args.initial_q else []) + [p['q'] for p in path])
    steps = np.linalg.norm(np.diff(qs, axis=0), axis=1)
    _emit({'smoothing': args.smoothing, 'mean_joint_step': float(steps.mean()) if steps.size else 0.0,
           'max_joint_step': float(steps.max(initial=0.0)), 'path': path}, args.json)


def cmd_bench(args) -> None:
    if args.target == 'imports':
        from loink_ros.tools.bench import imports as bench_imports
        _emit(bench_imports.run(args.tasks or bench_imports.DEFAULT_RUNS), args.json)
        return
    if args.target == 'node':
        from loink_ros.tools.bench import node as bench_node
        _emit(bench_node.run(args.model or 'planar3', args.namespace, args.tasks or 2000,
                             args.seed or 12345, args.load, args.executor, args.stream_pose),
              args.json)
        return
    if args.target == 'fit':
        from loink_ros.tools.bench import fit as bench_fit
        _emit(bench_fit.run(args.model or 'panda_full', args.tasks or 2000,
                            args.seed or bench_fit.SEED), args.json)
        return
    if args.target == 'pose':
        from loink_ros.tools.bench import pose as bench_pose
        _emit(bench_pose.run(args.robot, args.tasks or bench_pose.DEFAULT_POSES,
                             args.seed or bench_pose.BENCH_SEED, args.model), args.json)
        return
    if args.target == 'hsa':
        from loink_ros.tools.bench import hsa as bench_hsa
        if args.ikflow is None:
            raise SystemExit('bench hsa needs --ikflow STEM (an exported IKFlow model)')
        _emit(bench_hsa.run(args.model or 'hsa', args.ikflow, args.tasks or bench_hsa.DEFAULT_TARGETS,
                            args.seed or bench_hsa.SEED), args.json)
        return
    if args.target == 'stream':
        from loink_ros.tools.bench import stream as bench_stream
        _emit(bench_stream.run(args.robot, args.tasks or bench_stream.DEFAULT_SMOOTH,
                               args.seconds or bench_stream.DURATION_S,
                               args.seed or bench_stream.SEED, args.model,
                               velocity_share=(bench_stream.VELOCITY_SHARE if args.velocity_share is None
                                               else args.velocity_share),
                               baselines=not args.no_baselines), args.json)
        return
    if args.target == 'stream-lags':
        from loink_ros.tools.bench import stream_lags
        _emit(stream_lags.run(args.robot, args.tasks or stream_lags.SMOOTH,
                              args.seconds or stream_lags.DURATION_S,
                              args.seed or stream_lags.SEED, args.model), args.json)
        return
    if args.target == 'moveit-plugin':
        from loink_ros.tools.bench import moveit_plugin as bench_moveit_plugin
        _emit(bench_moveit_plugin.run(args.tasks or bench_moveit_plugin.DEFAULT_POSES,
                                      args.seed or bench_moveit_plugin.BENCH_SEED, args.robot,
                                      args.model), args.json)
        return
    if args.target == 'cartesian':
        from loink_ros.tools.bench import cartesian as bench_cartesian
        _emit(bench_cartesian.run(args.robot, args.tasks or bench_cartesian.DEFAULT_SMOOTH,
                                  args.seconds or bench_cartesian.DURATION_S,
                                  args.seed or bench_cartesian.SEED), args.json)
        return
    if args.target == 'public-paths':
        from loink_ros.tools.bench import public_paths
        _emit(public_paths.run(args.tasks or public_paths.DEFAULT_PATHS, args.seed or public_paths.SEED),
              args.json)
        return
    if args.target == 'hsa-errors':
        from loink_ros.tools.bench import hsa_errors
        _emit(hsa_errors.run(args.model or 'hsa', args.tasks or hsa_errors.DEFAULT_TARGETS,
                             args.seed or hsa_errors.SEED), args.json)
        return
    if args.target == 'hardware':
        from loink_ros.tools.bench import hardware as bench_hardware
        _emit(bench_hardware.run(args.tasks or bench_hardware.DEFAULT_PATHS,
                                 args.seconds or bench_hardware.DURATION_S,
                                 args.seed or bench_hardware.SEED), args.json)
        return
    if args.target == 'movegroup':
        from loink_ros.tools.bench import movegroup
        _emit(movegroup.run(args.tasks or 70, args.cartesian_paths, args.servo_paths_movegroup,
                            args.seed or movegroup.SEED), args.json)
        return
    if args.target == 'moveit-cartesian':
        from loink_ros.tools.bench import moveit_cartesian
        tasks = args.tasks or moveit_cartesian.DEFAULT_LINES
        _emit(moveit_cartesian.run(tasks, 2 * tasks // 5, tasks // 5, args.servo_paths,
                                   args.model or 'panda_full', args.seed or moveit_cartesian.SEED), args.json)
        return
    from loink_ros.tools.bench import magneto as bench_magneto
    from loink_ros.tools.bench import magneto_verify
    from loink_ros.tools.bench import panda as bench_panda
    from loink_ros.tools.bench import planar3 as bench_planar3
    from loink_ros.tools.bench import threads as bench_threads
    if args.target == 'threads':
        _emit(bench_threads.run(args.tasks or 200, args.seed or 12345), args.json)
        return
    benches = {'planar3': (bench_planar3.run, 500),
               'panda': (bench_panda.run, bench_panda.DEFAULT_TASKS),
               'magneto': (bench_magneto.run, 200), 'magneto-verify': (magneto_verify.run, 40)}
    if args.target not in benches:
        raise SystemExit(f'unknown bench {args.target!r}; known: {", ".join(benches)}')
    run, default_tasks = benches[args.target]
    _emit(run(args.model or args.target, args.tasks or default_tasks, args.seed or 12345),
          args.json)


def cmd_design(args) -> None:
    from loink_ros.tools import design_check
    _emit(design_check.run(args.robot, args.tasks, args.seed), args.json)


def cmd_plot(args) -> None:
    if args.kind == 'learning':
        from loink_ros.tools.plots.learning import learning_curves
        _emit(learning_curves([Path(log) for log in args.model], args.out), None)
        print(f'wrote {args.out}')
        return
    args.model = args.model[0]
    if args.kind == 'hsa':
        from loink_ros.tools.plots.hsa import plot_hsa
        for path in plot_hsa(Path(args.model), args.out):
            print(f'wrote {path}')
        return
    if args.kind == 'cartesian':
        from loink_ros.tools.plots.cartesian import cartesian_plan
        _emit(cartesian_plan(_solver(args), args.out), None)
        print(f'wrote {args.out}')
        return
    if args.kind == 'stream':
        from loink_ros.tools.plots.stream import stream_smoothing
        _emit(stream_smoothing(_solver(args), args.out), None)
        print(f'wrote {args.out}')
        return
    from loink_ros.tools.plots.latent import cost_against_spread, latent_space
    from loink_ros.tools.plots.magneto import magneto_postures
    plots = {'latent': latent_space, 'spread': cost_against_spread, 'magneto': magneto_postures}
    plots[args.kind](_solver(args), args.out)
    print(f'wrote {args.out}')


def cmd_robot(args) -> None:
    from loink_ros.core.problems.arms.robot_spec import SpecError
    from loink_ros.core.training import TrainingDiverged
    from loink_ros.tools.robot import train as robot_train
    try:
        if args.action == 'example':
            from loink_ros.tools.robot.init import copy_example_urdf
            print(f'wrote {copy_example_urdf(args.robot, args.out)}')
        elif args.action == 'init':
            from loink_ros.tools.robot.init import chain_summary, init_description
            path = init_description(args.urdf, args.base, args.tip, args.out, args.force)
            print(f'wrote {path}: {chain_summary(args.urdf, args.base, args.tip)}')
            print(f'next: loink robot train {path}')
        elif args.action == 'check':
            problem = robot_train.described_problem(args.description)
            figures, warning = robot_train.run_check(problem, accept=True)
            print(warning or f"passed: {figures['ambiguous_fraction']:.0%} of "
                  f"{figures['targets']} targets ambiguous "
                  f"(allowed {figures['max_ambiguous']:.0%})")
            print(f'figure: {problem.spec.output / "check.png"}')
            if warning:
                raise SystemExit(2)
        else:
            _emit(robot_train.train_robot(args.description, args.accept_ambiguity), args.json)
    except (SpecError, robot_train.CheckFailed, TrainingDiverged) as err:
        print(f'loink robot {args.action}: {err}', file=sys.stderr)
        raise SystemExit(2) from None


def cmd_moveit_library(args) -> None:
    from loink_ros.core.compiled.build import BuildError
    from loink_ros.core.compiled.model_library import build_library
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import load_model
    for name in args.models:
        model = load_model(name)
        try:
            build = build_library(model, problem_for_model(model), args.rebuild)
        except (BuildError, ValueError) as err:
            print(f'loink moveit-library: {name}: {err}', file=sys.stderr)
            raise SystemExit(2) from None
        print_build(build)


def print_build(build) -> None:
    """A built library's path and whether it was up to date or built now."""
    how = 'up to date' if build.cached else f'built in {build.seconds:.1f} s'
    print(f'{build.path} ({how})')


def cmd_runtime(args) -> None:
    from loink_ros.core.compiled.build import BuildError, compiled_library
    from loink_ros.core.problems.registry import problem_for_model
    from loink_ros.core.runtime.model_file import REPO_MODELS, load_model
    for name in args.models or sorted(p.stem for p in REPO_MODELS.glob('*.json')):
        try:
            build = compiled_library(problem_for_model(load_model(name)), args.rebuild)
        except BuildError as err:
            print(f'loink runtime: {name}: {err}', file=sys.stderr)
            raise SystemExit(2) from None
        print_build(build)


def cmd_demo(args) -> None:
    from loink_ros.tools.demo import run_demo
    run_demo(args.model)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='loink', description=__doc__)
    sub = parser.add_subparsers(dest='command', required=True)

    p = sub.add_parser('dataset', help='sample configurations, label task and cost, write .npz')
    p.add_argument('problem')
    p.add_argument('--count', type=int, default=200_000)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--out', type=Path, required=True,
                   help='.npz; labelled chunks are kept in OUT.parts/ until it is written, so '
                   'the same command after an interruption resumes')
    p.add_argument('--workers', type=int, default=os.cpu_count() or 1,
                   help='processes labelling chunks (default: one per CPU); the dataset is the '
                   'same for any number')
    p.add_argument('--on-bounds', type=_probability, default=0.0, metavar='P',
                   help='put each coordinate of each sample on its lower or upper bound with '
                   'probability P (default 0: uniform), for data on the faces of the range')
    p.set_defaults(func=cmd_dataset)

    p = sub.add_parser('train', help='train a network on a dataset (resumable)')
    p.add_argument('--data', type=Path, nargs='+', required=True,
                   help='one or more .npz of one problem, used together')
    p.add_argument('--out', type=Path, required=True, help='run folder: checkpoint.pt, log.csv')
    p.add_argument('--export', type=Path, help='also export to this stem, e.g. models/planar3')
    p.add_argument('--blocks', type=_ints, default=[64, 64], help='hidden blocks, e.g. 64,64')
    p.add_argument('--depth', type=int, default=2)
    p.add_argument('--mu', type=float, default=0.1)
    p.add_argument('--nu', type=float, default=10.0)
    p.add_argument('--learn-bounds', action='store_true')
    p.add_argument('--cost-hidden', type=_ints, default=[64, 64])
    p.add_argument('--cost-weight', type=float, default=1.0, help='loss weight lambda')
    p.add_argument('--epochs', type=int, default=60)
    p.add_argument('--batch-size', type=int, default=512)
    p.add_argument('--lr', type=float, default=2e-3)
    p.add_argument('--lr-final', type=float, default=1e-5)
    p.add_argument('--val-fraction', type=float, default=0.1)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--device', default='auto', help='auto, cpu or cuda')
    p.add_argument('--threads', type=int, default=1,
                   help="torch's CPU threads (default 1); the same seed gives the same network "
                   'bit for bit at the same thread count (docs/TRAINING.md)')
    p.add_argument('--no-resume', action='store_true')
    p.set_defaults(func=cmd_train)

    p = sub.add_parser('train-ikflow', help='train the IKFlow baseline on a dataset, export ONNX + JSON')
    p.add_argument('--data', type=Path, required=True)
    p.add_argument('--export', type=Path, required=True, help='stem, e.g. runs/ikflow_hsa')
    from loink_ros.baselines.ikflow_config import IkflowConfig
    defaults = IkflowConfig()
    for name in ('blocks', 'width', 'layers', 'epochs', 'batch_size', 'seed'):
        p.add_argument(f'--{name.replace("_", "-")}', type=int, default=getattr(defaults, name))
    for name in ('clamp', 'softflow', 'lr', 'lr_final', 'val_fraction'):
        p.add_argument(f'--{name.replace("_", "-")}', type=float, default=getattr(defaults, name))
    p.set_defaults(func=cmd_train_ikflow)

    p = sub.add_parser('export', help='export a run folder to ONNX + JSON')
    p.add_argument('run', type=Path)
    p.add_argument('--out', type=Path, required=True, help='stem, e.g. models/planar3')
    p.set_defaults(func=cmd_export)

    def model_arg(p):
        p.add_argument('model', help='shipped model name or path to its .json')
        p.add_argument('--json', metavar='FILE', help="write the JSON result here ('-': stdout)")

    p = sub.add_parser('info', help='model metadata')
    model_arg(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser('solve', help='cost-optimal configuration for a task')
    model_arg(p)
    p.add_argument('--task', type=_floats, required=True)
    p.add_argument('--latent', type=_floats, help=f'z (default 0: the optimum); each |z_i| <= {MAX_LATENT_ABS:g}')
    p.add_argument('--seed-q', type=_floats, help='configuration that warm-starts the network '
                   'inverse (saves iterations; the answer is the same)')
    p.add_argument('--refine', action='store_true')
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser('sample', help='K alternative solutions, z ~ N(0, c I), best first',
                       description='Alternative solutions from latents z ~ N(0, c I). Ranked: '
                       'answers within --task-tolerance of the task and without violations of '
                       "the problem's feasibility conditions first, then by cost.")
    model_arg(p)
    p.add_argument('--task', type=_floats, required=True)
    p.add_argument('--count', type=int, default=8)
    p.add_argument('--spread', type=float, default=0.5,
                   help=f'c, the variance of each latent component (std sqrt(c)); 0..{MAX_SPREAD:g}')
    p.add_argument('--random-seed', type=int)
    p.add_argument('--refine', action='store_true')
    p.add_argument('--task-tolerance', type=float, default=0.01,
                   help='largest task error (task units) of an answer ranked as meeting the '
                   'task (default 0.01)')
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser('track', help='follow a stream of targets with smoothing mu_s')
    model_arg(p)
    p.add_argument('--tasks-file', type=Path, help='CSV, one target per row')
    p.add_argument('--start', type=_floats, help='straight line from here ...')
    p.add_argument('--stop', type=_floats, help='... to here')
    p.add_argument('--steps', type=int, default=50)
    p.add_argument('--smoothing', type=float, default=0.0, help='mu_s >= 0')
    p.add_argument('--initial-q', type=_floats, help="the robot's configuration at the start")
    p.add_argument('--refine', action='store_true')
    p.set_defaults(func=cmd_track)

    p = sub.add_parser('bench', help='accuracy and speed figures as JSON')
    p.add_argument('target', help='planar3, panda, magneto (LOInK vs IPOPT), magneto-verify '
                   '(multi-start study, no model), node (service round trips over DDS), or '
                   'imports (start-up: fresh-process import times of the solver and the node), '
                   'or threads (solves per second with 1 and 2 threads sharing a solver), or '
                   'pose (full-pose IK against TRAC-IK, --robot), or fit (a model\'s task fit '
                   'and raw answers on held-out configurations, --model), or moveit-plugin '
                   '(searchPositionIK through the MoveIt plugin against TRAC-IK; needs '
                   'scripts/setup_moveit.sh), or stream (full-pose streams at 1 kHz against '
                   'TRAC-IK and pink, --robot), or stream-lags (where and why the pose stream '
                   'lags on smooth paths, and from which postures it would not, --robot), or '
                   'moveit-cartesian (MoveIt\'s CartesianInterpolator and a Servo-like loop '
                   'through the plugin against KDL; needs scripts/setup_moveit.sh), or cartesian '
                   '(whole Cartesian paths planned at once against the pose stream and MoveIt\'s '
                   'interpolator, --robot), or public-paths (paths in the style of the public '
                   'IK-path benchmarks and one needing a reconfiguration, planned as the path '
                   'service plans them, against MoveIt\'s interpolator with KDL), or movegroup '
                   '(the plugin inside a running move_group and '
                   'servo_node against KDL: OMPL pose goals among obstacles, Cartesian paths, '
                   'Servo pose tracking; needs scripts/setup_move_group.sh), or hardware (the '
                   'streams driving ros2_control\'s '
                   'trajectory and forward position controllers on a mock-hardware Panda: per '
                   'scenario (from rest beyond reach, controller and broadcaster switched off, a '
                   'target jumping 1 m, a planned path) and for smooth paths at 250 and 500 Hz, '
                   'the peaks of velocity, acceleration and jerk of the commands and of '
                   '/joint_states against the limits, jumps, latency to the controller\'s command '
                   'against an empty relay, tracking; needs `make ros2_control`), or '
                   'hsa-errors (where the HSA model\'s raw '
                   'error comes from: forward fit and inverse residual, interior and bound '
                   'targets, --model)')
    p.add_argument('--robot', default='panda', help='pose, stream, stream-lags: the robot (its pose model); '
                   'moveit-plugin: panda or xarm7 (its model)')
    p.add_argument('--ikflow', type=Path, help='hsa: the IKFlow model to compare (ONNX + JSON stem)')
    p.add_argument('--model', help='model to bench (default: the shipped one); moveit-plugin: '
                   'a model .json in place of --robot\'s (e.g. one `loink robot train` wrote); '
                   'moveit-cartesian: the arm\'s model (default panda_full: moveit_resources\' '
                   'Panda; another model: its own URDF, the chain as the group)')
    p.add_argument('--tasks', type=int, help='number of targets (default: 500 planar3, 300 panda, '
                   '2000 requests per client count for node; movegroup: 70 pose goals per scene; '
                   'imports: 20 processes per module; '
                   'pose: 10000 poses; moveit-plugin: 10000 poses; stream: 200 smooth '
                   'trajectories, and a quarter as many near-singular and leaving the reach; '
                   'stream-lags: 8 smooth trajectories; cartesian: 200 smooth paths, and a '
                   'quarter as many near-singular and leaving the reach; moveit-cartesian: 500 lines, and '
                   '2/5 as many rotations and 1/5 as many circles and squares; hardware: 3 '
                   'smooth paths per rate)')
    p.add_argument('--cartesian-paths', type=int, default=50,
                   help='movegroup: lines and rotations through compute_cartesian_path (default 50 each)')
    p.add_argument('--servo-paths-movegroup', type=int, default=5,
                   help='movegroup: smooth paths tracked by MoveIt Servo (default 5)')
    p.add_argument('--servo-paths', type=int, default=20,
                   help='moveit-cartesian: smooth stream paths of the Servo-like loop (default 20)')
    p.add_argument('--namespace', help='node: bench the loink_node running in this namespace '
                   'instead of starting one')
    p.add_argument('--load', type=int, default=0,
                   help='node: busy-loop processes running meanwhile (a loaded machine)')
    p.add_argument('--executor', choices=['multi_threaded', 'single_threaded', 'events'],
                   help="node: the started node's executor parameter (default: its own)")
    p.add_argument('--stream-pose', action='store_true',
                   help='node: only the pose stream, PoseStamped targets at 500 Hz along a '
                   'smooth trajectory (a full-pose model)')
    p.add_argument('--seconds', type=float,
                   help='stream, stream-lags: seconds per trajectory (default 10, at 1 kHz); '
                   'cartesian: (default 10, at 100 Hz); hardware: (default 4)')
    p.add_argument('--no-baselines', action='store_true',
                   help='stream: LOInK alone, without TRAC-IK and pink (a tenth of the time)')
    p.add_argument('--velocity-share', type=float,
                   help='stream: the share of its velocity limit that the fastest joint of a '
                   'path reaches (default 0.9)')
    p.add_argument('--seed', type=int, help='targets seed (default 12345; pose, moveit-plugin: 20261201; '
                   'moveit-cartesian: 20261205)')
    p.add_argument('--json', metavar='FILE')
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser('design', help='one clear optimum per task? candidate designs compared')
    p.add_argument('robot', choices=['planar3', 'panda'])
    p.add_argument('--tasks', type=int, default=150)
    p.add_argument('--seed', type=int, default=777)
    p.add_argument('--json', metavar='FILE')
    p.set_defaults(func=cmd_design)

    p = sub.add_parser('plot', help='figures as PNG')
    p.add_argument('kind', choices=['latent', 'spread', 'magneto', 'hsa', 'stream', 'cartesian',
                                    'learning'])
    p.add_argument('model', nargs='+', help='a model; for hsa, the JSON of `loink bench hsa`; '
                   "for learning, one or more training runs' log.csv")
    p.add_argument('--out', type=Path, required=True, help='PNG file; for hsa, a folder')
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser('robot', help='your own arm: describe it (init), check it, train it',
                       description='Any serial arm in a URDF, from a YAML description '
                       '(docs/ROBOT.md): init writes one, check tests that each target has one '
                       'clear optimum, train runs check, dataset, training, export, bench, '
                       'node parameters and report.')
    actions = p.add_subparsers(dest='action', required=True)
    a = actions.add_parser('example', help="copy a URDF of the installed example-robot-data")
    a.add_argument('robot', help='its path under example-robot-data/robots, e.g. '
                   'ur_description/urdf/ur5_robot.urdf')
    a.add_argument('--out', type=Path, required=True)
    a = actions.add_parser('init', help='write a commented description of a URDF chain')
    a.add_argument('--urdf', type=Path, required=True)
    a.add_argument('--base', required=True, help='base frame (link) of the chain')
    a.add_argument('--tip', required=True, help='tip frame (link) whose position is the task')
    a.add_argument('--out', type=Path, required=True, help='the description to write, e.g. my_arm.yaml')
    a.add_argument('--force', action='store_true', help='overwrite --out')
    a = actions.add_parser('check', help='the one-clear-optimum check alone, with fixes')
    a.add_argument('description', type=Path)
    a = actions.add_parser('train', help='check, dataset, train, export, bench, report')
    a.add_argument('description', type=Path)
    a.add_argument('--accept-ambiguity', action='store_true',
                   help='go on when the check fails (answers may be far from optimal)')
    a.add_argument('--json', metavar='FILE', help='also write the summary here')
    p.set_defaults(func=cmd_robot)

    p = sub.add_parser('moveit-library', help="build a model's library for the MoveIt plugin",
                       description='The library the in-process MoveIt plugin loads for a model '
                       '(its compiled solve with the weights built in), in '
                       '<cache>/moveit/<model>-<identity>-<cpu>.so (docs/MOVEIT.md); seconds when it '
                       'is up to date.')
    p.add_argument('models', nargs='+', help='shipped model names or model .json paths')
    p.add_argument('--rebuild', action='store_true', help='build even if it is there')
    p.set_defaults(func=cmd_moveit_library)

    p = sub.add_parser('runtime', help="build models' compiled runtime into the cache",
                       description='The compiled runtime the node and the solver load for a model '
                       '(docs/COMPILED.md), built into the cache, so that the first start is '
                       'not the one that builds it; seconds when it is up to date.')
    p.add_argument('models', nargs='*', help='model names or .json paths (default: every '
                   'shipped model)')
    p.add_argument('--rebuild', action='store_true', help='build even if it is there')
    p.set_defaults(func=cmd_runtime)

    p = sub.add_parser('demo', help='solve, sample and track on a shipped model')
    p.add_argument('--model', default='planar3')
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == 'track' and not args.tasks_file and (args.start is None or args.stop is None):
        print('loink track: give --tasks-file or both --start and --stop', file=sys.stderr)
        return 2
    if args.command == 'plot' and args.kind != 'learning' and len(args.model) != 1:
        print(f'loink plot: {args.kind} takes one model, not {len(args.model)}', file=sys.stderr)
        return 2
    try:
        if args.command in ('train', 'robot'):
            args.func(args)
        else:
            # One BLAS thread: the runtime works on tiny matrices, where threads only add waits.
            with threadpool_limits(1):
                args.func(args)
    except (SolverError, ModelFileError) as err:
        print(f'loink {args.command}: {err}', file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (`| head`) closed the pipe: stop quietly, as other command-line tools do.
        sys.stdout = None
        return 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
