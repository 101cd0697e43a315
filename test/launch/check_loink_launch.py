"""launch_testing test of loink.launch.py for every shipped model.

Run by test/test_launch.py as a user runs it: `launch_test test/launch/check_loink_launch.py`
(the name does not start with test_, so plain pytest does not collect it).
"""
import re
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
import yaml
from ament_index_python.packages import get_package_share_directory

from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from loink_ros.tools.ros_calls import RosCalls

MODELS = ['planar3', 'panda', 'magneto']
NAMESPACE = 'launch_check'
SOLVE_LINE = re.compile(r'ros2 service call (\S+/solve) loink_msgs/srv/Solve "(.*)"')


@pytest.mark.launch_test
@launch_testing.parametrize('model', MODELS)
def generate_test_description(model):
    launch_file = f'{get_package_share_directory("loink_ros")}/launch/loink.launch.py'
    return LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(launch_file),
                                 launch_arguments={'model': model,
                                                   'namespace': NAMESPACE}.items()),
        launch_testing.actions.ReadyToTest(),
    ]), {'model': model}


class TestServes(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.calls = RosCalls('launch_check_client')

    @classmethod
    def tearDownClass(cls):
        cls.calls.close()

    def call(self, srv_type, name, request):
        return self.calls.request(srv_type, name, request, timeout=30.0)

    def test_node_serves_its_model(self, proc_output, model):
        from loink_msgs.srv import GetModelInfo, Solve
        proc_output.assertWaitFor(f'serving model {model}', timeout=90)
        info = self.call(GetModelInfo, f'/{NAMESPACE}/loink_node/get_model_info',
                         GetModelInfo.Request())
        self.assertEqual(info.model_name, model)
        # The solve example the node printed is answered with success.
        lines = [m for line in proc_output for m in SOLVE_LINE.findall(line.text.decode())]
        self.assertTrue(lines, 'the node printed no solve example')
        service, fields = lines[0]
        self.assertEqual(service, f'/{NAMESPACE}/loink_node/solve')
        response = self.call(Solve, service, Solve.Request(**yaml.safe_load(fields)))
        self.assertTrue(response.success, response.message)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_code_is_zero(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
