"""The joint_state output's commands (solution_topic only, a relay's input): the stream's
answers, velocity-limited. The controller outputs go through the motion layer instead
(motion_commander.py), with the same methods for the streams.

- A stream starts from the robot's measured configuration (/joint_states) where one is
  fresh (joint_states_max_age), else from its first answer: never from an old state.
- No answer moves a joint beyond velocity_scale x its URDF velocity limit over the time since
  the previous target: a farther answer is approached along the straight joint-space line,
  at that speed (core/runtime/velocity_limit.py), and the stream goes on from the command.
- An answer that is no solution (the target out of reach) is not sent on: the last command
  is repeated.
- No target for stream_timeout: /diagnostics says the stream holds.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rclpy.impl.rcutils_logger import RcutilsLogger

from loink_ros.core.runtime.velocity_limit import limited_step
from loink_ros.node.measured_state import CurrentConfiguration, StaleState

# The time a stream's first command may move over (no gap is known yet): a 100 Hz stream's.
FIRST_STEP_S = 0.01


class NotCommanded(ValueError):
    """A target whose answer cannot be commanded: why, in one line."""


@dataclass(frozen=True)
class Slot:
    """When a target's command is computed (monotonic s), and the time it may move over."""

    now: float
    budget: float
    stamp: float = 0.0     # the target's header stamp (s; 0: none)


@dataclass
class CommandCounts:
    """The commands so far, for /diagnostics."""

    sent: int = 0
    limited: int = 0      # moved at the velocity limit, short of the stream's answer
    stopped: int = 0      # the answer was no solution: the last command repeated
    holds: int = 0        # stale target streams held
    holding: bool = False


class Commander:
    """Turns stream answers into JointState commands (module docstring). `velocity_limits`
    None: a model whose URDF has none (no limit applied)."""

    def __init__(self, velocity_limits: np.ndarray | None, robot: CurrentConfiguration,
                 max_age: Callable[[], float], logger: RcutilsLogger):
        self.limits, self.robot, self.max_age, self.logger = velocity_limits, robot, max_age, logger
        self.last: np.ndarray | None = None   # the last command (model order)
        self.sent: float | None = None        # monotonic time it was sent
        self.counts, self.lock = CommandCounts(), threading.Lock()

    def start(self) -> np.ndarray | None:
        """A new stream, from the measured configuration where it is fresh; returns it."""
        try:
            self.last = self.robot.fresh(self.max_age()).positions
        except StaleState:
            self.last = None
        self.sent = None
        return self.last

    def slot(self, now: float, stamp: float = 0.0) -> Slot:
        """The time the next command, sent at `now`, may move over."""
        return Slot(now, FIRST_STEP_S if self.sent is None else now - self.sent, stamp)

    def command(self, answer: np.ndarray, solved: bool, slot: Slot,
                scale: float) -> tuple[np.ndarray, bool]:
        """The command for a stream's `answer`; returns it and whether it falls short of the
        answer (velocity-limited, or held because the answer is no solution)."""
        previous = self.last
        if previous is None:                 # no measured start: the first answer
            q, short = np.array(answer, float), False
        elif not solved:
            q, short = previous.copy(), True
        elif self.limits is None:
            q, short = np.array(answer, float), False
        else:
            q, short = limited_step(previous, answer, scale * self.limits * slot.budget)
        with self.lock:
            c = self.counts
            c.sent += 1
            c.limited += short and solved
            c.stopped += not solved
            c.holding = False
        self.last, self.sent = q, slot.now
        return q, short

    def check_stale(self, timeout: float) -> None:
        """Mark the stream holding when no command came for `timeout` s (a timer's)."""
        if self.sent is None or self.counts.holding:
            return
        idle = time.monotonic() - self.sent
        if idle <= timeout:
            return
        with self.lock:
            self.counts.holding = True
            self.counts.holds += 1
        self.logger.info(f'no target for {idle:.2f} s (stream_timeout): holding')

    def diagnostics(self) -> tuple[dict[str, str], str | None]:
        """The /diagnostics entries, and an error to report (none here)."""
        with self.lock:
            c = CommandCounts(**vars(self.counts))
        return {'commands sent': str(c.sent),
                'commands velocity-limited': str(c.limited),
                'commands stopped (no solution)': str(c.stopped),
                'holds (stale targets)': str(c.holds),
                'holding': 'yes: no target for stream_timeout' if c.holding else 'no'}, None
