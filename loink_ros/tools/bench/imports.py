"""`loink bench imports`: wall time of importing the runtime solver and the node, fresh
processes, and the first-start cost of the compiled runtime.

Each run is a new `python -c "import M"` with this process's environment; the modules are
timed in turn, round after round, so load on the machine hits them alike. Two floors are
timed the same way: the interpreter's start-up (`python -c pass`) and `import numpy`, which
the runtime cannot do without. The compiled runtime's start is timed per shipped model in
an empty cache: building its library, then a solver taking it from the cache (load and
check against numpy), beside a numpy-only solver.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

MODULES = ('loink_ros.core.runtime.solver', 'loink_ros.node.loink_node')
FLOORS = {'interpreter': 'pass', 'numpy': 'import numpy'}
DEFAULT_RUNS = 20
# The issue-8 target for importing the runtime solver, seconds.
SOLVER_TARGET_S = 0.15
# Packages that must stay off the runtime's import path, and the heavy ones worth seeing.
WATCHED = ('onnxruntime', 'tqdm', 'torch', 'scipy', 'pinocchio', 'casadi', 'rclpy')
LOADED = ('import importlib, json, sys; importlib.import_module(sys.argv[1]); '
          'print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2:]))))')


def import_seconds(code: str) -> float:
    """Wall time of one fresh interpreter running `code`."""
    began = time.perf_counter()
    subprocess.run([sys.executable, '-c', code], check=True)
    return time.perf_counter() - began


def loaded_packages(module: str) -> list[str]:
    """The WATCHED packages in sys.modules after importing `module`."""
    out = subprocess.run([sys.executable, '-c', LOADED, module, *WATCHED], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def summary(times: list[float]) -> dict[str, float]:
    return {'median_s': statistics.median(times), 'min_s': min(times), 'max_s': max(times)}


@contextmanager
def empty_cache():
    """LOINK_CACHE_DIR set to a new empty folder for the block."""
    before = os.environ.get('LOINK_CACHE_DIR')
    with tempfile.TemporaryDirectory() as folder:
        os.environ['LOINK_CACHE_DIR'] = folder
        try:
            yield
        finally:
            if before is None:
                del os.environ['LOINK_CACHE_DIR']
            else:
                os.environ['LOINK_CACHE_DIR'] = before


def compiled_start(names: tuple[str, ...] = ('planar3', 'panda', 'magneto')) -> dict:
    """Per model: seconds to build the library, to make a solver from the cache, and to make
    a numpy-only solver."""
    from loink_ros.core.compiled.build import compiled_library
    from loink_ros.core.problems.registry import make_problem
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    out = {}
    with empty_cache():
        for name in names:
            model, problem = load_model(name), make_problem(name)
            built = compiled_library(problem)
            began = time.perf_counter()
            solver = LOInKSolver(model, problem)
            cached = time.perf_counter() - began
            began = time.perf_counter()
            LOInKSolver(model, problem, runtime='numpy')
            out[name] = {'compiled_build_s': built.seconds, 'cached_solver_s': cached,
                         'numpy_solver_s': time.perf_counter() - began,
                         'runtime': solver.runtime}
    return out


def run(runs: int = DEFAULT_RUNS) -> dict:
    """Median, min and max import wall time per module over `runs` fresh processes."""
    codes = FLOORS | {m: f'import {m}' for m in MODULES}
    times: dict[str, list[float]] = {name: [] for name in codes}
    for code in codes.values():   # unmeasured: fills the OS file cache
        import_seconds(code)
    for _ in range(runs):
        for name, code in codes.items():
            times[name].append(import_seconds(code))
    modules = {m: summary(times[m]) | {'loaded': loaded_packages(m)} for m in MODULES}
    solver = modules[MODULES[0]]['median_s']
    return {'runs': runs, 'timing': f'wall time of a fresh `python -c "import M"`, median, min '
            f'and max over {runs} runs, modules in turn',
            'floors': {name: summary(times[name]) for name in FLOORS}, 'modules': modules,
            'solver_target_s': SOLVER_TARGET_S, 'solver_meets_target': solver < SOLVER_TARGET_S,
            'compiled_start': compiled_start()}
