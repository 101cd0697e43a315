#!/usr/bin/env bash
# The MoveIt kinematics plugin (loink_kinematics) for its tests and bench: ../shared/moveit's
# rclcpp, pluginlib and minimal moveit_core, plus its `harness` step (MoveIt's own
# kinematics-plugin test with the KDL plugin) and its `planning` step (the rest of moveit_core
# that move_group needs), built into a cache folder outside the clone on
# a venv of its own, keyed on what they are built from (the cache root is
# $LOINK_MOVEIT_CACHE, else ~/.cache/loink-moveit; about 20-25 min the first time, a second
# or two when the key's build is there, from any clone); then loink_msgs and
# loink_kinematics built with colcon into .moveit/, and .moveit/env.sh for the processes
# that load the plugin. ../shared/moveit is required: without it this fails with one line
# on stderr (the plugin's tests, test_moveit_cartesian and ros2_control need its build, and
# fail without it; no test skips for want of set-up). On a ROS 2 install with MoveIt,
# `colcon build` builds loink_kinematics against it instead (docs/MOVEIT.md). Run after
# scripts/setup.sh (it needs .venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SHARED_MOVEIT=../shared/moveit
OUT="$ROOT/.moveit"
log() { echo "[setup-moveit] $*"; }

if [ ! -d "$SHARED_MOVEIT" ]; then
  echo "[setup-moveit] error: $SHARED_MOVEIT is missing: it holds the MoveIt pieces (rclcpp, pluginlib, moveit_core, the kinematics harness) that the MoveIt plugin, its tests and ros2_control are built on; put it beside this clone" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "[setup-moveit] error: .venv missing: run scripts/setup.sh first" >&2
  exit 1
fi
unset PYTHONPATH   # a caller's env.sh: the project's packages stay out of MoveIt's venv
# shellcheck source=scripts/setup_lib.sh
source scripts/setup_lib.sh   # pip_install, files_hash, fix_wheel_cmake
PYTHON="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"   # the venv's interpreter
# The harness step's parameter-code generator imports jinja2, which the ROS wheels lack (the
# project's .venv has it through other packages): the versions of that .venv.
HARNESS_PYTHON=(Jinja2==3.1.6 MarkupSafe==3.0.4)

# Everything the cached build is made of, so that every clone with the same inputs shares
# it: the sources, the packages and the interpreter of its venv, the CMake fix applied
# to them (its code as bash holds it, so a comment does not count), the compilers.
cache_key() {
  {
    files_hash "$SHARED_MOVEIT"
    cat requirements-no-ros.txt
    echo "${HARNESS_PYTHON[*]}"
    declare -f fix_wheel_cmake
    "$PYTHON" -c 'import sys; print(sys.version)'
    c++ --version | head -n 1
    cc --version | head -n 1
  } | sha256sum | cut -c1-12
}
WORK="${LOINK_MOVEIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loink-moveit}/$(cache_key)"
# Written last: a build that failed or was stopped half-way is built on, never taken as done.
READY="$WORK/.loink-ready"

# GoogleTest for the plugin's test, from Debian like the rest of MoveIt's C++ dependencies.
if ! dpkg-query -W -f='${Status}' libgtest-dev 2>/dev/null | grep -q 'install ok installed'; then
  if [ "$(id -u)" != 0 ]; then
    echo "[setup-moveit] error: install libgtest-dev (as root) for the plugin's test" >&2
    exit 1
  fi
  log "apt-get install libgtest-dev"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libgtest-dev >/dev/null
fi

# The work dir's CMake caches name its venv, and a work dir cannot move: so the venv lives
# inside it, with the ROS wheels (requirements-no-ros.txt), not the project's .venv.
cache_venv() {
  log "  venv $WORK/venv: requirements-no-ros.txt ${HARNESS_PYTHON[*]} ($PYTHON)"
  "$PYTHON" -m venv "$WORK/venv"   # also repairs one left half-made
  pip_install "$WORK/venv/bin/python" --upgrade pip
  pip_install "$WORK/venv/bin/python" -r requirements-no-ros.txt "${HARNESS_PYTHON[@]}"
  fix_wheel_cmake "$WORK/venv/bin/python"
}

build_step() {  # [STEP]: build.sh's default steps, or that one
  log "  build.sh ${1:-(default steps)}"
  VENV="$WORK/venv" bash "$SHARED_MOVEIT/build.sh" "$WORK" "$@" >> "$OUT/moveit-build.log" 2>&1 || {
    tail -n 40 "$OUT/moveit-build.log" >&2
    echo "[setup-moveit] error: $SHARED_MOVEIT/build.sh $* failed (log: .moveit/moveit-build.log)" >&2
    exit 1
  }
}

mkdir -p "$OUT" "$WORK"
: > "$OUT/moveit-build.log"
SECONDS=0
exec 9> "$WORK.lock"
flock 9   # a clone building the same key meanwhile: wait for it, then take its build
if [ -f "$READY" ]; then
  log "MoveIt's pieces: $WORK is built"
else
  log "MoveIt's pieces into $WORK ($SHARED_MOVEIT/build.sh; 20-25 min the first time)"
  cache_venv
  build_step
  build_step harness
  touch "$READY"
fi
# The rest of moveit_core (planning scene, FCL, constraint samplers, ...), in place, for
# move_group, OMPL and Servo (scripts/setup_move_group.sh): about 5 min the first time,
# 3 s when current (build.sh keys the step on its sources).
build_step planning
exec 9>&-
log "  took ${SECONDS} s"

# .moveit/build's CMake caches name the work dir it was configured on: another one (new
# inputs, a new key) starts the two packages' build afresh.
if [ "$(readlink "$OUT/work" 2>/dev/null)" != "$WORK" ]; then
  rm -rf "$OUT/build" "$OUT/install" "$OUT/log" "$OUT/env.sh"
  ln -sfn "$WORK" "$OUT/work"
fi
# example-robot-data's meshes (package://example-robot-data/...) for the Panda URDF: the
# project's venv has them (requirements.txt), the cached one does not.
MESHES="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/cmeel.prefix"
# The shipped arms' libraries for the in-process plugin (config/kinematics.yaml's loink_model),
# where the plugin looks for them ($LOINK_CACHE_DIR or ~/.cache/loink_ros/moveit; seconds when
# current), by the project's venv (MoveIt's has no loink_ros).
log "model libraries: loink moveit-library panda_full xarm7_full"
.venv/bin/loink moveit-library panda_full xarm7_full
# shellcheck disable=SC1091
source "$WORK/env.sh"   # MoveIt's venv and ROS path variables: its full moveit_msgs, not the closure

log "colcon: loink_msgs and loink_kinematics into .moveit/"
colcon --log-base "$OUT/log" build \
  --base-paths loink_msgs loink_kinematics \
  --build-base "$OUT/build" --install-base "$OUT/install" --merge-install \
  --event-handlers console_cohesion- console_start_end+ status- summary+ \
  --cmake-args -DPython3_EXECUTABLE="$(command -v python)" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_TESTING=ON -DLOINK_LINK_PYTHON=ON

cat > "$OUT/env.sh" <<ENV
# Generated by scripts/setup_moveit.sh: MoveIt's pieces ($WORK, also .moveit/work) and
# loink_kinematics (.moveit/install). Source it in bash, in a shell of its own: it activates
# MoveIt's venv and replaces the ROS path variables.
. "$WORK/env.sh"
export CMAKE_PREFIX_PATH="$OUT/install:\$CMAKE_PREFIX_PATH"
export AMENT_PREFIX_PATH="$OUT/install:\$AMENT_PREFIX_PATH:$MESHES:$ROOT/.colcon/install"
export LD_LIBRARY_PATH="$OUT/install/lib:\$LD_LIBRARY_PATH"
export PATH="$OUT/build/loink_kinematics:\$PATH"
ENV
log "done: source .moveit/env.sh; test_loink_kinematics and bench_loink_kinematics are on its PATH"
