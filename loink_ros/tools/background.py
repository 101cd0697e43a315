"""A shell command run in the background as a user runs it: for the ros2 command-line tests
and the mock-hardware robot (tools/mock_robot.py)."""

import os
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class Background:
    """A bash command in its own process group, run in the repository, its output in a file."""

    def __init__(self, command: str, log: Path):
        self.log_path = log
        self.log = log.open('w')
        # bash execs a lone command, so signals reach it and its exit code is the command's.
        self.process = subprocess.Popen(command, shell=True, executable='/bin/bash', cwd=REPO,
                                        stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def output(self) -> str:
        return self.log_path.read_text(errors='replace')

    def wait_for(self, text: str, timeout: float) -> bool:
        """Whether `text` appears in the output within `timeout` s (or before an exit)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.process.poll() is not None:
                return text in self.output()
            time.sleep(0.1)
        return False

    def wait(self, timeout: float) -> int:
        """The exit code, once it exits within `timeout` s."""
        return self.process.wait(timeout=timeout)

    def stop(self) -> int:
        """SIGINT to the group (Ctrl-C), then SIGKILL; the exit code."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
        return self.process.returncode
