#!/usr/bin/env bash
# One idempotent set-up step: .venv (pip packages + this package in editable mode),
# the interface packages (loink_msgs and ../shared/interfaces' moveit_msgs closure) built
# with colcon into .colcon/, loink_ros registered in the ament index there, and the ROS 2
# Jazzy command line and launch from ../shared/ros2tools installed into .ros2tools/.
# ../shared/interfaces and ../shared/ros2tools are required: without either this fails with
# one line on stderr saying which (the suite needs moveit_msgs and the ros2 command line,
# and fails without them; no test skips for want of set-up).
# A stamp keyed on the inputs makes a re-run with nothing changed take seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV=.venv
STAMP="$VENV/.loink-setup-stamp"
SHARED_IF=../shared/interfaces   # moveit_msgs closure (read-only, required)
SHARED_TOOLS=../shared/ros2tools # ros2cli, launch, launch_testing (read-only, required)
TOOLS=.ros2tools
REQUIREMENTS=(requirements-no-ros.txt requirements.txt requirements-test.txt)

log() { echo "[setup] $*"; }
if [ ! -d "$SHARED_IF" ]; then
  echo "[setup] error: $SHARED_IF is missing: it holds the moveit_msgs closure that the node's MoveIt services and their tests need; put it beside this clone" >&2
  exit 1
fi
if [ ! -d "$SHARED_TOOLS" ]; then
  echo "[setup] error: $SHARED_TOOLS is missing: it holds ROS 2 Jazzy's ros2 command line, launch and launch_testing that the launch and CLI tests need; put it beside this clone" >&2
  exit 1
fi
# shellcheck source=scripts/setup_lib.sh
source scripts/setup_lib.sh   # pip_install, files_hash, fix_wheel_cmake
# What .ros2tools is built from: its sources and the ROS wheels it builds against.
tools_hash() { { files_hash "$SHARED_TOOLS"; cat requirements-no-ros.txt; } | sha256sum | cut -d' ' -f1; }

# Everything whose change needs a re-run, the shared folders included.
inputs_hash() {
  {
    cat "${REQUIREMENTS[@]}" requirements-train.txt setup.py setup.cfg package.xml scripts/setup.sh scripts/setup_lib.sh
    files_hash loink_msgs
    # The ament index holds one link per file of these: adding or removing one re-registers.
    find launch config models resource -type f 2>/dev/null | LC_ALL=C sort
    files_hash "$SHARED_IF"
    tools_hash
  } | sha256sum | cut -d' ' -f1
}

HASH="$(inputs_hash)"
# What colcon builds.
BUILT_OK=(.colcon/install/share/loink_msgs/package.xml .colcon/install/share/moveit_msgs/package.xml)
DONE_OK=("${BUILT_OK[@]}" .colcon/install/share/loink_ros/package.xml "$TOOLS/env.sh")
all_exist() { for f in "$@"; do [ -f "$f" ] || return 1; done; }
if [ -x "$VENV/bin/python" ] && all_exist "${DONE_OK[@]}" && [ -f "$STAMP" ] \
   && [ "$(cat "$STAMP")" = "$HASH" ]; then
  log "up to date"
  exit 0
fi
rm -f "$STAMP"

if [ ! -x "$VENV/bin/python" ]; then
  if ! command -v python3.11 >/dev/null 2>&1; then
    echo "[setup] error: python3.11 not found on PATH; the ROS 2 wheels exist only for CPython 3.11." >&2
    exit 1
  fi
  log "creating $VENV with $(command -v python3.11)"
  python3.11 -m venv "$VENV"
  # Old CMake caches would point into the previous venv: rebuild from scratch.
  rm -rf .colcon "$TOOLS"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"

log "pip: upgrading pip"
pip_install python --upgrade pip
log "pip: installing ${REQUIREMENTS[*]} (a fresh venv takes a few minutes)"
REQ_ARGS=(); for r in "${REQUIREMENTS[@]}"; do REQ_ARGS+=(-r "$r"); done
pip_install python "${REQ_ARGS[@]}"

log "fixing CMake include paths of the ROS wheels"
fix_wheel_cmake python

log "pip: installing loink_ros in editable mode"
mkdir -p .colcon
# setuptools prints long, harmless editable-mode warnings: keep them in a log.
if ! python -m pip install -q --no-deps --no-build-isolation -e . >.colcon/pip-editable.log 2>&1; then
  cat .colcon/pip-editable.log >&2
  exit 1
fi

# colcon's own setup scripts are not used (env.sh sets the paths), so it may warn
# that the venv has no local_setup; that is expected.
export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
log "colcon: building loink_msgs and the moveit_msgs closure from $SHARED_IF"
colcon --log-base .colcon/log build \
  --base-paths loink_msgs "$SHARED_IF" \
  --build-base .colcon/build --install-base .colcon/install --merge-install \
  --event-handlers console_cohesion- console_start_end+ status- summary+ \
  --cmake-args -DPython3_EXECUTABLE="$(command -v python)" -DBUILD_TESTING=OFF
if ! all_exist "${BUILT_OK[@]}"; then
  echo "[setup] error: colcon finished but one of ${BUILT_OK[*]} is missing" >&2
  exit 1
fi

# Editable installs skip data_files and put console scripts in .venv/bin, so register
# loink_ros in the ament index here as `colcon build --symlink-install` does: one link per
# data file (ros2launch's os.walk does not follow folder links) and lib/loink_ros/<exe>
# for each console script. Synced in place: other shells may be using the index.
log "registering loink_ros in the ament index (.colcon/install)"
python - <<'PY'
import os
import sys
from importlib.metadata import distribution
from pathlib import Path

from colcon_python_setup_py.package_identification.python_setup_py import get_setup_information

PACKAGE = 'loink_ros'
root, install = Path.cwd(), Path.cwd() / '.colcon' / 'install'
wanted = {}  # link in the install -> what it points to
for dest, files in get_setup_information(root / 'setup.py')['data_files']:
    for name in files:
        wanted[install / dest / Path(name).name] = root / name
for entry in distribution(PACKAGE).entry_points.select(group='console_scripts'):
    script = Path(sys.prefix, 'bin', entry.name)
    if not os.access(script, os.X_OK):
        sys.exit(f'[setup] error: console script {script} missing after the editable install')
    wanted[install / 'lib' / PACKAGE / entry.name] = script

for top in (install / 'share' / PACKAGE, install / 'lib' / PACKAGE):  # drop stale entries
    for folder, dirs, files in os.walk(top, topdown=False):
        for name in files + dirs:
            path = Path(folder, name)
            if path.is_symlink() or path.is_file():
                if path not in wanted:
                    path.unlink()
            elif not any(path.iterdir()):
                path.rmdir()
for link, target in wanted.items():
    if link.is_symlink() and link.readlink() == target:
        continue
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f'.{link.name}.tmp')
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, link)  # atomic: a reader sees the old entry or the new one
print(f'[setup]   {len(wanted)} entries')
PY

TOOLS_HASH="$(tools_hash)"
if [ -f "$TOOLS/env.sh" ] && [ "$(cat "$TOOLS/.loink-stamp" 2>/dev/null)" = "$TOOLS_HASH" ]; then
  log "ros2tools: $TOOLS up to date"
else
  log "ros2tools: installing the ROS 2 Jazzy command line and launch into $TOOLS (~1 min)"
  rm -rf "$TOOLS"
  PYTHON="$(command -v python)" bash "$SHARED_TOOLS/install.sh" "$TOOLS"
  echo "$TOOLS_HASH" > "$TOOLS/.loink-stamp"
fi

echo "$HASH" > "$STAMP"
log "done"
