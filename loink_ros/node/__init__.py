"""The LOInK ROS 2 node (rclpy); the solver itself lives in loink_ros.core."""
