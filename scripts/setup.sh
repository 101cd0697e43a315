#!/usr/bin/env bash
# One idempotent set-up step: .venv (pip packages + this package in editable mode)
# and the interface packages built with colcon into .colcon/.
# A stamp keyed on the inputs makes a re-run with nothing changed take seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV=.venv
STAMP="$VENV/.loink-setup-stamp"
SHARED_IF=../shared/interfaces   # moveit_msgs closure (read-only, optional)

log() { echo "[setup] $*"; }
# Quiet pip. This machine's pip config names local indexes that lack many projects,
# and pip warns once per project about each: drop those lines only.
pip_install() {
  python -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }
}

# Everything whose change needs a rebuild; the shared interfaces count when present.
inputs_hash() {
  {
    cat requirements.txt setup.py setup.cfg package.xml scripts/setup.sh
    find loink_msgs -type f | LC_ALL=C sort | xargs -r sha256sum
    # launch/ config/ models/ are linked as folders: only their existence matters.
    for d in launch config models; do [ -e "$d" ] && echo "has $d"; done
    if [ -d "$SHARED_IF" ]; then
      (cd "$SHARED_IF" && find . -type f | LC_ALL=C sort | xargs -r sha256sum)
    fi
  } | sha256sum | cut -d' ' -f1
}

HASH="$(inputs_hash)"
BUILT_OK=(.colcon/install/share/loink_msgs/package.xml)
if [ -d "$SHARED_IF" ]; then BUILT_OK+=(.colcon/install/share/moveit_msgs/package.xml); fi
built_ok() { for f in "${BUILT_OK[@]}"; do [ -f "$f" ] || return 1; done; }
if [ -x "$VENV/bin/python" ] && built_ok && [ -f "$STAMP" ] \
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
  rm -rf .colcon
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"

log "pip: upgrading pip"
pip_install --upgrade pip
log "pip: installing requirements.txt (a fresh venv takes a few minutes)"
pip_install -r requirements.txt

# The wheels' CMake exports name the wheel builder's Python/numpy include dirs.
log "fixing CMake include paths of the ROS wheels"
python - <<'PY'
import pathlib, sys, sysconfig
import numpy
subs = {
    '/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include': numpy.get_include(),
    '/opt/python/cp311-cp311/include/python3.11': sysconfig.get_paths()['include'],
}
n = 0
for p in pathlib.Path(sys.prefix, 'share').rglob('*.cmake'):
    text = p.read_text(encoding='utf-8', errors='surrogateescape')
    new = text
    for old, rep in subs.items():
        new = new.replace(old, rep)
    if new != text:
        p.write_text(new, encoding='utf-8', errors='surrogateescape')
        n += 1
print(f'[setup]   rewrote {n} file(s)')
PY

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
BASE_PATHS=(loink_msgs)
if [ -d "$SHARED_IF" ]; then
  BASE_PATHS+=("$SHARED_IF")
  log "colcon: building loink_msgs and the moveit_msgs closure from $SHARED_IF"
else
  log "colcon: building loink_msgs ($SHARED_IF absent: no moveit_msgs)"
fi
colcon --log-base .colcon/log build \
  --base-paths "${BASE_PATHS[@]}" \
  --build-base .colcon/build --install-base .colcon/install --merge-install \
  --event-handlers console_cohesion- console_start_end+ status- summary+ \
  --cmake-args -DPython3_EXECUTABLE="$(command -v python)" -DBUILD_TESTING=OFF
if ! built_ok; then
  echo "[setup] error: colcon finished but one of ${BUILT_OK[*]} is missing" >&2
  exit 1
fi

# Editable installs skip data_files, so register loink_ros in the ament index here,
# with links to the sources (as `colcon build --symlink-install` would).
log "registering loink_ros in the ament index (.colcon/install)"
SHARE=.colcon/install/share/loink_ros
rm -rf "$SHARE"   # drops links to folders that are gone
mkdir -p "$SHARE" .colcon/install/share/ament_index/resource_index/packages
touch .colcon/install/share/ament_index/resource_index/packages/loink_ros
for item in package.xml launch config models; do
  if [ -e "$item" ]; then ln -sfn "$ROOT/$item" "$SHARE/$item"; fi
done

echo "$HASH" > "$STAMP"
log "done"
