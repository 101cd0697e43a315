"""Every `ros2 ...` line the node prints, and every one in README.md and docs/, run verbatim
through the real ROS 2 Jazzy command line (.ros2tools, from ../shared/ros2tools).

A start line (`ros2 launch ...`, `ros2 run ...`) must bring up a node that serves; every
call line after it in the same document (`ros2 service call`, `ros2 topic pub/echo`,
`ros2 param set`) goes to the node that the latest start line brought up, and must succeed.
"""
import os
import re
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from background import REPO, Background

MODELS = ['planar3', 'panda', 'panda_full', 'xarm7_full', 'magneto', 'hsa']
START = ('ros2 launch ', 'ros2 run ')
PLACEHOLDER = re.compile(r'<[\w .-]+>')
# Lines that need no running node.
STANDALONE = ('ros2 pkg ', 'ros2 interface ')
CALL_TIMEOUT = 60.0
SERVE_TIMEOUT = 90.0
# Lines that neither feed nor read a topic: run side by side (a ros2 process spends half of
# its 1.3-2.5 s waiting on discovery). Topic lines share the node's solution topic: one at a
# time, beside those.
SIDE_BY_SIDE = ('ros2 service call ', 'ros2 param set ')

# Set-up installs the ros2 command line: missing, every test here fails (never skips;
# conftest.py).
pytestmark = pytest.mark.needs_setup(
    shutil.which('ros2') is not None,
    'the ros2 command line is not on PATH: scripts/setup.sh installs .ros2tools from '
    '../shared/ros2tools (source ./env.sh)')


def printed_examples(output: str) -> list[str]:
    """The `ros2 ...` lines a node printed after 'call it with:'."""
    after = output[output.index('call it with:'):]
    return [m.group(1) for m in re.finditer(r'^(?:\[\S+\] )?\s+(ros2 .+)$', after, re.M)]


def documented_lines(path: Path) -> list[str]:
    """`ros2 ...` lines inside the fenced code blocks of a markdown file, in order; templates
    (a `<placeholder>` to fill in) are not examples and are left out."""
    lines, fenced = [], False
    for line in path.read_text().splitlines():
        if line.startswith('```'):
            fenced = not fenced
        elif fenced and line.startswith('ros2 ') and not PLACEHOLDER.search(line):
            lines.append(line)
    return lines


def solution_topic(node: str) -> str:
    return f'{node}/joint_solution'


def run_line(line: str) -> subprocess.CompletedProcess:
    """A documented shell line in a process group of its own, killed whole at CALL_TIMEOUT: a
    ros2 process the shell started would otherwise outlive the kill, hold the pipes open (run()
    waiting on them for ever) and load the tests after it."""
    with subprocess.Popen(line, shell=True, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            raise subprocess.TimeoutExpired(line, CALL_TIMEOUT, out, err) from None
    return subprocess.CompletedProcess(line, process.returncode, out, err)


def run_standalone(line: str) -> None:
    result = run_line(line)
    assert result.returncode == 0 and result.stdout.strip(), f'{line}\n{result.stderr}'
    if line.startswith('ros2 pkg executables loink_ros'):
        assert 'loink_ros loink_node' in result.stdout, result.stdout


def run_call(line: str, node: str, tmp_path: Path) -> None:
    """Run one call line against the node named `node`; assert it did what it says."""
    if line.startswith('ros2 service call '):
        result = run_line(line)
        assert result.returncode == 0 and 'response:' in result.stdout, line + result.stderr
        if '/compute_ik ' in line:
            assert 'MoveItErrorCodes(val=1,' in result.stdout, f'{line}\n{result.stdout}'
        elif '/compute_cartesian_path ' in line:   # the whole path, timed
            assert 'fraction=1.0,' in result.stdout, f'{line}\n{result.stdout[-2000:]}'
            assert 'MoveItErrorCodes(val=1,' in result.stdout, f'{line}\n{result.stdout[-2000:]}'
            assert 'time_from_start=builtin_interfaces.msg.Duration(sec=0, nanosec=0)' in result.stdout
        elif '/get_model_info ' not in line:
            assert 'success=True, error_code=0' in result.stdout, f'{line}\n{result.stdout}'
    elif line.startswith('ros2 param set '):
        wait_until_listed(node)
        result = run_line(line)
        assert 'Set parameter successful' in result.stdout, f'{line}\n{result.stdout}'
    elif line.startswith('ros2 topic pub '):
        # Verbatim it publishes until stopped: a solution must come back meanwhile.
        publisher = Background(line, tmp_path / 'pub.log')
        echo = subprocess.run(['ros2', 'topic', 'echo', '--once', solution_topic(node),
                               'sensor_msgs/msg/JointState'],
                              capture_output=True, text=True, timeout=CALL_TIMEOUT)
        publisher.stop()
        assert 'position:' in echo.stdout, f'{line}: no solution\n{publisher.output()}'
    elif line.startswith('ros2 topic echo '):
        echo = Background(line, tmp_path / 'echo.log')
        assert echo.wait_for('position:', 5.0) or publish_example(node, echo), line
        echo.stop()
    else:
        pytest.fail(f'no check for example line {line!r}')


def run_calls(lines: list[str], node: str, tmp_path: Path) -> None:
    """run_call for each line: SIDE_BY_SIDE lines all at once, beside the topic lines, which
    run one after the other in their order."""
    topic_lines = [line for line in lines if not line.startswith(SIDE_BY_SIDE)]
    with ThreadPoolExecutor(max_workers=5) as pool:
        running = [pool.submit(run_call, line, node, tmp_path) for line in lines
                   if line.startswith(SIDE_BY_SIDE)]
        running.append(pool.submit(lambda: [run_call(line, node, tmp_path) for line in topic_lines]))
        for future in running:
            future.result()


def publish_example(node: str, echo: Background) -> bool:
    """Feed the node a few targets (its own printed example) while `echo` listens."""
    pub = next(line for line in EXAMPLES[node] if line.startswith('ros2 topic pub '))
    publisher = Background(pub.replace('--rate 20', '--rate 20 --times 40'),
                           echo.log_path.with_suffix('.pub'))
    answered = echo.wait_for('position:', CALL_TIMEOUT)
    publisher.stop()
    return answered


# Node name -> the example lines it printed (an echo line is fed by the node's own pub line).
EXAMPLES: dict[str, list[str]] = {}


def usage(node: Background) -> str:
    """The node's output once its usage message is whole (its last line, `ros2 param set`,
    ended), at most 5 s after 'call it with:'."""
    deadline = time.monotonic() + 5.0
    while not re.search(r'ros2 param set \S+ [^\n]*\n', node.output()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return node.output()


def start(line: str, tmp_path: Path) -> tuple[Background, str]:
    """Start a node with a documented line; (process, the node's full name)."""
    node = Background(line, tmp_path / 'node.log')
    assert node.wait_for('call it with:', SERVE_TIMEOUT), f'{line}\n{node.output()}'
    output = usage(node)
    name = re.search(r'ros2 param set (\S+) ', output).group(1)
    EXAMPLES[name] = printed_examples(output)
    return node, name


def wait_until_listed(name: str) -> None:
    """Until `ros2 node list` shows the node: the ros2 daemon, which `ros2 param` asks,
    has discovered it (a freshly started daemon answers 'Node not found' for a moment)."""
    deadline = time.monotonic() + CALL_TIMEOUT
    while time.monotonic() < deadline:
        listed = subprocess.run(['ros2', 'node', 'list'], capture_output=True, text=True,
                                timeout=CALL_TIMEOUT).stdout.split()
        if name in listed:
            return
        time.sleep(0.5)
    pytest.fail(f'{name} never appeared in ros2 node list')


def stop(node: Background, line: str, printed_examples_ran: bool = False) -> None:
    """Stop the node: exit 0, no traceback; where its printed examples ran, none of them
    found no solution."""
    if printed_examples_ran:
        assert 'is no solution' not in node.output(), node.output()
    code = node.stop()
    assert code == 0 and 'Traceback' not in node.output(), f'{line}\n{node.output()}'


# The markdown files that show ros2 commands (README.md, docs/SETUP.md, docs/NODE.md, ...);
# docs/HARDWARE.md's need ros2_control's environment and run in test_hardware.py.
DOCUMENTS = [path for path in [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]
             if documented_lines(path) and path.name != 'HARDWARE.md']


def started_model(line: str) -> str:
    """The shipped model a start line serves (`model:=` or its config file)."""
    return (re.search(r'model:=(\w+)', line) or re.search(r'config/(\w+)\.yaml', line)).group(1)


# The first document line that starts each model also runs the examples its node prints; a
# model no document starts gets a `ros2 run` of its own (test_ros2_run_...).
PRINTED_BY: dict[str, str] = {}
for _document in DOCUMENTS:
    for _line in documented_lines(_document):
        if _line.startswith(START):
            PRINTED_BY.setdefault(started_model(_line), _line)


def prints_examples(line: str) -> bool:
    """A start line that also runs its node's printed examples (PRINTED_BY)."""
    return PRINTED_BY.get(started_model(line)) == line


@pytest.mark.parametrize('model', [model for model in MODELS if model not in PRINTED_BY])
def test_ros2_run_serves_and_every_printed_example_succeeds(model, tmp_path):
    line = (f'ros2 run loink_ros loink_node --ros-args --params-file '
            f'"$(ros2 pkg prefix --share loink_ros)/config/{model}.yaml" -r __ns:=/printed_{model}')
    node, name = start(line, tmp_path)
    try:
        run_calls(printed(name), name, tmp_path)
    finally:
        stop(node, line, printed_examples_ran=True)


def printed(name: str) -> list[str]:
    """The examples the node named `name` printed: at least 4, each naming the node."""
    examples = EXAMPLES[name]
    assert len(examples) >= 4 and all(name in example for example in examples), examples
    return examples


@pytest.mark.parametrize('document', DOCUMENTS, ids=lambda p: p.name)
def test_every_documented_ros2_line_works(document, tmp_path):
    """Each line as documented; a start line that is its model's first (PRINTED_BY) also has
    the examples its node prints run."""
    lines = documented_lines(document)
    node = name = started = None
    calls: list[str] = []   # of the latest start line, run before the next one
    try:
        for line in lines:
            if line.startswith(START):
                run_calls(calls, name, tmp_path)
                calls.clear()
                if node is not None:
                    stop(node, started, prints_examples(started))
                node, name = start(line, tmp_path)
                started = line
                if prints_examples(line):
                    calls.extend(printed(name))
            elif line.startswith(STANDALONE):
                run_standalone(line)
            else:
                assert node is not None, f'{document.name}: {line!r} comes before any start line'
                if line not in calls:
                    calls.append(line)
        run_calls(calls, name, tmp_path)
    finally:
        if node is not None:
            stop(node, started, prints_examples(started))


@pytest.fixture(scope='module', autouse=True)
def ros_domain():
    """An isolated domain; `ros2 param` starts a daemon for it: do not leave it behind."""
    from loink_ros.tools.node_process import isolate_ros_environment
    isolate_ros_environment()
    yield
    subprocess.run(['ros2', 'daemon', 'stop'], capture_output=True, timeout=30)


def test_printed_param_set_line_works_on_a_just_started_daemon(tmp_path):
    """The printed `ros2 param set` line, run the moment the node is up, with no ros2 daemon
    running before it: the daemon it starts has not yet discovered the node, and ros2cli's
    default 1 s wait once answered 'Node not found' there."""
    subprocess.run(['ros2', 'daemon', 'stop'], capture_output=True, timeout=30)
    line = ('ros2 run loink_ros loink_node --ros-args --params-file '
            '"$(ros2 pkg prefix --share loink_ros)/config/planar3.yaml" -r __ns:=/fresh_daemon')
    node = Background(line, tmp_path / 'node.log')
    try:
        assert node.wait_for('call it with:', SERVE_TIMEOUT), node.output()
        param_set = next(example for example in printed_examples(usage(node))
                         if example.startswith('ros2 param set '))
        assert '--timeout' in param_set
        result = run_line(param_set)
        assert 'Set parameter successful' in result.stdout, f'{param_set}\n{result.stdout}'
    finally:
        stop(node, line)
