"""The MoveIt plugin's C++ programs (test_loink_kinematics, bench_loink_kinematics), built by
scripts/setup_moveit.sh into .moveit/, and what they are given: the Panda's URDF and SRDF,
and a loink_node command line that keeps this process's environment."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pinocchio as pin

from loink_ros.core.problems.example_robots import robot_file
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


def tip_poses(configurations: np.ndarray, link: str = 'panda_link8') -> np.ndarray:
    """panda_arm's tip pose (x, y, z, qx, qy, qz, qw) in panda_link0 for each arm configuration,
    by Pinocchio on the URDF MoveIt loads (fingers at 0)."""
    model = pin.buildModelFromUrdf(str(panda_urdf()))
    data, frame = model.createData(), model.getFrameId(link)
    rows = []
    for q in configurations:
        pin.framesForwardKinematics(model, data, np.concatenate([q, np.zeros(model.nq - len(q))]))
        placement = data.oMf[frame]
        rows.append([*placement.translation, *pin.Quaternion(placement.rotation).coeffs()])
    return np.array(rows)


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


def node_script(path: Path, namespace: str) -> Path:
    """An executable script that starts loink_node on panda_full in `namespace` with this
    process's environment exactly (the C++ side runs in MoveIt's), for the C++ test to run,
    stop and restart."""
    names = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
    pairs = ' '.join(shlex.quote(f'{k}={v}') for k, v in os.environ.items() if names.match(k))
    args = [*node_command(), '--ros-args', '--params-file', str(PANDA_CONFIG),
            '-r', f'__ns:={namespace}']
    path.write_text(f'#!/bin/sh\ncd {shlex.quote(str(REPO))}\n'
                    f'exec env -i {pairs} {shlex.join(args)}\n')
    path.chmod(0o755)
    return path
