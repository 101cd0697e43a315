"""loink_ros in the ament index, found the way ros2cli and ros2launch search it.

The layout must be what `colcon build [--symlink-install]` gives an ament_python package
(in this repo scripts/setup.sh registers it in .colcon/install): ros2launch finds launch
files with os.walk, which does not follow folder links, and `ros2 run` runs
lib/<package>/<executable>. The prefix comes from the ament index, so the same tests check
a colcon workspace's install (test_colcon_package.py runs them there).
"""
import os
import shutil
import subprocess
from importlib.metadata import distribution
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = 'loink_ros'
# Folders whose every file setup.py installs as data (per-file entries, never folder links).
DATA_FOLDERS = ('launch', 'config', 'models')


def prefix() -> Path:
    from ament_index_python.packages import get_package_prefix
    return Path(get_package_prefix(PACKAGE))


def walked_files(top: Path) -> set:
    """Files under top, relative to it, as os.walk lists them without following links."""
    return {Path(folder, name).relative_to(top)
            for folder, _, names in os.walk(top, followlinks=False) for name in names}


def declared_data_files() -> set:
    """Install paths of setup.py's data_files, read the way colcon reads setup.py."""
    from colcon_python_setup_py.package_identification.python_setup_py import get_setup_information
    data_files = get_setup_information(REPO / 'setup.py')['data_files']
    return {Path(dest, Path(name).name) for dest, names in data_files for name in names}


def console_scripts() -> set:
    return {e.name for e in distribution(PACKAGE).entry_points.select(group='console_scripts')}


def test_setup_py_installs_every_file_of_the_data_folders():
    declared = declared_data_files()
    for folder in DATA_FOLDERS:
        in_repo = {p.name for p in (REPO / folder).iterdir() if p.is_file()}
        installed = {p.name for p in declared if p.parent == Path('share', PACKAGE, folder)}
        assert in_repo and installed == in_repo, folder


def test_os_walk_without_following_links_finds_every_data_file():
    walked = walked_files(prefix())
    missing = declared_data_files() - walked
    assert not missing, f'not reachable by os.walk(followlinks=False): {sorted(map(str, missing))}'
    for path in declared_data_files():
        assert (prefix() / path).is_file(), f'{path} does not resolve to a file'


def test_no_stale_entries_in_the_data_folders():
    declared = declared_data_files()
    for folder in DATA_FOLDERS:
        top = Path('share', PACKAGE, folder)
        stale = {top / p for p in walked_files(prefix() / top)} - declared
        assert not stale, sorted(map(str, stale))


def test_every_launch_file_is_found_as_ros2launch_searches():
    # ros2launch.api.get_launch_file_paths: os.walk over the share folder, by file name.
    share = prefix() / 'share' / PACKAGE
    found = {p.name for p in walked_files(share) if p.name.endswith('.launch.py')}
    shipped = {p.name for p in (REPO / 'launch').glob('*.launch.py')}
    assert shipped and found == shipped


def test_lib_holds_an_executable_for_every_console_script():
    scripts = console_scripts()
    assert {'loink', 'loink_node'} <= scripts
    for name in scripts:
        exe = prefix() / 'lib' / PACKAGE / name
        assert exe.is_file() and os.access(exe, os.X_OK), f'{exe} missing or not executable'


def test_ament_index_python_agrees_with_the_layout():
    from ament_index_python import get_resource, get_resources
    from ament_index_python.packages import get_package_share_directory

    assert Path(get_package_share_directory(PACKAGE)) == prefix() / 'share' / PACKAGE
    assert Path(get_resources('packages')[PACKAGE]) == prefix()
    _, resource_prefix = get_resource('packages', PACKAGE)
    assert Path(resource_prefix) == prefix()
    package_xml = (prefix() / 'share' / PACKAGE / 'package.xml').read_text()
    assert f'<name>{PACKAGE}</name>' in package_xml


def ros2(*args: str) -> subprocess.CompletedProcess:
    if shutil.which('ros2') is None:
        if (REPO / '.ros2tools').is_dir():
            pytest.fail('.ros2tools is installed but `ros2` is not on PATH: source ./env.sh')
        pytest.fail('no ros2 command line: scripts/setup.sh installs .ros2tools from '
                    '../shared/ros2tools (missing set-up fails, never skips)', pytrace=False)
    result = subprocess.run(['ros2', *args], capture_output=True, text=True, timeout=60,
                            env=os.environ.copy())
    assert result.returncode == 0, f'ros2 {" ".join(args)}: {result.stderr}'
    return result


def test_ros2_pkg_executables_lists_every_console_script():
    lines = ros2('pkg', 'executables', PACKAGE).stdout.split('\n')
    listed = {line.split()[1] for line in lines if line.strip()}
    assert listed == console_scripts()


def test_ros2_pkg_prefix_is_the_index_prefix():
    assert Path(ros2('pkg', 'prefix', PACKAGE).stdout.strip()) == prefix()


def test_ros2_run_starts_the_installed_executable():
    assert 'usage' in ros2('run', PACKAGE, 'loink', '--help').stdout.lower()


def test_ros2_launch_finds_the_launch_file():
    # --show-args loads the launch file from the share folder without starting a node.
    assert 'model' in ros2('launch', '--show-args', PACKAGE, 'loink.launch.py').stdout
