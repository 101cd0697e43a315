"""Motion within a robot's joint limits: the limits (URDF plus a MoveIt/ros2_control
joint_limits.yaml) and the online trajectory generator every stream command goes through."""
