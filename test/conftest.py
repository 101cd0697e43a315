"""Shared fixtures: a tiny planar3 model, trained and exported once per test session.

The model is deliberately poor (a few CPU seconds of training): the tests check the
machinery (training, export, runtime, CLI), not the accuracy of a shipped model.
"""
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# jsrm's one-segment derivation (about a minute), started at collection: test_hsa_statics.py.
JSRM_PROCESS = pytest.StashKey[subprocess.Popen]()

# ---- what set-up must provide (house rule: a test never skips because set-up left it out) ----
#
# A module (`pytestmark = pytest.mark.needs_setup(present, missing)`) or a test marks what it
# needs from set-up: the ../shared pieces and what scripts/setup*.sh build from them
# (moveit_msgs, the ros2 command line, launch, colcon, the MoveIt build, ros2_control).
# `present` is a bool, or a callable taking no arguments (an ImportError from it counts as
# absent); where it is false, each marked test fails at its set-up with `missing` (what is
# absent and what provides it), before any fixture starts: missing infrastructure fails, it
# never skips, and the suite still collects.
NEEDS_SETUP = 'needs_setup'


def pytest_configure(config) -> None:
    config.addinivalue_line(
        'markers', f'{NEEDS_SETUP}(present, missing): what set-up must provide; where '
                   '`present` is false the test fails (never skips) saying `missing`')


def setup_present(present) -> bool:
    """A needs_setup mark's `present`: a bool, or a callable (ImportError: absent)."""
    if not callable(present):
        return bool(present)
    try:
        return bool(present())
    except ImportError:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """Fail (not skip) a test whose needs_setup marks name something set-up left out."""
    for mark in item.iter_markers(NEEDS_SETUP):
        present, missing = mark.args
        if not setup_present(present):
            pytest.fail(f'set-up left this out: {missing}', pytrace=False)


def start_jsrm_one_segment() -> subprocess.Popen:
    """test/jsrm_one_segment.py in the background, its JSON on stdout."""
    script = Path(__file__).with_name('jsrm_one_segment.py')
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def pytest_collection_modifyitems(config, items) -> None:
    """Start jsrm's derivation now where test_hsa_statics.py will run: it runs beside the
    tests that come first."""
    if any(item.module.__name__ == 'test_hsa_statics' for item in items):
        config.stash[JSRM_PROCESS] = start_jsrm_one_segment()


# Dataset size, seeds and architecture of the tiny model (kept small: a few seconds).
TINY_SAMPLES = 4000
DATA_SEED = 0
TRAIN_SEED = 3
TINY_EPOCHS = 4


@pytest.fixture(scope='session', autouse=True)
def hsa_library():
    """The HSA model's compiled library, built before any test starts a node on it: on a
    fresh cache its build (the generated SQP) takes about a minute, longer than a node's
    start-up wait. A no-op once cached."""
    from loink_ros.core.compiled.build import compiled_library
    from loink_ros.core.problems.registry import make_problem
    return compiled_library(make_problem('hsa'))


# CPU features GCC can check that a CPU of another vendor or line has (AMD's XOP and FMA4,
# Xeon Phi's AVX-512 ER and PF): one of them is missing on any CPU.
FOREIGN_FEATURES = ('xop', 'fma4', 'sse4a', 'avx512er', 'avx512pf', 'avx5124vnniw')


def foreign_feature() -> str:
    """A CPU feature this CPU lacks, for a library as a CPU that has it would build it."""
    import tempfile

    from loink_ros.core.compiled import cpu_features
    from loink_ros.core.compiled.build import compiler
    with tempfile.TemporaryDirectory() as work:
        has = cpu_features.cpu_has(compiler(), list(FOREIGN_FEATURES), Path(work))
    return next(name for name, present in zip(FOREIGN_FEATURES, has) if not present)


@dataclass
class TinyModel:
    """What the session fixture built: inputs of the training run and its outputs."""

    problem: object      # Planar3Problem
    dataset: object      # Dataset
    config: object       # TrainConfig
    run_dir: Path        # checkpoint.pt, log.csv
    json_path: Path
    onnx_path: Path
    result: object       # TrainResult (float64 net on the CPU)


def tiny_config(**changes):
    """The tiny model's TrainConfig, with optional field changes."""
    from loink_ros.core.network.loink_net import NetworkConfig
    from loink_ros.core.training import TrainConfig
    settings = dict(network=NetworkConfig(blocks=[16, 16], depth=2, cost_hidden=[16]),
                    epochs=TINY_EPOCHS, batch_size=256, lr=5e-3, seed=TRAIN_SEED, device='cpu')
    settings.update(changes)
    return TrainConfig(**settings)


@pytest.fixture(scope='session')
def make_config():
    """tiny_config, for tests that train variants of the tiny model."""
    return tiny_config


@pytest.fixture(scope='session')
def tiny(tmp_path_factory) -> TinyModel:
    from loink_ros.core.dataset import generate_dataset
    from loink_ros.core.export import export_model
    from loink_ros.core.problems.arms.planar3 import Planar3Problem
    from loink_ros.core.training import train

    root = tmp_path_factory.mktemp('tiny_model')
    problem = Planar3Problem()
    dataset = generate_dataset(problem, TINY_SAMPLES, DATA_SEED, progress=False)
    config = tiny_config()
    result = train(dataset, problem, config, root / 'run', resume=False, progress=False)
    onnx_path, json_path = export_model(result, problem, root / 'tiny')
    return TinyModel(problem, dataset, config, root / 'run', json_path, onnx_path, result)


@pytest.fixture(scope='session')
def tiny_solver(tiny):
    """A numpy-backend LOInKSolver on the tiny model."""
    from loink_ros.core.runtime.model_file import load_model
    from loink_ros.core.runtime.solver import LOInKSolver
    return LOInKSolver(load_model(str(tiny.json_path)), tiny.problem)


# ---- loink_node as a real process over DDS (test_node.py, test_moveit_ik.py) ----

REPO = Path(__file__).resolve().parents[1]


@dataclass
class ServedNode:
    """A running loink_node and the rclpy side of the test that talks to it."""

    process: object   # loink_ros.tools.node_process.NodeProcess
    calls: object     # loink_ros.tools.ros_calls.RosCalls

    @property
    def name(self) -> str:
        """Full name of the node, e.g. /test_node_123/loink_node."""
        return self.process.prefix

    def call(self, srv_type, service: str, request, timeout: float = 10.0):
        """Call one of the node's services: a name under the node, or an absolute one."""
        name = service if service.startswith('/') else f'{self.name}/{service}'
        return self.calls.request(srv_type, name, request, timeout)

    def set(self, **values) -> list:
        """Set node parameters (as `ros2 param set`); one SetParametersResult each."""
        return self.calls.set_parameters(self.name, **values)


def serve_node(tag: str, config: Path, overrides: dict):
    """Start loink_node (isolated domain, localhost), yield it, stop it; it must exit cleanly."""
    from loink_msgs.srv import GetModelInfo
    from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment, wait_for_services
    isolate_ros_environment()
    from loink_ros.tools.ros_calls import RosCalls
    process = NodeProcess(f'/{tag}_{os.getpid()}', overrides, params_file=config)
    calls = RosCalls(f'{tag}_client_{os.getpid()}')
    try:
        probe = calls.node.create_client(GetModelInfo, f'{process.prefix}/get_model_info')
        wait_for_services([probe], process)
        yield ServedNode(process, calls)
    finally:
        calls.close()
        code, output = process.stop()
    assert code == 0 and 'Traceback' not in output, output


@pytest.fixture(scope='module')
def planar3_node(request):
    """loink_node on config/planar3.yaml, one process per test module.

    A module may set LOINK_NODE_PARAMETERS = {name: value} for `-p` overrides.
    """
    overrides = getattr(request.module, 'LOINK_NODE_PARAMETERS', {})
    yield from serve_node(request.module.__name__, REPO / 'config' / 'planar3.yaml', overrides)


@pytest.fixture(scope='module')
def panda_node(request):
    """loink_node on config/panda.yaml, one per module."""
    yield from serve_node(f'panda_{request.module.__name__}', REPO / 'config' / 'panda.yaml', {})


@pytest.fixture(scope='module')
def panda_full_node(request):
    """loink_node on config/panda_full.yaml (full poses), one per module."""
    yield from serve_node(f'panda_full_{request.module.__name__}',
                          REPO / 'config' / 'panda_full.yaml', {})


@pytest.fixture(scope='module')
def magneto_node(request):
    """loink_node on config/magneto.yaml, one per module."""
    yield from serve_node(f'magneto_{request.module.__name__}', REPO / 'config' / 'magneto.yaml', {})


@pytest.fixture(scope='module')
def hsa_node(request):
    """loink_node on config/hsa.yaml (the HSA soft robot), one per module."""
    yield from serve_node(f'hsa_{request.module.__name__}', REPO / 'config' / 'hsa.yaml', {})


# ---- poses beyond panda_full's reach (test_pose_service.py, test_moveit_pose.py) ----

# Straight up just beyond the bound plus panda_full.yaml's task_tolerance (1e-5 m), 5 m away,
# and absurd but finite coordinates (1e300: their distance, 1.7e300 m, does not overflow).
BEYOND = {'just_beyond': lambda bound: [0.0, 0.0, bound + 1e-5 + 1e-3],
          '5_m': lambda bound: [3.0, 0.0, 4.0],
          '1e300': lambda bound: [1e300, -1e300, 1e300]}


@pytest.fixture(scope='module')
def reach_bound():
    """panda_full's certified reach (m) from its base origin."""
    from loink_ros.core.problems.arms.reach import reach
    from loink_ros.core.problems.registry import make_problem
    return reach(make_problem('panda_full')).bound
