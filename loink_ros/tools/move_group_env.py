"""Programs run in .move_group/env.sh's environment (scripts/setup_move_group.sh: MoveIt's
move_group, OMPL, Servo and ros2_control with the plugin), from the project's own."""

import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MOVE_GROUP_ENV = REPO / '.move_group' / 'env.sh'
SETUP_HINT = 'scripts/setup_move_group.sh builds it (make test runs it)'


def built() -> bool:
    return MOVE_GROUP_ENV.is_file()


def run_python(module: str, arguments: list[str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m module arguments` in that environment, the repository on its path."""
    if not built():
        raise FileNotFoundError(f'{MOVE_GROUP_ENV} missing: {SETUP_HINT}')
    script = (f'source {shlex.quote(str(MOVE_GROUP_ENV))} && '
              f'export PYTHONPATH={shlex.quote(str(REPO))}:"$PYTHONPATH" && '
              'exec python -m "$@"')
    return subprocess.run(['bash', '-c', script, 'loink-move-group', module, *arguments],
                          cwd=REPO, timeout=timeout, capture_output=True, text=True)
