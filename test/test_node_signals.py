"""SIGINT and SIGTERM stop loink_node promptly with exit status 0 and no traceback, idle
or while several clients hammer its services (a real process over DDS)."""
import os
import signal
import threading
import time

import pytest

# A stop must finish within this many seconds of the signal.
PROMPT = 5.0
CLIENTS = 4


def started(tag: str):
    from loink_msgs.srv import GetModelInfo
    from loink_ros.tools.node_process import NodeProcess, isolate_ros_environment, wait_for_services
    from loink_ros.tools.ros_calls import RosCalls
    isolate_ros_environment()
    process = NodeProcess(f'/{tag}_{os.getpid()}', {'model': 'planar3', 'refine': 'true'})
    calls = RosCalls(f'{tag}_client_{os.getpid()}')
    wait_for_services([calls.node.create_client(GetModelInfo, f'{process.prefix}/get_model_info')],
                      process)
    return process, calls


def hammer(process, calls, stop: threading.Event, answered: list) -> list[threading.Thread]:
    """CLIENTS threads sending solve requests back to back until `stop` or no answer."""
    from loink_msgs.srv import Solve

    def client() -> None:
        handle = calls.node.create_client(Solve, f'{process.prefix}/solve')
        handle.wait_for_service(timeout_sec=10.0)
        call = calls.first_call
        while not stop.is_set():
            try:
                call(handle, Solve.Request(task=[0.2]), timeout=1.0)
                call = calls.call
            except TimeoutError:
                return
            answered.append(1)
    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


def stop_and_check(process, number: int) -> None:
    began = time.monotonic()
    code, output = process.stop(timeout=PROMPT, signal_number=number)
    took = time.monotonic() - began
    assert code == 0, output[-2000:]
    assert took < PROMPT and 'Traceback' not in output, output[-2000:]


@pytest.mark.parametrize('number', [signal.SIGINT, signal.SIGTERM])
def test_idle_signal_exits_0(number):
    process, calls = started('signal_idle')
    try:
        stop_and_check(process, number)
    finally:
        calls.close()
        if process.alive():
            process.stop()


@pytest.mark.parametrize('number,trial', [(signal.SIGTERM, k) for k in range(5)]
                         + [(signal.SIGINT, k) for k in range(3)])
def test_signal_under_load_exits_0(number, trial):
    process, calls = started('signal_load')
    stop, answered = threading.Event(), []
    threads = hammer(process, calls, stop, answered)
    try:
        # Generous: the clients first discover the service, slow on a loaded machine.
        deadline = time.monotonic() + 30.0
        while len(answered) < 50 + 16 * trial:   # vary the moment of the signal
            assert time.monotonic() < deadline, 'the load did not get going'
            time.sleep(0.005)
        stop_and_check(process, number)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5.0)
        calls.close()
        if process.alive():   # a failed trial leaves no node loading the next tests
            process.stop()


def test_a_burst_of_signals_still_exits_0():
    """SIGINT and SIGTERM back to back, as a double Ctrl-C or ros2 launch's SIGINT then
    SIGTERM send them: a second signal while the first one's handler runs must not deadlock
    it (a handler that takes a lock, threading.Event.set, hung a node for good)."""
    process, calls = started('signal_burst')
    try:
        began, pid = time.monotonic(), process.process.pid
        for k in range(20000):   # until it has exited (a standard signal pending is one)
            try:
                os.kill(pid, signal.SIGINT if k % 2 else signal.SIGTERM)
            except ProcessLookupError:
                break
        code, output = process.stop(timeout=PROMPT, signal_number=signal.SIGTERM)
        assert code == 0 and time.monotonic() - began < PROMPT, output[-2000:]
        assert 'Traceback' not in output, output[-2000:]
    finally:
        calls.close()
