"""The MoveIt plugin's C++ programs (test_loink_kinematics, bench_loink_kinematics), built by
scripts/setup_moveit.sh into .moveit/, and what they are given: the Panda's URDF and SRDF,
an arm's tip poses, and loink_node or checker command lines that keep this process's
environment."""

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.arms.example_robots import robot_file
from loink_ros.tools.node_process import node_command

REPO = Path(__file__).resolve().parents[2]
MOVEIT_ENV = REPO / '.moveit' / 'env.sh'
# MoveIt's pieces: a link to the cache folder they were built in (scripts/setup_moveit.sh).
MOVEIT_WORK = REPO / '.moveit' / 'work'
SHARED_MOVEIT = REPO.parent / 'shared' / 'moveit'
PANDA_SRDF = REPO / 'loink_kinematics' / 'test' / 'panda_arm.srdf'
PANDA_CONFIG = REPO / 'config' / 'panda_full.yaml'
SETUP_HINT = 'scripts/setup_moveit.sh builds it (make test runs it)'


def panda_urdf() -> Path:
    return robot_file('panda_description/urdf/panda.urdf')


def tip_poses(configurations: np.ndarray, link: str = 'panda_link8', urdf: Path | None = None,
              base: str | None = None, joints: Sequence[str] | None = None) -> np.ndarray:
    """The pose (x, y, z, qx, qy, qz, qw) of `link` in `base` (None: the URDF's root) for each
    configuration, by Pinocchio on the URDF MoveIt loads (the Panda's by default). Each
    configuration holds the values of `joints` (None: the URDF's first joints, in order);
    every other joint is at its neutral value (e.g. the Panda's fingers at 0)."""
    model = pin.buildModelFromUrdf(str(urdf or panda_urdf()))
    data, frame = model.createData(), model.getFrameId(link)
    moved = (model.joints[1:1 + configurations.shape[1]] if joints is None else
             [model.joints[model.getJointId(name)] for name in joints])
    rows = []
    for q in configurations:
        full = pin.neutral(model)
        for joint, value in zip(moved, q):
            # A continuous joint's angle is Pinocchio's (cos, sin).
            full[joint.idx_q:joint.idx_q + joint.nq] = \
                [np.cos(value), np.sin(value)] if joint.nq == 2 else value
        pin.framesForwardKinematics(model, data, full)
        placement = data.oMf[frame]
        if base is not None:
            placement = data.oMf[model.getFrameId(base)].actInv(placement)
        rows.append([*placement.translation, *pin.Quaternion(placement.rotation).coeffs()])
    return np.array(rows)


def chain_srdf(path: Path, robot: str, group: str, base: str, tip: str) -> Path:
    """An SRDF of one group, the chain from `base` to `tip` (MoveIt's RobotModel needs one)."""
    path.write_text(f'<robot name={quoteattr(robot)}>\n  <group name={quoteattr(group)}>\n'
                    f'    <chain base_link={quoteattr(base)} tip_link={quoteattr(tip)}/>\n'
                    '  </group>\n</robot>\n')
    return path


def write_rows(path: Path, rows: np.ndarray) -> Path:
    """One line of space-separated values per row, at full precision (the C++ side reads it)."""
    path.write_text(''.join(' '.join(f'{v:.17g}' for v in row) + '\n' for row in rows))
    return path


def built() -> bool:
    """Whether .moveit/ holds the plugin's build."""
    return MOVEIT_ENV.is_file()


def run_in_moveit_env(command: list[str], timeout: float,
                      extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`command` in a bash that sourced .moveit/env.sh (MoveIt's pieces, not the closure)."""
    if not built():
        raise FileNotFoundError(f'{MOVEIT_ENV} missing: {SETUP_HINT}')
    script = f'source {shlex.quote(str(MOVEIT_ENV))} && exec "$@"'
    return subprocess.run(['bash', '-c', script, 'loink-moveit', *command], timeout=timeout,
                          env={**os.environ, **(extra_env or {})}, capture_output=True, text=True)


def run_gtest_suite(binary: str, report: Path, extra_env: dict[str, str],
                    timeout: float = 600) -> tuple[subprocess.CompletedProcess, dict]:
    """One of the plugin's GoogleTest suites in MoveIt's environment: its output and
    {'Suite.Case': the <testcase> element of its XML report}."""
    import xml.etree.ElementTree as ElementTree
    out = run_in_moveit_env([binary, f'--gtest_output=xml:{report}'], timeout=timeout,
                            extra_env=extra_env)
    cases = ElementTree.parse(report).getroot().iter('testcase') if report.is_file() else []
    return out, {f'{c.get("classname")}.{c.get("name")}': c for c in cases}


def all_passed(cases: dict) -> bool:
    """Every case of run_gtest_suite ran to completion without a failure."""
    return all(c.get('result') == 'completed' and c.find('failure') is None
               for c in cases.values())


def environment_script(path: Path, command: Sequence[str]) -> Path:
    """An executable script that runs `command` in the repository with this process's
    environment exactly, for the C++ programs (which run in MoveIt's) to start."""
    names = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
    pairs = ' '.join(shlex.quote(f'{k}={v}') for k, v in os.environ.items() if names.match(k))
    path.write_text(f'#!/bin/sh\ncd {shlex.quote(str(REPO))}\n'
                    f'exec env -i {pairs} {shlex.join(command)}\n')
    path.chmod(0o755)
    return path


def node_script(path: Path, namespace: str) -> Path:
    """A script that starts loink_node on panda_full in `namespace`, for the C++ test to run,
    stop and restart."""
    return environment_script(path, [*node_command(), '--ros-args', '--params-file',
                                     str(PANDA_CONFIG), '-r', f'__ns:={namespace}'])


def checker_script(path: Path, model: Path) -> Path:
    """A script that starts loink_ros.tools.bench.self_collision_checker on the model, for the
    bench's solution callback."""
    return environment_script(path, [sys.executable, '-m',
                                     'loink_ros.tools.bench.self_collision_checker', str(model)])
