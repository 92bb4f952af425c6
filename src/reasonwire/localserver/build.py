"""Build ``llama-server`` once from the cached llama.cpp tree and keep the binary.

The binary is cached under ``cache_root()/llama-server-<version>/bin/llama-server``. Why each
choice:

* Release, ``GGML_NATIVE=OFF``: a portable binary that a kept CI machine can reuse.
* tests/examples/tools other than the server off, only the ``llama-server`` target built: the
  build is ~5 minutes on 2 cores instead of ~20.
* ``LLAMA_OPENSSL=OFF``, ``LLAMA_USE_PREBUILT_UI=OFF``, ``LLAMA_BUILD_UI=OFF``: no network at
  build time (the UI options otherwise download web assets).
* ``BUILD_SHARED_LIBS=OFF``: one self-contained file, no ``LD_LIBRARY_PATH``.

The build runs in a temporary directory; the finished binary is copied next to its final name
and renamed into place, so a build killed at any point never leaves a binary later runs trust.
A lock file serialises concurrent builders (pytest workers, parallel CI jobs): the second one
waits and then finds the binary.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reasonwire.errors import ConfigError
from reasonwire.llamacpp import sdist

BINARY_NAME = "llama-server"
REQUIRED_TOOLS = ("cmake", "ninja", "g++")

CMAKE_OPTIONS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_BUILD_HTML=OFF",
    "-DGGML_OPENMP=OFF",
)


def server_dir(version: str = sdist.LLAMA_CPP_PYTHON_VERSION) -> Path:
    """The cache directory of one built server version."""
    return sdist.cache_root() / f"llama-server-{version}"


def server_binary_path(version: str = sdist.LLAMA_CPP_PYTHON_VERSION) -> Path:
    """Where the built binary lives (it may not exist yet)."""
    return server_dir(version) / "bin" / BINARY_NAME


def cached_server_binary(version: str = sdist.LLAMA_CPP_PYTHON_VERSION) -> Path | None:
    """The built binary if a complete build is cached, else ``None`` (never builds).

    ``REASONWIRE_LLAMA_SERVER`` points at a binary built elsewhere and wins when set.
    """
    env = os.environ.get("REASONWIRE_LLAMA_SERVER")
    if env:
        return Path(env)
    path = server_binary_path(version)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def missing_tools() -> list[str]:
    """The build tools not found on ``PATH``."""
    return [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"reasonwire: {message}", file=sys.stderr, flush=True)


@contextmanager
def _lock(path: Path, quiet: bool) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``; released by the kernel if the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for another process building llama-server ({path}) ...", quiet)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_server(
    version: str = sdist.LLAMA_CPP_PYTHON_VERSION,
    *,
    jobs: int | None = None,
    quiet: bool = False,
) -> Path:
    """Return the ``llama-server`` binary, building it first if the cache has none.

    Raises :class:`ConfigError` naming the missing tool when cmake, ninja or g++ is absent, or
    with the tail of the compiler output when the build fails.
    """
    found = cached_server_binary(version)
    if found is not None:
        return found
    missing = missing_tools()
    if missing:
        raise ConfigError(
            "cannot build llama-server: missing build tool(s) on PATH: "
            + ", ".join(missing)
            + " (install cmake, ninja and g++)"
        )
    target = server_binary_path(version)
    with _lock(server_dir(version) / "build.lock", quiet):
        if target.is_file():
            return target
        _remove_leftovers(server_dir(version))
        tree = sdist.llama_tree(version, quiet=quiet)
        _build_into(tree, target, jobs=jobs or os.cpu_count() or 2, quiet=quiet)
    return target


def _remove_leftovers(directory: Path) -> None:
    """Drop what a killed earlier build left behind (we hold the lock: nobody else builds)."""
    for stale in directory.glob("build.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    for stale in directory.glob(f"bin/.{BINARY_NAME}.tmp-*"):
        stale.unlink(missing_ok=True)


def _run(cmd: list[str], *, log: Path, quiet: bool, what: str) -> None:
    """Run a build step; stream ninja's ``[n/N]`` progress to stderr, keep the full log."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        last = 0.0
        for line in proc.stdout:
            out.write(line)
            now = time.monotonic()
            if not quiet and line.startswith("[") and now - last > 2.0:
                last = now
                print(f"reasonwire: {what} {line.split(' ', 1)[0]}", file=sys.stderr, flush=True)
        code = proc.wait()
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        raise ConfigError(f"{what} failed (exit {code}); log {log}:\n" + "\n".join(tail))


def _build_into(tree: Path, target: Path, *, jobs: int, quiet: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="build.tmp-", dir=target.parent.parent))
    log = target.parent.parent / "build.log"
    log.write_text("")
    try:
        _say(f"configuring llama-server from {tree} (log: {log}) ...", quiet)
        _run(
            ["cmake", "-S", str(tree), "-B", str(work), "-G", "Ninja", *CMAKE_OPTIONS],
            log=log,
            quiet=quiet,
            what="cmake configure",
        )
        _say(f"compiling llama-server with {jobs} jobs (about 5 minutes on 2 cores) ...", quiet)
        _run(
            ["cmake", "--build", str(work), "--target", BINARY_NAME, "-j", str(jobs)],
            log=log,
            quiet=quiet,
            what="compile",
        )
        built = work / "bin" / BINARY_NAME
        if not built.is_file():
            raise ConfigError(f"build finished but {built} is missing; log {log}")
        staged = target.with_name(f".{BINARY_NAME}.tmp-{os.getpid()}")
        shutil.copy2(built, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _say(f"built {target} in {time.monotonic() - started:.0f} s", quiet)
