"""What `loink bench movegroup` and test_move_group run against a live move_group and
servo_node (loink_ros.tools.move_group_stack), one kinematics solver per process, in
.move_group/env.sh's environment: `python -m loink_ros.tools.bench.move_group_runs
{checks,bench} --kinematics loink|kdl --out FILE.json`.

checks: what a MoveIt user does first, each a pass or fail with its figures: /compute_ik, a
pose goal planned (OMPL) and executed on the mock JTC, a pose goal among boxes, a 10 cm
Cartesian line through move_group, Servo twist commands and Servo pose tracking.

bench: per scene (SCENES), `goals` pose goals at the tip poses of random collision-free
configurations (uniform in the URDF's limits, seeded; the same for every solver), planned
from "ready" with RRTConnect: plans found, planning time, the goal's posture (its distance
from the joint ranges' centres, rad) and the path's joint-space length; Cartesian lines and
rotations from random valid starts through /compute_cartesian_path; Servo pose tracking
along given paths (poses at 100 Hz from the path's start)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from loink_ros.tools.bench.move_group_checks import checks
from loink_ros.tools.bench.move_group_session import (
    SCENES,
    SEED,
    cartesian_bench,
    scene_bench,
    servo_bench,
    started,
    stop,
    work_folder,
)
from loink_ros.tools.move_group_client import joint_limits, velocity_limits


def bench(solver: str, goals: int, cartesian: int, servo_cases: list[dict], seed: int,
          keep: Path | None = None) -> dict:
    with work_folder(keep, f'movegroup_{solver}_') as folder:
        stack, client = started(folder, solver, servo=bool(servo_cases))
        try:
            limits, speeds = joint_limits(stack.urdf), velocity_limits(stack.urdf)
            return {'kinematics': solver,
                    'scenes': {name: scene_bench(client, limits, name, goals, seed) for name in SCENES},
                    'cartesian': cartesian_bench(client, limits, cartesian, seed) if cartesian else {},
                    'servo': servo_bench(client, servo_cases, speeds) if servo_cases else {}}
        finally:
            stop(stack, client)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('what', choices=('checks', 'bench'))
    parser.add_argument('--kinematics', choices=('loink', 'kdl'), default='loink')
    parser.add_argument('--goals', type=int, default=70, help='bench: pose goals per scene')
    parser.add_argument('--cartesian', type=int, default=50, help='bench: lines and rotations each')
    parser.add_argument('--servo-cases', type=Path, help='bench: a JSON list of {start, poses}')
    parser.add_argument('--seed', type=int, default=SEED)
    parser.add_argument('--out', type=Path, required=True)
    parser.add_argument('--keep', type=Path, help='a folder for the processes\' logs and '
                        'parameter files (move_group.yaml, servo.yaml); default: a temporary one')
    args = parser.parse_args()
    if args.what == 'checks':
        result = checks(args.kinematics, args.keep)
    else:
        cases = json.loads(args.servo_cases.read_text()) if args.servo_cases else []
        result = bench(args.kinematics, args.goals, args.cartesian, cases, args.seed, args.keep)
    args.out.write_text(json.dumps(result, indent=1, default=lambda value: value.item()))  # numpy scalars


if __name__ == '__main__':
    main()
