"""The model library of the in-process MoveIt plugin (compiled/model_library.py): the model's
numbers and the node's pose settings built in, loink_pose_ranked through it gives the node's
PoseSolver answers bit for bit, and a model without a tip-position task is refused."""
import ctypes
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import foreign_feature

from loink_ros.core.compiled.compiled_kernel import ACCEPT, RANKED_FIELDS, PoseQuery
from loink_ros.core.compiled.model_library import ABI, build_library, identity, library_key, library_path, load_library
from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import PoseRequest, PoseSolver
from loink_ros.core.runtime.solver import LOInKSolver


@pytest.fixture(scope='module', params=['panda_full', 'xarm7_full'])
def served(request, tmp_path_factory):
    """The shipped model's library in the cache (set-up's `loink moveit-library` built it;
    built here when it is not there or stale: building is tested below, in its own cache),
    loaded from a copy: a stale file this process opened to read its key keeps its path."""
    import shutil
    model = load_model(request.param)
    problem = problem_for_model(model)
    build = build_library(model, problem)
    assert build.path == library_path(model)
    copy = shutil.copy(build.path, tmp_path_factory.mktemp('served') / build.path.name)
    return model, PoseSolver(LOInKSolver(model, problem)), load_library(Path(copy))


def library_solve(library, pose_solver: PoseSolver, request: PoseRequest, count: int):
    """loink_pose_ranked through the library's own data, checked as the node checks."""
    lib, data = library
    n = data.n
    target = np.concatenate([request.target.position, request.target.rotation.ravel()])
    lower, upper = (np.ascontiguousarray(b, float) for b in pose_solver._bounds(request))
    query = PoseQuery(target.ctypes.data, int(request.target.position_only), count, 0,
                      lower.ctypes.data, upper.ctypes.data, None, 0.0, *request.tolerance, 0.0)
    accept = ACCEPT(lambda _, q: int(pose_solver._checked(
        np.ctypeslib.as_array(q, shape=(n,)).copy(), request) is not None))
    q, info, tried = np.empty((count, n)), np.empty((count, RANKED_FIELDS)), ctypes.c_int(0)
    found = lib.loink_pose_ranked(data.ints, data.reals, ctypes.byref(data.settings),
                                  ctypes.byref(query), accept, None, q.ctypes.data,
                                  info.ctypes.data, ctypes.byref(tried))
    return q[:max(found, 1)], found


def test_the_library_holds_the_model_and_its_settings(served):
    model, pose_solver, (_, data) = served
    problem = pose_solver.problem
    assert data.abi == ABI and data.model_name.decode() == model.name
    assert data.build_key.decode() == library_key(model, problem)
    assert data.identity.decode() == identity(model.path)
    assert [data.joint_names[i].decode() for i in range(data.n)] == list(problem.joint_names)
    assert (data.base_frame.decode(), data.tip_frame.decode()) == (problem.base_frame,
                                                                   problem.tip_frame)
    assert np.array_equal(np.ctypeslib.as_array(data.lower, shape=(data.n,)), problem.lower)
    settings = data.settings
    assert (settings.prior_count, settings.restarts, settings.descents) == (
        pose_solver.prior_starts, pose_solver.restarts, pose_solver.descents)


def test_the_library_answers_as_the_node_does(served):
    _, pose_solver, library = served
    problem = pose_solver.problem
    for q in problem.sample_collision_free(8, np.random.default_rng(21)):
        target = PoseTarget(*problem.tip_pose(q))
        for goal in (target, PoseTarget(target.position, target.rotation, True)):
            request = PoseRequest(goal, avoid_collisions=True)
            node = pose_solver.solve_ranked(request, 3)
            answers, found = library_solve(library, pose_solver, request, 3)
            assert found == len(node) and found >= 1
            assert all(np.array_equal(a, b.q) for a, b in zip(answers, node))


def test_a_model_that_is_not_a_tip_position_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))
    model = load_model('planar3')
    with pytest.raises(ValueError, match='not the tip position'):
        build_library(model, problem_for_model(model))


def test_a_retrained_model_gets_another_library(tmp_path):
    model = load_model('panda_full')
    meta = json.loads(model.path.read_text())
    meta['model_version'] = 'retrained'
    (tmp_path / meta['onnx']).write_bytes(model.onnx_path.read_bytes())
    path = tmp_path / 'panda_full.json'
    path.write_text(json.dumps(meta))
    assert library_path(load_model(str(path))) != library_path(model)


def test_machines_that_share_a_home_keep_a_library_each(monkeypatch):
    """The path names the CPU (model name and flags): a workstation and a robot computer
    with one home directory no longer overwrite each other's library."""
    from loink_ros.core.compiled import build
    model = load_model('panda_full')
    here = library_path(model)
    assert here.stem.endswith(f'-{build.cpu_key()}')
    monkeypatch.setattr(build, 'cpu_description', lambda: 'model name\t: another CPU')
    assert library_path(model) != here and library_path(model).parent == here.parent


def test_a_library_of_another_runtime_build_is_rebuilt(served, monkeypatch, tmp_path):
    """Up to date for the same model and runtime; an upgraded runtime (another build key:
    sources, compiler, flags) or other solver settings rebuild the library of an unchanged
    model."""
    import shutil

    import loink_ros.core.compiled.model_library as model_library
    import loink_ros.core.runtime.pose_solver as pose_solver_module
    model, pose_solver, _ = served
    problem = pose_solver.problem
    served_path = library_path(model)
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))   # the rebuild goes here
    library_path(model).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(served_path, library_path(model))
    assert build_library(model, problem).cached
    key = library_key(model, problem)
    monkeypatch.setattr(pose_solver_module, 'PRIOR_STARTS', pose_solver_module.PRIOR_STARTS + 1)
    assert library_key(model, problem) != key
    monkeypatch.setattr(pose_solver_module, 'PRIOR_STARTS', pose_solver_module.PRIOR_STARTS)
    monkeypatch.setattr(model_library, 'cache_key', lambda problem: 'another runtime')
    assert library_key(model, problem) != key
    assert not build_library(model, problem).cached
    # (The rebuilt file is not dlopen-ed again here: this process holds the first one.)
    assert f'"{library_key(model, problem)}"' in model_library.model_source(
        model, problem, library_key(model, problem))


def test_a_library_built_for_a_cpu_feature_this_cpu_lacks_is_refused_then_rebuilt(tmp_path,
                                                                                   monkeypatch):
    """What a workstation's library does on a robot computer without its instructions: its
    check refuses it before any call (no SIGILL), and `loink moveit-library` here rebuilds it
    for this CPU."""
    from loink_ros.core.compiled import cpu_features
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))
    model = load_model('panda_full')
    problem = problem_for_model(model)
    feature = foreign_feature()
    with monkeypatch.context() as patch:
        patch.setattr(cpu_features, 'native_features', lambda compiler: (feature,))
        path = build_library(model, problem).path
    with pytest.raises(cpu_features.CpuMismatch, match=rf'CPU features this CPU lacks \({feature}\)'):
        load_library(path)
    assert not build_library(model, problem).cached   # the refused library counts as stale
    # A fresh process (this one held the refused file once) loads the rebuilt one.
    loaded = subprocess.run(
        [sys.executable, '-c', 'import sys; from pathlib import Path; '
         'from loink_ros.core.compiled.model_library import load_library; '
         'lib, data = load_library(Path(sys.argv[1])); print(data.model_name.decode())', str(path)],
        capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0 and loaded.stdout.strip() == model.name, loaded.stderr


def test_the_library_checks_exactly_the_features_it_was_compiled_for(served):
    from loink_ros.core.compiled import cpu_features
    from loink_ros.core.compiled.build import compiler
    lib, _ = served[2]
    first = ctypes.c_char.in_dll(lib, 'loink_cpu_features')
    recorded = ctypes.cast(ctypes.addressof(first), ctypes.c_char_p).value.decode().split()
    assert tuple(recorded) == cpu_features.native_features(compiler())
    if cpu_features.native_features(compiler()):   # x86-64 with GCC: vector units in use
        assert {'sse3', 'sse4.2'} <= set(recorded)
