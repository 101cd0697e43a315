"""A loink_node process for tests and benches, started like `ros2 run` starts it."""

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def isolate_ros_environment() -> dict[str, str]:
    """Keep this process and its children off other ROS graphs (a domain, localhost only)."""
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 100)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    return {key: os.environ[key] for key in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE')}


def node_command() -> list[str]:
    """The loink_node console script: beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / 'loink_node'
    found = str(beside) if beside.exists() else shutil.which('loink_node')
    if found is None:
        raise FileNotFoundError('loink_node console script not found: pip install -e .')
    return [found]


class NodeProcess:
    """`loink_node --ros-args -r __ns:=<namespace> [-p name:=value ...]` in the background
    (or another node's `command`, whose node is called `node_name`)."""

    def __init__(self, namespace: str, parameters: dict[str, object] | None = None,
                 params_file: Path | None = None, cwd: Path | None = None,
                 command: list[str] | None = None, node_name: str = 'loink_node'):
        self.namespace, self.node_name = namespace, node_name
        args = ['--ros-args', '-r', f'__ns:={namespace}']
        if params_file is not None:
            args += ['--params-file', str(params_file)]
        for name, value in (parameters or {}).items():
            args += ['-p', f'{name}:={value}']
        # A file, not a pipe: a node that logs a lot must never block on a full pipe.
        self.log = tempfile.TemporaryFile('w+')
        self.process = subprocess.Popen((command or node_command()) + args, stdout=self.log,
                                        stderr=subprocess.STDOUT, text=True,
                                        env=os.environ.copy(), cwd=cwd)

    @property
    def prefix(self) -> str:
        """Where the node's private names live: <namespace>/<node name>."""
        return f'{self.namespace.rstrip("/")}/{self.node_name}'

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def output(self) -> str:
        """What the node printed so far (stdout and stderr)."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, timeout: float = 10.0,
             signal_number: int = signal.SIGINT) -> tuple[int, str]:
        """A signal (SIGINT: as Ctrl-C), then kill after `timeout` s; (exit code, output)."""
        if self.alive():
            self.process.send_signal(signal_number)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        output = self.output()
        self.log.close()
        return self.process.returncode, output


def wait_for_services(clients: list, process: NodeProcess, timeout: float = 30.0) -> None:
    """Block until every rclpy client sees its service; fail early if the node died."""
    deadline = time.monotonic() + timeout
    for client in clients:
        while not client.wait_for_service(timeout_sec=0.2):
            if not process.alive():
                code, output = process.stop()
                raise RuntimeError(f'loink_node exited with {code}: {output.strip()}')
            if time.monotonic() > deadline:
                raise TimeoutError(f'service {client.srv_name} did not appear')
