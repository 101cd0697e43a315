SHELL := /bin/bash
.PHONY: setup test demo

setup:
	bash scripts/setup.sh

# A fresh ROS domain per run and discovery kept on this host isolate the tests
# from any other ROS graph on the machine.
test: setup
	@source ./env.sh && \
	export ROS_DOMAIN_ID=$$(( RANDOM % 100 + 1 )) ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST && \
	echo "ROS_DOMAIN_ID=$$ROS_DOMAIN_ID" && \
	python -m pytest -q test

demo: setup
	. ./env.sh && loink demo
