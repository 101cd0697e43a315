"""diagnostic_msgs/DiagnosticArray on /diagnostics: what the node served and how fast."""

from collections.abc import Callable

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node

from loink_ros.core.runtime.model_file import ModelFile
from loink_ros.node.pose_streaming import PoseStreamCounts, pose_tracking_values
from loink_ros.node.request_stats import RequestStats
from loink_ros.node.streaming import StreamCounts

TOPIC = '/diagnostics'
# Failures inside the node (loink and MoveIt code names), as opposed to refused requests.
INTERNAL_FAILURES = ('INTERNAL_ERROR', 'FAILURE')


class Diagnostics:
    """One DiagnosticStatus per period: model, request counts, solve times, stream counts (and
    the pose stream's, with its largest tracking errors), the commands sent and whether the
    output holds.

    Level ERROR while the commands hold on a stale /joint_states; WARN while the stream skips
    targets or a request failed with an internal error since the previous report; OK
    otherwise.
    """

    def __init__(self, node: Node, model: ModelFile, stats: RequestStats,
                 stream: Callable[[], StreamCounts], period: float,
                 pose_stream: Callable[[], PoseStreamCounts] | None = None,
                 commands: Callable[[], tuple[dict[str, str], str | None]] | None = None):
        self.node, self.model, self.stats, self.stream = node, model, stats, stream
        self.pose_stream, self.commands = pose_stream, commands
        self.publisher = node.create_publisher(DiagnosticArray, TOPIC, 10)
        self.previous: tuple[int, int] = (0, 0)   # skipped, internal errors at the last report
        node.create_timer(period, self.publish)

    def publish(self) -> None:
        """Send one report."""
        values = {'model name': self.model.name, 'model version': self.model.version,
                  **self.stats.summary()}
        counts = self.stream()
        values.update({f'stream {key}': str(value) for key, value in vars(counts).items()})
        skipped = counts.skipped
        if self.pose_stream is not None:
            poses = self.pose_stream()
            values.update(pose_tracking_values(poses))
            skipped += poses.skipped
        error = None
        if self.commands is not None:
            commands, error = self.commands()
            values.update(commands)
        now = (skipped, self.stats.failed_with(INTERNAL_FAILURES))
        level, message = DiagnosticStatus.OK, 'serving'
        if values.get('holding', 'no') != 'no':
            message = f'serving; holding: {values["holding"].removeprefix("yes: ")}'
        if now != self.previous:
            level, message = DiagnosticStatus.WARN, ('stream targets skipped or a request '
                                                     'failed inside the node since the last report')
        if error:
            level, message = DiagnosticStatus.ERROR, f'commands hold: {error}'
        self.previous = now
        status = DiagnosticStatus(level=level, name=self.node.get_fully_qualified_name(),
                                  message=message, hardware_id=self.model.name,
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.node.get_clock().now().to_msg()
        self.publisher.publish(array)
