# Functions shared by scripts/setup.sh and scripts/setup_moveit.sh (sourced, not run).

# Quiet pip of the venv whose python is $1. This machine's pip config names local indexes
# that lack many projects, and pip warns once per project about each: drop those lines only.
pip_install() {
  local python="$1"; shift
  "$python" -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }
}

files_hash() {  # folder: the sha256 of every file in it, by path
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1
}

# The ROS wheels' CMake exports name the wheel builder's Python/numpy include dirs: rewrite
# them to those of the venv whose python is $1, after every install of such wheels.
fix_wheel_cmake() {
  "$1" - <<'PY'
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
}
