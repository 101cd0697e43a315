"""The path measures of the public IK-path benchmarks (loink_ros/tools/bench/path_shape.py)."""
import numpy as np
import pytest

from loink_ros.tools.bench import path_shape


def test_an_even_line_is_smooth_and_a_wiggle_is_rough():
    even = np.linspace([0.0, 0.0], [1.0, 0.5], 11)
    assert path_shape.roughness(even) == pytest.approx(0.0, abs=1e-24)
    assert path_shape.joint_length(even) == pytest.approx(np.hypot(1.0, 0.5))
    assert path_shape.largest_step_deg(even) == pytest.approx(np.degrees(0.1))
    wiggle = even.copy()
    wiggle[5, 1] += 0.01
    assert path_shape.roughness(wiggle) > 1e-6
    assert path_shape.joint_length(wiggle) > path_shape.joint_length(even)


def test_a_step_of_seven_degrees_makes_a_path_invalid():
    small = np.array([[0.0], [np.radians(6.9)], [np.radians(13.8)]])
    large = np.array([[0.0], [np.radians(7.0)]])
    figures = path_shape.shape_figures([small, large])
    assert figures['paths'] == 2 and figures['valid_by_the_step_share'] == 0.5


def test_paths_are_compared_only_where_both_completed():
    a = np.linspace([0.0], [1.0], 11)
    b = np.linspace([0.0], [2.0], 11)
    out = path_shape.compared([a, None, b], [b, a, None])
    assert out['paths'] == 1
    assert out['largest_step_ratio']['median'] == pytest.approx(0.5)
    assert out['length_no_longer_share'] == 1.0 and out['largest_step_no_larger_share'] == 1.0
