# Source me (bash or zsh): `source ./env.sh`. Activates .venv and adds the colcon
# install of the interface packages and of loink_ros's ament index entries, and the ROS 2
# command line in .ros2tools where set-up installed it. Run `make setup` (scripts/setup.sh) first.
if [ -n "${BASH_SOURCE:-}" ]; then
  _loink_src="${BASH_SOURCE[0]}"
elif [ -n "${ZSH_VERSION:-}" ]; then
  eval '_loink_src="${(%):-%x}"'   # zsh's path of the sourced file
else
  _loink_src="$0"
fi
_loink_root="$(cd "$(dirname "$_loink_src")" && pwd)"

if [ ! -f "$_loink_root/.venv/bin/activate" ] || [ ! -d "$_loink_root/.colcon/install" ]; then
  echo "env.sh: run 'make setup' (scripts/setup.sh) first" >&2
  unset _loink_src _loink_root
  return 1 2>/dev/null || exit 1
fi
. "$_loink_root/.venv/bin/activate"

# Prepend $2 to the path list named $1 unless it is already there (re-sourcing is safe).
_loink_prepend() {
  eval "_loink_cur=\"\${$1:-}\""
  case ":$_loink_cur:" in
    *":$2:"*) ;;
    *) eval "export $1=\"$2\${_loink_cur:+:\$_loink_cur}\"" ;;
  esac
}
_loink_inst="$_loink_root/.colcon/install"
for _loink_var in AMENT_PREFIX_PATH CMAKE_PREFIX_PATH; do
  _loink_prepend "$_loink_var" "$VIRTUAL_ENV"
  _loink_prepend "$_loink_var" "$_loink_inst"
done
_loink_prepend LD_LIBRARY_PATH "$_loink_inst/lib"
_loink_prepend PYTHONPATH "$_loink_inst/lib/python3.11/site-packages"
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
# `ros2`, launch and launch_testing (from ../shared/ros2tools), once per shell.
if [ -f "$_loink_root/.ros2tools/env.sh" ]; then
  case ":$PATH:" in
    *":$_loink_root/.ros2tools/bin:"*) ;;
    *) . "$_loink_root/.ros2tools/env.sh" ;;
  esac
fi

unset -f _loink_prepend
unset _loink_src _loink_root _loink_inst _loink_var _loink_cur
