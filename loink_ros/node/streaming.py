"""Streaming IK: TaskTarget in, JointState out, through the core Tracker; latest target wins.

QoS: targets are read reliable, keep-last 1: when the solver falls behind, DDS keeps only
the newest target in the reader's queue, so the stream always works on the latest one and
never on a backlog. Every target a publisher sent but the node never saw is counted as
skipped, from the gaps in that publisher's sequence numbers. Solutions go out reliable,
keep-last 10, which both reliable and best-effort subscribers accept. Joint states are
read best-effort (sensor data QoS), which matches every publisher; only the latest matters.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from rclpy.subscription import MessageInfo
from sensor_msgs.msg import JointState

from loink_msgs.msg import TaskTarget
from loink_ros.core.runtime.errors import SolverError
from loink_ros.core.runtime.solver import LOInKSolver
from loink_ros.core.runtime.tracking import Tracker
from loink_ros.node.commander import Commander, NotCommanded
from loink_ros.node.conversions import bounded, is_base_frame, joint_state, stamp_seconds
from loink_ros.node.measured_state import CurrentConfiguration
from loink_ros.node.motion_commander import MotionCommander
from loink_ros.node.parameters import Settings

TARGET_QOS = QoSProfile(depth=1)
SOLUTION_QOS = QoSProfile(depth=10)
# Seconds between repeats of the same log line of a noisy stream.
LOG_THROTTLE = 1.0
# The rmw's sequence number when it provides none (RMW_MESSAGE_INFO_SEQUENCE_NUMBER_UNSUPPORTED).
SEQUENCE_UNSUPPORTED = 2**64 - 1


@dataclass
class StreamCounts:
    """Targets of the stream so far: answered + dropped + skipped == sent (once idle)."""

    answered: int = 0   # a JointState was published
    dropped: int = 0    # refused: bad task, frame or an internal error; nothing published
    skipped: int = 0    # never seen: superseded by a newer target while the solver was busy


class SkipCounter:
    """Targets a publisher sent that this reader never took, from its sequence numbers."""

    def __init__(self):
        self.last: dict[bytes, int] = {}   # publisher gid -> last sequence number taken

    def skipped(self, info: MessageInfo) -> int:
        """How many of this publisher's targets were skipped before this one."""
        number, gid = info['publication_sequence_number'], info['publisher_gid']
        if number is None or number == SEQUENCE_UNSUPPORTED or gid is None:
            return 0
        key = bytes(gid['data'])
        previous, self.last[key] = self.last.get(key), number
        return 0 if previous is None else max(0, number - previous - 1)


class Streamer:
    """Follows a target stream; a gap over stream_timeout restarts from the robot's state.

    `node` owns the stream's subscriptions and publisher; names are resolved beforehand by
    the serving node (so its namespace and remappings apply), whose logger is used.
    """

    def __init__(self, node: Node, logger: RcutilsLogger, names: dict[str, str],
                 solver: LOInKSolver, settings: Callable[[], Settings],
                 robot: CurrentConfiguration, commander: Commander | MotionCommander):
        self.logger, self.settings, self.robot, self.commander = logger, settings, robot, commander
        self.joint_names = list(solver.problem.joint_names)
        self.base_frame = solver.model.problem['base_frame']
        self.tracker = Tracker(solver)
        self.last_target: float | None = None   # monotonic time of the last solved target
        self.counts, self.skips, self.lock = StreamCounts(), SkipCounter(), threading.Lock()
        self.publisher = node.create_publisher(JointState, names['solution'], SOLUTION_QOS)
        node.create_subscription(TaskTarget, names['target'], self.on_target, TARGET_QOS)
        if names['joint_states']:
            node.create_subscription(JointState, names['joint_states'], robot.update,
                                     qos_profile_sensor_data)

    def snapshot(self) -> StreamCounts:
        """A copy of the counts, consistent at one moment."""
        with self.lock:
            return StreamCounts(**vars(self.counts))

    def on_target(self, target: TaskTarget, info: MessageInfo) -> None:
        """Solve one target and publish it with the target's stamp; drop bad targets."""
        skipped = self.skips.skipped(info)
        if skipped:
            self.logger.warning(f'stream: {skipped} older target(s) skipped, the solver is '
                                f'behind (latest target wins); {self.counts.skipped + skipped} '
                                'so far', throttle_duration_sec=LOG_THROTTLE)
        answer = self.answer(target)
        with self.lock:
            self.counts.skipped += skipped
            if answer is None:
                self.counts.dropped += 1
            else:
                self.counts.answered += 1
        if answer is not None:
            self.publisher.publish(answer)

    def answer(self, target: TaskTarget) -> JointState | None:
        """The solution of one target, or None (logged) when it is dropped."""
        frame = target.header.frame_id
        if not is_base_frame(frame, self.base_frame):
            self.logger.warning(f'dropped target in frame {frame!r}: no transforms here, '
                                f'send targets in {self.base_frame!r}',
                                throttle_duration_sec=LOG_THROTTLE)
            return None
        try:
            return self.step(target)
        except (NotCommanded, SolverError) as err:
            self.logger.warning(f'dropped target: {err}', throttle_duration_sec=LOG_THROTTLE)
        except Exception as err:  # noqa: BLE001 - a bug must not end the stream
            self.last_target = None   # the tracker's state is suspect: restart
            self.logger.error(f'dropped target: {type(err).__name__}: {err}',
                              throttle_duration_sec=LOG_THROTTLE)
        return None

    def step(self, target: TaskTarget) -> JointState:
        """The next command of the stream (commander.py: velocity-limited, stopped where the
        answer is no solution); the tracker goes on from the command."""
        settings, now = self.settings(), time.monotonic()
        task = bounded(target.task, 'task')
        if self.last_target is None or now - self.last_target > settings.stream_timeout:
            self.tracker.reset(self.commander.start())
        slot = self.commander.slot(now, stamp_seconds(target.header.stamp))
        # The stream goes on through a target dropped below (no restart); the commander holds
        # after stream_timeout without a command.
        self.last_target = now
        self.tracker.smoothing, self.tracker.refine_answer = settings.smoothing, settings.refine
        solution = self.tracker.step(task)
        reason = solution.failure(settings.task_tolerance)
        if reason is not None:
            self.logger.warning(f'streamed answer is no solution, the command stays where it '
                                f'is: {reason}', throttle_duration_sec=LOG_THROTTLE)
        q, short = self.commander.command(solution.q, reason is None, slot, settings.velocity_scale)
        if short:
            self.tracker.reset(q)
        return joint_state(self.joint_names, q, target.header.stamp)
