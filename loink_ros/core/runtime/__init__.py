"""Numpy runtime of the LOInK network: no ROS, no torch."""
