"""/diagnostics of a real loink_node process: requests served, failures by error code,
solve-time percentiles, stream counts, model name and version."""
import time

import pytest

LOINK_NODE_PARAMETERS = {'diagnostics_period': 0.2}


def latest_status(node, after: float, timeout: float = 5.0):
    """The node's DiagnosticStatus from the first report received after `after`."""
    from diagnostic_msgs.msg import DiagnosticArray
    reports = []
    node.calls.node.create_subscription(DiagnosticArray, '/diagnostics',
                                        lambda m: reports.append((time.monotonic(), m)), 10)
    deadline = time.monotonic() + timeout
    while True:
        ours = [s for t, array in reports if t > after for s in array.status
                if s.name == node.name]
        if ours:
            return ours[0], {value.key: value.value for value in ours[0].values}
        assert time.monotonic() < deadline, 'no /diagnostics report from the node'
        time.sleep(0.02)


def test_counts_failures_and_times(planar3_node):
    from diagnostic_msgs.msg import DiagnosticStatus

    from loink_msgs.srv import GetModelInfo, Sample, Solve
    info = planar3_node.call(GetModelInfo, 'get_model_info', GetModelInfo.Request())
    for _ in range(5):
        assert planar3_node.call(Solve, 'solve', Solve.Request(task=[0.2])).success
    assert planar3_node.call(Solve, 'solve', Solve.Request(task=[7.0])).error_code == 4
    assert planar3_node.call(Solve, 'solve', Solve.Request(task=[])).error_code == 3
    assert planar3_node.call(Sample, 'sample', Sample.Request(task=[0.2], count=3,
                                                              spread=0.5)).success
    status, values = latest_status(planar3_node, time.monotonic())
    assert status.level == DiagnosticStatus.OK and status.hardware_id == 'planar3'
    assert values['model name'] == info.model_name
    assert values['model version'] == info.model_version
    assert values['requests served'] == '8'
    assert (values['solve served'], values['sample served']) == ('7', '1')
    assert values['solve failed TASK_OUT_OF_BOUNDS'] == '1'
    assert values['solve failed EMPTY_REQUEST'] == '1'
    p50 = float(values['solve time p50 (ms, last 1000)'])
    p99 = float(values['solve time p99 (ms, last 1000)'])
    assert 0 < p50 <= p99
    assert values['stream skipped'] == '0'
    # A later report counts a later request.
    assert planar3_node.call(Solve, 'solve', Solve.Request(task=[0.1])).success
    _, later = latest_status(planar3_node, time.monotonic())
    assert later['requests served'] == '9'


def test_moveit_failures_are_counted_by_their_code(planar3_node):
    try:
        from moveit_msgs import srv as moveit
    except ImportError:   # set-up builds it: missing, this fails (never skips)
        pytest.fail('moveit_msgs is not importable: scripts/setup.sh builds it from '
                    '../shared/interfaces (source ./env.sh)', pytrace=False)
    request = moveit.GetPositionIK.Request()
    request.ik_request.group_name = 'not_the_group'
    response = planar3_node.call(moveit.GetPositionIK, 'compute_ik', request)
    assert response.error_code.val != 1
    _, values = latest_status(planar3_node, time.monotonic())
    assert values['compute_ik failed INVALID_GROUP_NAME'] == '1'
