"""Corrupt models are refused at load with one line, by load_model / LOInKSolver and by the
real loink_node process (exit status 1, one line on its output)."""
import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from loink_ros.core.problems.arms.planar3 import Planar3Problem
from loink_ros.core.runtime.errors import ModelFileError
from loink_ros.core.runtime.model_file import load_model, resolve_model
from loink_ros.core.runtime.solver import LOInKSolver

NODE_EXIT_SECONDS = 20.0   # generous for a loaded 2-core machine; a healthy start serves on


def set_nan(*keys):
    def change(meta):
        section = meta
        for key in keys[:-1]:
            section = section[key]
        value = section[keys[-1]]
        section[keys[-1]] = [float('nan')] + value[1:] if isinstance(value, list) else float('nan')
    return change


def swap_task_bounds(meta):
    p = meta['problem']
    p['task_lower'], p['task_upper'] = p['task_upper'], p['task_lower']


def inf_weight(meta):
    meta['network']['layers'][1]['blocks'][0]['S'][0][0] = float('inf')


def huge_integer(meta):
    meta['normalization']['cost_std'] = 10 ** 400   # valid JSON, beyond any float


def nudge_weight(meta):
    # Finite and well formed, but no longer the network the ONNX file holds.
    meta['network']['layers'][0]['b'][0] += 0.01


def narrow_joint_limits(meta):
    # The JSON reports narrower limits than the URDF's, which answers are clipped to.
    meta['problem']['joint_lower'][1] = -1.0


def far_example(meta):
    meta['problem']['example_configuration'] = [5.0, 0.0, 0.0]


def write_onnx(data: bytes | None):
    def change(folder):
        if data is None:
            (folder / 'planar3.onnx').write_bytes(np.random.default_rng(0).bytes(4096))
        else:
            (folder / 'planar3.onnx').write_bytes(data)
    return change


def foreign_onnx(folder):
    shutil.copy(resolve_model('panda').with_suffix('.onnx'), folder / 'planar3.onnx')


# name: (JSON change, ONNX change, refused by load_model (else LOInKSolver), words of the message)
CORRUPT = {
    'NaN y_mean': (set_nan('normalization', 'y_mean'), None, True, 'normalization.y_mean'),
    'NaN y_std': (set_nan('normalization', 'y_std'), None, True, 'normalization.y_std'),
    'NaN cost_mean': (set_nan('normalization', 'cost_mean'), None, True, 'cost_mean'),
    'NaN task bounds': (set_nan('problem', 'task_lower'), None, True, 'problem.task_lower'),
    'task bounds swapped': (swap_task_bounds, None, True, 'task_lower is not below'),
    'inf weight': (inf_weight, None, True, 'network.layers[1]'),
    'integer beyond float': (huge_integer, None, True, 'normalization.cost_std'),
    'weights edited': (nudge_weight, None, True, 'disagrees with the JSON weights'),
    'example outside the limits': (far_example, None, True, 'example_configuration'),
    'random-bytes ONNX': (None, write_onnx(None), True, 'not a usable ONNX model'),
    'empty ONNX': (None, write_onnx(b''), True, 'not a usable ONNX model'),
    "another model's ONNX": (None, foreign_onnx, True, 'not a usable ONNX model'),
    'joint limits differ from the URDF': (narrow_joint_limits, None, False, 'elbow'),
}


def corrupt_copy(folder, case):
    """The shipped planar3 model copied into `folder` with one corruption; its JSON path."""
    change_json, change_onnx, _, _ = CORRUPT[case]
    folder.mkdir()
    source = resolve_model('planar3')
    shutil.copy(source.with_suffix('.onnx'), folder / 'planar3.onnx')
    meta = json.loads(source.read_text())
    if change_json:
        change_json(meta)
    (folder / 'planar3.json').write_text(json.dumps(meta))
    if change_onnx:
        change_onnx(folder)
    return folder / 'planar3.json'


@pytest.mark.parametrize('case', CORRUPT)
def test_corrupt_model_is_refused_with_one_line(tmp_path, case):
    path = corrupt_copy(tmp_path / 'model', case)
    at_load, words = CORRUPT[case][2], CORRUPT[case][3]
    if at_load:
        with pytest.raises(ModelFileError) as caught:
            load_model(str(path))
    else:
        model = load_model(str(path))
        with pytest.raises(ValueError) as caught:
            LOInKSolver(model, Planar3Problem())
    message = str(caught.value)
    assert words in message and '\n' not in message, message


def test_the_intact_copy_loads_and_solves(tmp_path):
    # Guards the corrupt cases: copying alone breaks nothing.
    path = corrupt_copy(tmp_path / 'model', 'NaN y_mean')
    meta = json.loads(resolve_model('planar3').read_text())
    path.write_text(json.dumps(meta))
    solver = LOInKSolver(load_model(str(path)), Planar3Problem())
    assert solver.solve(solver.example_task(), refine_answer=True).task_error < 1e-9


def test_an_older_file_without_an_example_still_loads(tmp_path):
    path = corrupt_copy(tmp_path / 'model', 'NaN y_mean')
    meta = json.loads(resolve_model('planar3').read_text())
    del meta['problem']['example_configuration']
    path.write_text(json.dumps(meta))
    model = load_model(str(path))
    assert model.example_configuration is None
    solver = LOInKSolver(model, Planar3Problem())
    expected = solver.problem.task(solver.problem.example_configuration())[0]
    assert np.array_equal(solver.example_task(), expected)


@pytest.fixture(scope='module')
def refusals(tmp_path_factory) -> dict[str, tuple[int | None, str]]:
    """loink_node started on each corrupt model, two at a time (each start is a second of
    imports on one core): {case: (exit code, output)}."""
    from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment
    isolate_ros_environment()
    folders = {case: tmp_path_factory.mktemp('corrupt') / 'model' for case in CORRUPT}

    def refused(case: str) -> tuple[int | None, str]:
        node = NodeProcess(f'/corrupt_{abs(hash(case)) % 10 ** 6}',
                           {'model': str(corrupt_copy(folders[case], case))})
        try:
            code = node.process.wait(timeout=NODE_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        return node.stop() if code is None else (code, node.stop()[1])

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(CORRUPT, pool.map(refused, CORRUPT)))


@pytest.mark.parametrize('case', CORRUPT)
def test_the_node_refuses_a_corrupt_model(refusals, case):
    code, output = refusals[case]
    lines = output.strip().splitlines()
    assert code == 1, output
    assert len(lines) == 1 and lines[0].startswith('loink_node:'), output
    assert CORRUPT[case][3] in lines[0]
