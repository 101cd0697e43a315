SHELL := /bin/bash
.PHONY: setup moveit ros2_control move_group run test demo

MODEL ?= panda

# Set-up, then the shipped models' compiled runtime into the cache (docs/COMPILED.md; about
# 75 s the first time, seconds when current), so that no first start builds it.
setup:
	bash scripts/setup.sh
	@source ./env.sh && loink runtime

# The MoveIt kinematics plugin (loink_kinematics) and MoveIt's pieces it builds against,
# with the planning step move_group needs, from ../shared/moveit, which must exist (about
# 30 min the first time; about 1.5 min in
# another clone once the cache has them, seconds when current).
moveit: setup
	bash scripts/setup_moveit.sh

# ros2_control on MoveIt's pieces, for the hardware tests (mock hardware), from
# ../shared/ros2_control, which must exist (about 2.5-6 min the first time, seconds when
# current). Set-up fails, with one line saying which, where a ../shared piece is missing.
ros2_control: moveit
	bash scripts/setup_ros2_control.sh

# MoveIt's move_group, OMPL and Servo on ros2_control and MoveIt's pieces, from
# ../shared/move_group, for the tests and bench that run the plugin inside them (about
# 17-20 min the first time, seconds when current; docs/MOVEIT.md "In move_group and Servo").
move_group: ros2_control
	bash scripts/setup_move_group.sh

# The main job: loink_node on a shipped model (MODEL=panda|planar3|...), as
# `ros2 launch loink_ros loink.launch.py model:=$(MODEL)` starts it on a real install.
run: setup
	@source ./env.sh && \
	exec loink_node --ros-args --params-file config/$(MODEL).yaml -r __ns:=/loink

# Lint first (ruff.toml), then the suite. A fresh ROS domain per run and discovery kept on
# this host isolate the tests from any other ROS graph on the machine. No bytecode: `ros2 launch` loads launch files
# from the install's share/ and would leave __pycache__ there, which the next run's
# test_ament_index rightly reports as an entry no package declared.
test: setup moveit ros2_control move_group
	@source ./env.sh && source .ros2_control/env.sh && \
	export ROS_DOMAIN_ID=$$(( RANDOM % 100 + 1 )) ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST \
	  PYTHONDONTWRITEBYTECODE=1 && \
	echo "ROS_DOMAIN_ID=$$ROS_DOMAIN_ID" && \
	ruff check . && \
	python -m pytest -q --durations=20 test

demo: setup
	. ./env.sh && loink demo
