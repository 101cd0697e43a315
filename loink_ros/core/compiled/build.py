"""Building the compiled runtime of a problem: C from CasADi (codegen.py) plus kernel.c,
compiled once by the system C compiler into a shared library cached by a key of everything
it depends on. A cache hit needs neither CasADi nor the compiler."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from loink_ros.core.compiled import cpu_features
from loink_ros.core.problems.problem import Problem

PACKAGE = Path(__file__).resolve().parent
KERNEL = PACKAGE / 'kernel.c'
# Sources whose text decides the generated C: the problems (every family's subpackage) and
# this package.
SOURCES = sorted([*PACKAGE.glob('*.py'), *PACKAGE.glob('*.[ch]'),
                  *(PACKAGE.parent / 'problems').rglob('*.py')])
# No -ffast-math: the kernel must keep IEEE semantics (NaN checks, the reference's rounding).
FLAGS = ['-O3', '-fPIC', '-std=c99']
# Plus, for this machine's vector units (~20% faster), exactly the features the library can
# check at load that the CPU has (cpu_features.py); none if the compiler refuses them. The
# cache key names the CPU, so a cache shared by other machines is not reused by them.
COMPILE_TIMEOUT_S = 600


class BuildError(RuntimeError):
    """The compiled runtime cannot be built: the reason, in one line."""


@dataclass
class Build:
    """A compiled library and how it was obtained: from the cache (seconds 0) or built now."""

    path: Path
    cached: bool
    seconds: float


def cache_dir() -> Path:
    """$LOINK_CACHE_DIR, else $XDG_CACHE_HOME/loink_ros, else ~/.cache/loink_ros."""
    if os.environ.get('LOINK_CACHE_DIR'):
        return Path(os.environ['LOINK_CACHE_DIR'])
    base = os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache'
    return Path(base) / 'loink_ros'


def compiler() -> str:
    """$CC, else cc: the system C compiler."""
    return os.environ.get('CC', 'cc')


def cache_key(problem: Problem) -> str:
    """Hash of the sources, CasADi's version, the compiler and flags, and the problem."""
    digest = hashlib.sha256()
    for path in SOURCES:
        # By the path under core/: the families' modules share names (problem.py, ...).
        digest.update(str(path.relative_to(PACKAGE.parent)).encode() + path.read_bytes())
    digest.update(f'casadi {version("casadi")} {compiler()} {FLAGS}'.encode())
    digest.update(cpu_description().encode())
    digest.update(problem.compile_key().encode())
    return digest.hexdigest()[:20]


def cpu_description() -> str:
    """The CPU's model and feature flags (Linux), else the platform's machine name."""
    try:
        lines = Path('/proc/cpuinfo').read_text().splitlines()
    except OSError:
        return platform.machine()
    return ' '.join(sorted({line for line in lines if line.startswith(('model name', 'flags'))}))


def cpu_key() -> str:
    """CRC-32 of cpu_description(), in hex: what names a library of this CPU's (the MoveIt
    plugin computes the same)."""
    return f'{zlib.crc32(cpu_description().encode()):08x}'


def library_path(problem: Problem) -> Path:
    """Where the compiled library of `problem` is cached."""
    return cache_dir() / f'{problem.name}-{cache_key(problem)}.so'


def compiled_library(problem: Problem, rebuild: bool = False) -> Build:
    """The cached library of `problem`, built first if missing (or `rebuild`)."""
    path = library_path(problem)
    if path.exists() and not rebuild:
        return Build(path, True, 0.0)
    start = time.perf_counter()
    _build(problem, path)
    return Build(path, False, time.perf_counter() - start)


def _build(problem: Problem, path: Path, extra: dict[str, str] | None = None) -> None:
    """Generate (with the `extra` C sources, {file name: text}), compile each source into an
    object at once (a large generated program compiles beside the rest), for this CPU where
    the library can check it at load, link them with that check into a temporary file beside
    `path`, then move it in place (atomic: concurrent builds of the same key leave one whole
    library)."""
    if shutil.which(compiler()) is None:
        raise BuildError(f'no C compiler: {compiler()!r} is not on PATH (set CC)')
    symbolic = problem.symbolic()
    if symbolic is None:
        raise BuildError(f'problem {problem.name!r} has no symbolic form (Problem.symbolic)')
    from loink_ros.core.compiled.codegen import generate_sources  # CasADi only to build
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix='.build-') as work:
        sources = {**generate_sources(symbolic), **(extra or {})}
        for name, text in sources.items():
            Path(work, name).write_text(text)
        target = Path(work, path.name)
        units = [KERNEL, *(Path(work, name) for name in sources if name.endswith('.c'))]
        objects = [str(Path(work, f'{unit.stem}.o')) for unit in units]
        compiles = [[compiler(), *FLAGS, f'-I{work}', f'-I{PACKAGE}', '-c', str(unit), '-o', obj]
                    for unit, obj in zip(units, objects)]
        features = cpu_features.native_features(compiler())
        native = cpu_features.target_flags(features)
        if not features or _compile([[*command, *native] for command in compiles]) is not None:
            features = ()
            _raise_on(_compile(compiles))
        check = Path(work, cpu_features.SOURCE)
        check.write_text(cpu_features.check_source(features))
        objects.append(str(check.with_suffix('.o')))
        _raise_on(_compile([[compiler(), *FLAGS, '-c', str(check), '-o', objects[-1]]]))
        _raise_on(_compile([[compiler(), '-shared', *objects, '-o', str(target), '-lm',
                             '-lpthread']]))
        os.replace(target, path)


def _raise_on(error: str | None) -> None:
    if error is not None:
        raise BuildError(error)


def _compile(commands: list[list[str]]) -> str | None:
    """Run the compiler commands side by side; None when all succeed, else what went wrong
    with the first that failed, in one line."""
    try:
        running = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True) for command in commands]
    except OSError as err:
        return f'{commands[0][0]} failed: {err}'
    errors = []
    for command, process in zip(commands, running):
        try:
            _, stderr = process.communicate(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired as err:
            process.kill()
            process.communicate()
            errors.append(f'{command[0]} failed: {err}')
            continue
        if process.returncode != 0:
            last = (stderr.strip().splitlines() or ['no output'])[-1]
            errors.append(f'{command[0]} exited with {process.returncode}: {last}')
    return errors[0] if errors else None
