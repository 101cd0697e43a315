"""Problems: robot + task + cost + sampler (ROS-free)."""
