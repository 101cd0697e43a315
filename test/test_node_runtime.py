"""The node's runtime and executor parameters, in real processes: every executor serves,
the log says which runtime solves, a missing compiler falls back to numpy with a warning,
bad values are one-line start-up failures."""

import pytest
from conftest import REPO, serve_node
from test_node_startup import assert_one_line, start

CONFIG = REPO / 'config' / 'planar3.yaml'


def solve_ok(node) -> None:
    from loink_msgs.srv import Solve
    response = node.call(Solve, 'solve', Solve.Request(task=[0.3], refine=True))
    assert response.success and response.solution.task_error < 1e-9, response.message


def has_events_executor() -> bool:
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize('executor', [
    'single_threaded', 'multi_threaded',
    # A platform skip, not a set-up one: rclpy's EventsExecutor exists from Kilted on (the
    # wheels set-up installs are Kilted, so here it runs); on a Jazzy install rclpy has none
    # and the node refuses executor:=events by design.
    pytest.param('events', marks=pytest.mark.skipif(not has_events_executor(),
                                                    reason='rclpy before Kilted'))])
def test_every_executor_serves_and_stops_cleanly(executor):
    for node in serve_node(f'executor_{executor}', CONFIG, {'executor': executor}):
        solve_ok(node)
        assert 'compiled runtime: ' in node.process.output()


def test_without_a_compiler_the_node_serves_from_numpy_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv('CC', 'no-such-compiler')
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))
    for node in serve_node('no_compiler', CONFIG, {}):
        solve_ok(node)
        output = node.process.output()
        assert '[WARN]' in output and "no C compiler: 'no-such-compiler'" in output, output
        assert 'solving in numpy' in output


def test_runtime_numpy_is_served_without_building(tmp_path, monkeypatch):
    monkeypatch.setenv('LOINK_CACHE_DIR', str(tmp_path))
    for node in serve_node('numpy_runtime', CONFIG, {'runtime': 'numpy'}):
        solve_ok(node)
        assert 'compiled runtime' not in node.process.output()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize('name, value', [('executor', 'fastest'), ('runtime', 'gpu')])
def test_unknown_choices_are_one_line_failures(name, value, tmp_path):
    line = assert_one_line(start(['--ros-args', '-p', f'{name}:={value}'], cwd=tmp_path))
    assert f'{name} must be one of' in line and repr(value) in line, line
