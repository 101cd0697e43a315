"""What makes a stream's answers safe to send to a robot: both streams' commands go through
one Commander.

- A stream starts from the robot's measured configuration (/joint_states): before one is
  known, a controller output commands nothing (the target is dropped, saying why).
- No command moves a joint beyond velocity_scale x its URDF velocity limit over the time it
  is given (Slot): a farther answer is approached along the straight joint-space line, at
  that speed (core/runtime/velocity_limit.py), and the stream goes on from the command.
- An answer that is no solution (the target out of reach) is not commanded: the robot stops
  where it is, on its branch.
- No target for stream_timeout: the robot holds the last command (no command follows it: the
  controller keeps it) and /diagnostics says so; the next target starts again from the
  measured configuration.

The time a command is given: for an output applied at once (forward_position, joint_state),
the time since the previous command. A joint_trajectory_controller instead interpolates to
each command by the time it is due: command k is due `lead` after it is sent, the lead being
the longest gap between the stream's last LEAD_WINDOW targets (shrinking slowly after a long
one) plus `pickup` (command_lead: the time a message may take to reach the controller and be
taken up), so that the next command arrives before the robot gets there however the targets'
gaps vary; it is given the time from the previous command's due time (or from when
the controller can take it up, where that has passed) to its own. The robot trails the stream
by that lead.
"""

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rclpy.impl.rcutils_logger import RcutilsLogger

from loink_ros.core.runtime.velocity_limit import limited_step
from loink_ros.node.command_output import CommandOutput

# The time a stream's first command may move over (no gap is known yet): a 100 Hz stream's.
FIRST_STEP_S = 0.01
# Targets whose gaps set a trajectory command's lead.
LEAD_WINDOW = 20
# How fast the lead may shrink, as a share of each gap (Commander.slot).
LEAD_DECAY = 0.1


class NotCommanded(ValueError):
    """A target whose answer cannot be commanded: why, in one line."""


@dataclass(frozen=True)
class Slot:
    """When a command is sent (monotonic s), the time it may move over, and when it is due."""

    now: float
    budget: float
    due: float


@dataclass
class CommandCounts:
    """The commands so far, for /diagnostics."""

    sent: int = 0
    limited: int = 0      # moved at the velocity limit, short of the stream's answer
    stopped: int = 0      # the answer was no solution: the last command repeated
    holds: int = 0        # stale target streams held
    holding: bool = False


class Commander:
    """Turns stream answers into commands (module docstring). `velocity_limits` None: a model
    whose URDF has none, with the joint_state output only (no limit applied)."""

    def __init__(self, output: CommandOutput | None, velocity_limits: np.ndarray | None,
                 measured: Callable[[], np.ndarray | None], logger: RcutilsLogger,
                 pickup: float = 0.01):
        self.output, self.limits, self.measured, self.logger = output, velocity_limits, measured, logger
        self.pickup = pickup
        self.timed = output is not None and output.interpolated
        self.last: np.ndarray | None = None   # the last command (model order)
        self.sent: float | None = None        # monotonic time it was sent
        self.due = 0.0                        # ... and when the robot is there
        self.gaps: deque[float] = deque(maxlen=LEAD_WINDOW)
        self.counts, self.lock = CommandCounts(), threading.Lock()

    def start(self) -> None:
        """A new stream, from the measured configuration."""
        self.last, self.sent = self.measured(), None
        self.gaps.clear()
        if self.last is None and self.output is not None:
            raise NotCommanded('no /joint_states yet: the first command must start from the '
                               "robot's measured configuration")

    def slot(self, now: float) -> Slot:
        """The time the next command, sent at `now`, may move over (module docstring)."""
        if self.sent is None:
            return Slot(now, FIRST_STEP_S, now + FIRST_STEP_S + (self.pickup if self.timed else 0.0))
        gap = now - self.sent
        if not self.timed:
            return Slot(now, gap, now)
        # The lead shrinks by LEAD_DECAY of each gap at most: a due time never comes much
        # closer to the previous one than the gap between their commands.
        due = max(now + max([gap, *self.gaps]) + self.pickup, self.due + (1.0 - LEAD_DECAY) * gap)
        return Slot(now, due - max(self.due, now + self.pickup), due)

    def command(self, answer: np.ndarray, solved: bool, slot: Slot,
                scale: float) -> tuple[np.ndarray, bool]:
        """The command for a stream's `answer`; returns it and whether it falls short of the
        answer (velocity-limited, or held because the answer is no solution)."""
        previous = self.last
        computed = time.monotonic()
        if self.timed and self.sent is not None:   # counted again: the answer took its time
            budget = min(slot.budget, slot.due - max(self.due, computed + self.pickup))
            slot = Slot(slot.now, max(0.0, budget), slot.due)
        if previous is None:                 # joint_state output without a measured state
            q, short = np.array(answer, float), False
        elif not solved:
            q, short = previous.copy(), True
        elif self.limits is None:
            q, short = np.array(answer, float), False
        else:
            q, short = limited_step(previous, answer, scale * self.limits * slot.budget)
        if self.output is not None:   # due at slot.due, however long the answer took
            self.output.send(q, computed, slot.due)
        if self.sent is not None:
            self.gaps.append(slot.now - self.sent)
        with self.lock:
            c = self.counts
            c.sent += 1
            c.limited += short and solved
            c.stopped += not solved
            c.holding = False
        self.last, self.sent, self.due = q, slot.now, slot.due
        return q, short

    def check_stale(self, timeout: float) -> None:
        """Mark the output holding when no command came for `timeout` s (a timer's): the
        controller keeps the last command; nothing is sent that could replace another
        client's trajectory."""
        if self.sent is None or self.counts.holding:
            return
        idle = time.monotonic() - self.sent
        if idle <= timeout:
            return
        with self.lock:
            self.counts.holding = True
            self.counts.holds += 1
        self.logger.info(f'no target for {idle:.2f} s (stream_timeout): holding the last command')

    def snapshot(self) -> CommandCounts:
        with self.lock:
            return CommandCounts(**vars(self.counts))


def command_values(counts: CommandCounts, output: str, topic: str) -> dict[str, str]:
    """The commands' /diagnostics entries."""
    return {'command output': f'{output} on {topic}',
            'commands sent': str(counts.sent),
            'commands velocity-limited': str(counts.limited),
            'commands stopped (no solution)': str(counts.stopped),
            'holds (stale targets)': str(counts.holds),
            'holding': 'yes: no target for stream_timeout' if counts.holding else 'no'}
