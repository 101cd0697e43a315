"""The Panda target stream while the machine is busy: the latest target is answered, and
answered + dropped + skipped targets add up to the targets sent (the node's own counts on
/diagnostics). A real loink_node process, two busy-loop processes beside it."""
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
BUSY = 2


@pytest.fixture(scope='module')
def tasks():
    from loink_ros.core.problems.registry import make_problem
    from loink_ros.core.runtime.model_file import load_model
    model = load_model('panda')
    robot = make_problem('panda')
    rng = np.random.default_rng(5)
    reached = robot.task(rng.uniform(model.joint_lower, model.joint_upper, (400, 7)))
    inside = np.all((reached > model.task_lower) & (reached < model.task_upper), axis=1)
    return reached[inside][:100]


@pytest.mark.parametrize('rate', [20.0, 100.0])
def test_stream_under_cpu_load(panda_node, tasks, rate):
    from loink_ros.tools.bench.node import cpu_load, stream_figures
    with cpu_load(BUSY):
        figures = stream_figures(panda_node.calls, panda_node.name, tasks, rate)
    counts = figures['node_counts']
    assert figures['last_answered'], figures
    assert counts['dropped'] == 0, figures
    assert counts['answered'] + counts['skipped'] == figures['sent'], figures
    assert figures['received_here'] == counts['answered'], figures
    # Not a backlog: answers come within a few target periods.
    assert figures['latency_ms_p50'] < 1e3 * 5 / rate + 50, figures
