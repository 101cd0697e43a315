"""A self-collision checker process for `loink bench moveit-plugin`'s solution callback: the
model's own check, problem.self_collisions (Pinocchio + coal on the URDF's collision meshes,
less the SRDF's disabled pairs), which the C++ bench cannot call in MoveIt's environment.

    python -m loink_ros.tools.bench.self_collision_checker MODEL

MODEL: a shipped model name or a model .json. It writes `ready` once the problem is loaded,
then reads lines of joint values (the problem's joints, in its order) on standard input and
writes one verdict line per query, flushed: `1` when the configuration collides, else `0`.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

import numpy as np

from loink_ros.core.problems.registry import problem_for_model
from loink_ros.core.runtime.model_file import load_model


def serve(problem, queries: TextIO, verdicts: TextIO) -> None:
    """Answer each line of `queries` until it ends."""
    verdicts.write('ready\n')
    verdicts.flush()
    for line in queries:
        verdicts.write('1\n' if problem.self_collisions(np.array(line.split(), float)) else '0\n')
        verdicts.flush()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit('usage: python -m loink_ros.tools.bench.self_collision_checker MODEL')
    # Verdicts go to the original standard output; anything a library prints goes to stderr.
    verdicts = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    problem = problem_for_model(load_model(args[0]))
    if not problem.has_collision_model:
        raise SystemExit(f'{args[0]}: no collision model (no SRDF): nothing to check')
    serve(problem, sys.stdin, verdicts)


if __name__ == '__main__':
    main()
