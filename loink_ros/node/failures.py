"""Start-up failures as one line on stderr: the reason, plus what C libraries printed."""

import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rclpy.exceptions import NameValidationException

# Where C code says an error came from: rcl appends ", at /src/rcl/arguments.c:415",
# urdfdom adds a line "at line 607 in /src/urdf_parser/src/joint.cpp".
SOURCE_LOCATION = re.compile(r',? at \S+\.c(pp)?:\d+|^at line \d+ in \S+$')
# rcl's log line before an argument error, which the error itself says better.
RCL_ARGUMENTS_LOG = re.compile(
    r"\[ERROR\] \[[\d.]+\] \[rcl\]: Failed to parse global arguments(; )?")


class StartupError(RuntimeError):
    """The node cannot start; the message is the one line printed on stderr."""


@dataclass
class Captured:
    """What was written to stderr (fd 2) and the warnings raised, as one line."""

    text: str = ''


def one_line(text: str) -> str:
    """Lines joined with '; ', blank and repeated ones and C source locations left out."""
    lines = (SOURCE_LOCATION.sub('', line.strip()).strip() for line in text.splitlines())
    return '; '.join(dict.fromkeys(line for line in lines if line))


@contextmanager
def captured_stderr() -> Iterator[Captured]:
    """Route fd 2 (C libraries such as urdfdom and rcl write there) and Python warnings
    (numpy's included) into one line, so that a start-up failure prints one line only."""
    captured = Captured()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            said = sink.read().decode(errors='replace')
            said += '\n'.join(f'{w.category.__name__}: {w.message}' for w in caught)
            captured.text = one_line(said)


def with_said(reason: str, said: str) -> str:
    """The reason, and what the libraries printed when it adds anything."""
    return f'{reason} (stderr: {said})' if said and said not in reason else reason


def init_error(err: Exception, said: str) -> str:
    """The line for a failure of rclpy.init: a bad --ros-args or parameter file."""
    if type(err).__name__ == 'UnknownROSArgsError':
        reason = f'unknown ROS arguments {err}'
    else:
        reason = one_line(str(err))
    if 'params file' in reason:
        reason += f' (a relative path is taken from the working directory {os.getcwd()})'
    return with_said(f'cannot start ROS: {reason}', RCL_ARGUMENTS_LOG.sub('', said))


def startup_error(err: Exception) -> str:
    """The line for a failure while the node was built."""
    if isinstance(err, StartupError):
        return str(err)
    if isinstance(err, NameValidationException):
        # A bad name's message is three lines: the reason, the name, a caret under it.
        return ' '.join(line.strip() for line in str(err).splitlines()[:2])
    return f'unexpected start-up failure: {type(err).__name__}: {one_line(str(err))}'
