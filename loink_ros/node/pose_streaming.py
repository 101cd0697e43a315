"""Streaming full poses: PoseStamped in, JointState and PoseTracking out, through the core
PoseTracker; latest target wins (the task stream's QoS and skip counting, streaming.py).

Each answer moves no joint faster than velocity_scale times its URDF limit over the time
since the previous target (the stream's measured rate), stays on its IK branch, inside the
joint limits and free of self-collision; when the target moves faster, or out of reach,
the answer lags and says why (PoseTracking.lag).
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from geometry_msgs.msg import PoseStamped
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.subscription import MessageInfo
from sensor_msgs.msg import JointState

from loink_msgs.msg import PoseTracking
from loink_ros.core.problems.arms.velocity_limits import velocity_limits
from loink_ros.core.runtime.pose_refine import PoseTarget
from loink_ros.core.runtime.pose_solver import PoseSolver
from loink_ros.core.runtime.pose_tracker import PoseTracker
from loink_ros.node.commander import Commander, NotCommanded
from loink_ros.node.conversions import joint_state, stamp_seconds
from loink_ros.node.parameters import Settings
from loink_ros.node.pose_targets import PoseLinks, pose_problem
from loink_ros.node.streaming import LOG_THROTTLE, SOLUTION_QOS, TARGET_QOS, SkipCounter, StreamCounts


@dataclass
class PoseStreamCounts(StreamCounts):
    """The task stream's counts, and how the answers met their targets."""

    lagging: int = 0                # answered short of the target (PoseTracking.lag)
    position_error_max: float = 0.0   # m, largest since the stream's start
    rotation_error_max: float = 0.0   # rad


class DroppedTarget(ValueError):
    """A target the stream cannot use: why, in one line."""


class PoseStreamer:
    """Follows a PoseStamped stream; a gap over stream_timeout restarts from the robot's state
    (or, before it is known, from the first target's full solve)."""

    def __init__(self, node: Node, logger: RcutilsLogger, names: dict[str, str],
                 pose_solver: PoseSolver, settings: Callable[[], Settings], robot,
                 solution: Publisher, commander: Commander):
        self.logger, self.settings, self.robot, self.solution = logger, settings, robot, solution
        self.commander = commander
        problem = pose_solver.problem
        self.joint_names, self.base_frame = list(problem.joint_names), problem.base_frame
        self.links, self.frames = PoseLinks(problem), problem.base_rigid_frames()
        s = settings()
        self.tracker = PoseTracker(pose_solver, velocity_limits(problem), s.velocity_scale,
                                   s.smoothing)
        self.last_target: float | None = None   # monotonic time of the last answered target
        self.counts, self.skips, self.lock = PoseStreamCounts(), SkipCounter(), threading.Lock()
        self.tracking = node.create_publisher(PoseTracking, names['pose_tracking'], SOLUTION_QOS)
        node.create_subscription(PoseStamped, names['pose_target'], self.on_target, TARGET_QOS)

    def snapshot(self) -> PoseStreamCounts:
        """A copy of the counts, consistent at one moment."""
        with self.lock:
            return PoseStreamCounts(**vars(self.counts))

    def on_target(self, msg: PoseStamped, info: MessageInfo) -> None:
        """Answer one target with the target's stamp; drop (count, log) a bad one."""
        skipped = self.skips.skipped(info)
        if skipped:
            self.logger.warning(f'pose stream: {skipped} older target(s) skipped, the solver is '
                                'behind (latest target wins)', throttle_duration_sec=LOG_THROTTLE)
        answer, command = self.answer(msg)
        with self.lock:
            c = self.counts
            c.skipped += skipped
            if answer is None:
                c.dropped += 1
            else:
                c.answered += 1
                c.lagging += not answer.on_target
                c.position_error_max = max(c.position_error_max, answer.position_error)
                c.rotation_error_max = max(c.rotation_error_max, answer.rotation_error)
        if answer is not None:
            self.solution.publish(command)
            self.tracking.publish(answer)

    def answer(self, msg: PoseStamped) -> tuple[PoseTracking | None, JointState | None]:
        """The answer to one target and the command sent for it, or None (logged) when it is
        dropped."""
        try:
            return self.step(msg)
        except (DroppedTarget, NotCommanded) as err:
            self.logger.warning(f'pose stream: dropped target: {err}',
                                throttle_duration_sec=LOG_THROTTLE)
        except Exception as err:  # noqa: BLE001 - a bug must not end the stream
            self.last_target = None   # the tracker's state is suspect: restart
            self.logger.error(f'pose stream: dropped target: {type(err).__name__}: {err}',
                              throttle_duration_sec=LOG_THROTTLE)
        return None, None

    def step(self, msg: PoseStamped) -> tuple[PoseTracking, JointState]:
        """The next answer of the stream (PoseTracking: the tracker's answer and its errors),
        and the command sent for it (the commander's: the answer velocity-limited, or the
        motion's state of the moment for a controller output)."""
        s, now = self.settings(), time.monotonic()
        target = self.target(msg, s.pose_tip_link)
        tracker = self.tracker
        tracker.velocity_scale, tracker.smoothing = s.velocity_scale, s.smoothing
        tracker.tolerance = (s.task_tolerance, s.rotation_tolerance)
        if self.last_target is None or now - self.last_target > s.stream_timeout:
            tracker.reset(self.commander.start())
        slot = self.commander.slot(now, stamp_seconds(msg.header.stamp))
        # The stream goes on through a target dropped below (no restart); the commander holds
        # after stream_timeout without a command.
        self.last_target = now
        try:
            step = tracker.step(target, slot.budget)
        except ValueError as err:     # the first target of a stream has no answer
            raise DroppedTarget(str(err)) from None
        # The tracker keeps to the same time: the commander changes nothing but a first
        # answer without a measured start (joint_state output only).
        q, short = self.commander.command(step.q, True, slot, s.velocity_scale)
        if short:
            tracker.reset(q)
        command = joint_state(self.joint_names, q, msg.header.stamp)
        answer = joint_state(self.joint_names, step.q, msg.header.stamp)
        out = PoseTracking(joint_state=answer, position_error=step.position_error,
                           rotation_error=step.rotation_error, on_target=step.on_target,
                           lag=step.lag or '')
        out.header.stamp, out.header.frame_id = msg.header.stamp, self.base_frame
        return out, command

    def target(self, msg: PoseStamped, link: str) -> PoseTarget:
        """The tip's target in the base frame; DroppedTarget for a bad pose, frame or link."""
        reason = pose_problem(msg.pose)
        if reason is not None:
            raise DroppedTarget(reason)
        frame = msg.header.frame_id.lstrip('/') or self.base_frame
        placement = self.frames.get(frame)
        if placement is None:
            raise DroppedTarget(f'frame {frame!r} is not {self.base_frame!r} nor fixed to it; '
                                f'these are: {", ".join(sorted(self.frames))}')
        try:
            target = self.links.target(msg.pose, link, False)
        except ValueError as err:
            raise DroppedTarget(f'pose_tip_link {err}') from None
        if placement.isIdentity():
            return target
        position = placement.rotation @ target.position + placement.translation
        return PoseTarget(position, placement.rotation @ target.rotation)


def pose_tracking_values(counts: PoseStreamCounts) -> dict[str, str]:
    """The pose stream's /diagnostics entries."""
    return {'pose stream answered': str(counts.answered),
            'pose stream dropped': str(counts.dropped),
            'pose stream skipped': str(counts.skipped),
            'pose stream lagging': str(counts.lagging),
            'pose stream position error max (m)': f'{counts.position_error_max:.3g}',
            'pose stream rotation error max (rad)': f'{counts.rotation_error_max:.3g}'}

