import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'loink_ros'


def files(pattern):
    # data_files accepts plain files only; a sub-folder would break the install.
    return [f for f in sorted(glob(pattern)) if os.path.isfile(f)]


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    # kernel.c, the units it includes and its headers: the compiled runtime builds them at
    # first use (docs/COMPILED.md).
    package_data={PACKAGE: ['robots/*.urdf', 'core/compiled/*.c', 'core/compiled/*.h']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/launch', files('launch/*.py')),
        ('share/' + PACKAGE + '/config', files('config/*.yaml')),
        ('share/' + PACKAGE + '/config/ros2_control', files('config/ros2_control/*.yaml')),
        ('share/' + PACKAGE + '/config/joint_limits', files('config/joint_limits/*.yaml')),
        ('share/' + PACKAGE + '/models', files('models/*')),
    ],
    install_requires=['setuptools'],
    # colcon's pytest step runs only for a package whose test extra names pytest.
    extras_require={'test': ['pytest', 'pytest-timeout']},
    zip_safe=False,   # the URDFs and kernel.c are read as files
    maintainer='LOInK maintainers',
    maintainer_email='loink-maintainers@example.com',
    description='LOInK: learned inverse kinematics solver with a ROS 2 node.',
    license='BSD-3-Clause',
    entry_points={
        'console_scripts': [
            'loink = loink_ros.tools.cli:main',
            'loink_node = loink_ros.node.main:main',
            'robot_description_publisher = loink_ros.node.description_publisher:main',
        ],
    },
)
