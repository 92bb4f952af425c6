"""Run a real OpenAI-compatible server on a loopback port for the length of a ``with`` block.

Two lanes share one process manager:

* :class:`LocalServer`: llama.cpp's ``llama-server --jinja`` with a tiny real-template model. Its
  ``usage.prompt_tokens`` is the real tokenization of the real template's rendering.
* :class:`LlamaCppPythonServer`: the ``llama-cpp-python[server]`` package's own server (optional
  extra), which drops ``reasoning_content``: a different real behaviour.

The child runs in its own process group (so stopping it reaches anything it spawned) and, on
Linux, is told to die with its parent, so neither a test failure nor a killed pytest leaves an
orphan holding a port. Output goes to a log file, not a pipe, so a chatty server never blocks.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, Self, TypedDict, Unpack

import httpx

from reasonwire._running import Running
from reasonwire.errors import ConfigError, TransportError
from reasonwire.localserver import build, model
from reasonwire.wire.model import JsonObject

LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1
_LIVE: weakref.WeakSet[ManagedServer] = weakref.WeakSet()


def free_port() -> int:
    """A loopback port that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    """Whether binding ``127.0.0.1:port`` fails right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return True
    return False


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ManagedServer(Running):
    """A server child process on a loopback port: start, wait for health, stop, no orphans."""

    health_path = "/health"
    name = "server"
    host = LOOPBACK

    def __init__(
        self,
        *,
        port: int | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 5.0,
    ) -> None:
        self._requested_port = port
        self.port = port or 0
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: BinaryIO | None = None
        self.log_path: Path | None = None

    # -- to override -------------------------------------------------------------------------
    def command(self, port: int) -> list[str]:
        """The argv that starts the server on ``port``."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Resolve binaries and models before the child starts (may raise ConfigError)."""

    # -- public ------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote (for error messages)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def start(self) -> Self:
        """Start the child and return once ``health_path`` answers 200."""
        if self.alive():
            return self
        self.prepare()
        if self._requested_port is not None:
            if port_in_use(self._requested_port):
                raise ConfigError(
                    f"port {self._requested_port} on {LOOPBACK} is already in use; "
                    "pick another port or omit it to get a free one"
                )
            self._launch(self._requested_port)
            return self
        # A free port can be taken between our probe and the child's bind: retry a few times.
        for attempt in range(3):
            try:
                self._launch(free_port())
                return self
            except ConfigError as exc:
                if "in use" not in str(exc) or attempt == 2:
                    raise
        return self

    def stop(self) -> None:
        """Terminate the process group, then kill it if it has not exited in time."""
        proc, self.proc = self.proc, None
        if proc is not None:
            _stop_group(proc, self.stop_timeout)
            _LIVE.discard(self)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def raise_if_dead(self, during: str = "") -> None:
        """Raise a clear :class:`TransportError` if the child has exited."""
        if self.proc is None:
            raise TransportError(f"{self.name} is not running")
        code = self.proc.poll()
        if code is not None:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            where = f" {during}" if during else ""
            raise TransportError(
                f"{self.name} (pid {self.proc.pid}) {how}{where}; last log lines:\n"
                + self.log_tail()
            )

    def post(self, path: str, body: JsonObject, *, timeout: float = 120.0) -> httpx.Response:
        """POST JSON to ``root_url + path``; a dead server gives a TransportError naming it."""
        try:
            return httpx.post(self.root_url + path, json=body, timeout=timeout)
        except httpx.TransportError as exc:
            # Give the kernel a moment to reap: a crash drops the connection before exit status.
            deadline = time.monotonic() + 2.0
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.raise_if_dead(during=f"during POST {path}")
            raise TransportError(f"POST {path} to {self.name} failed: {exc!r}") from exc

    # -- internals ---------------------------------------------------------------------------
    def _launch(self, port: int) -> None:
        self.port = port
        fd, name = tempfile.mkstemp(prefix=f"reasonwire-{self.name}-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)
        self._log_file = self.log_path.open("wb")
        cmd = self.command(port)
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except OSError as exc:
            raise ConfigError(f"cannot start {self.name} ({cmd[0]}): {exc}") from exc
        _LIVE.add(self)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = self.root_url + self.health_path
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if not self.alive():
                    tail = self.log_tail()
                    if "bind" in tail.lower() or "address already in use" in tail.lower():
                        raise ConfigError(
                            f"{self.name} could not bind port {self.port} on {LOOPBACK}: "
                            f"address in use; log:\n{tail}"
                        )
                    self.raise_if_dead(during="while starting")
                try:
                    if client.get(url).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        raise TransportError(
            f"{self.name} did not become healthy on {url} within {self.startup_timeout:.0f} s; "
            f"log:\n{self.log_tail()}"
        )


def _stop_group(proc: subprocess.Popen[bytes], timeout: float) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
    # The leader may be gone while others in its group live on: kill the group regardless.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


class TinyModelOptions(TypedDict, total=False):
    """The keywords every tiny-model server takes (see :class:`TinyModelServer`)."""

    vocab: str | None
    model_file: Path | None
    port: int | None
    ctx_size: int
    extra_args: Sequence[str]
    startup_timeout: float
    quiet: bool


class TinyModelServer(ManagedServer):
    """A server of the tiny model built for a real chat template (:mod:`.model`).

    ``template`` is a bundled template stem (``Qwen-Qwen3-0.6B``) or a path; ``vocab`` a bundled
    vocab name or path (default: the best fit for the template); ``model_file`` a model to
    serve instead of building one; ``ctx_size`` the context; ``extra_args`` go to the server's
    command line after reasonwire's own."""

    def __init__(
        self, template: str = "Qwen-Qwen3-0.6B", **options: Unpack[TinyModelOptions]
    ) -> None:
        super().__init__(
            port=options.get("port"), startup_timeout=options.get("startup_timeout", 60.0)
        )
        self.template = template
        self.vocab = options.get("vocab")
        self.model_file = options.get("model_file")
        self.ctx_size = options.get("ctx_size", 16384)
        self.extra_args = tuple(options.get("extra_args", ()))
        self.quiet = options.get("quiet", True)

    def _model(self) -> Path:
        """The model file to serve, built (and cached) on first use."""
        if self.model_file is None:
            self.model_file = model.model_path(self.template, self.vocab, quiet=self.quiet)
        return self.model_file


class LocalServer(TinyModelServer):
    """llama.cpp's ``llama-server --jinja`` serving a tiny model with a real chat template.

    ``binary`` is a llama-server to run instead of the cached build; ``build=True`` builds the
    binary on first use; ``False`` fails fast with a ConfigError when it is not built. The
    other keywords are :class:`TinyModelServer`'s.
    """

    name = "llama-server"

    def __init__(
        self,
        template: str = "Qwen-Qwen3-0.6B",
        *,
        binary: Path | None = None,
        threads: int = 2,
        build_if_missing: bool = True,
        **options: Unpack[TinyModelOptions],
    ) -> None:
        super().__init__(template, **options)
        self.binary = binary
        self.threads = threads
        self.build_if_missing = build_if_missing

    def prepare(self) -> None:
        if self.binary is not None:
            if not self.binary.is_file() or not os.access(self.binary, os.X_OK):
                raise ConfigError(f"llama-server binary not found or not executable: {self.binary}")
        else:
            found = build.cached_server_binary()
            if found is None and not self.build_if_missing:
                raise ConfigError(
                    "llama-server is not built yet; run `reasonwire localserver build` "
                    f"(it goes to {build.server_binary_path()})"
                )
            self.binary = found or build.build_server(quiet=self.quiet)
            if not self.binary.is_file():
                raise ConfigError(f"llama-server binary not found: {self.binary}")
        self._model()

    def command(self, port: int) -> list[str]:
        assert self.binary is not None
        return [
            str(self.binary),
            "--model", str(self._model()),
            "--host", LOOPBACK,
            "--port", str(port),
            "--jinja",
            "--ctx-size", str(self.ctx_size),
            "--parallel", "1",
            "--threads", str(self.threads),
            "--no-warmup",
            *self.extra_args,
        ]  # fmt: skip


LLAMA_CPP_PYTHON_SERVER_SPEC = "llama-cpp-python[server]==0.3.36"
#: A Python interpreter that has the optional package (e.g. a separate venv), if not this one.
LLAMA_CPP_PYTHON_ENV = "REASONWIRE_LLAMA_CPP_PYTHON"


def llama_cpp_python_interpreter() -> str:
    """The interpreter that runs the second lane: ``$REASONWIRE_LLAMA_CPP_PYTHON`` or this one."""
    return os.environ.get(LLAMA_CPP_PYTHON_ENV) or sys.executable


@functools.cache
def llama_cpp_python_available(python: str | None = None) -> bool:
    """Whether ``python`` (default: :func:`llama_cpp_python_interpreter`) can run the lane."""
    python = python or llama_cpp_python_interpreter()
    if python == sys.executable:
        return all(
            importlib.util.find_spec(mod) is not None
            for mod in ("llama_cpp", "fastapi", "sse_starlette", "starlette_context")
        )
    try:
        probe = subprocess.run(
            [python, "-c", "import llama_cpp.server.app"], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


class LlamaCppPythonServer(TinyModelServer):
    """The ``llama-cpp-python[server]`` package's own OpenAI-compatible server (optional lane).

    Install with ``.venv/bin/pip install 'llama-cpp-python[server]==0.3.36'``, or into a separate
    venv named by ``$REASONWIRE_LLAMA_CPP_PYTHON`` (keeps its fastapi/starlette pins out of
    the main environment). pip compiles the wheel once and caches it. ``python`` is the
    interpreter that runs it; the other keywords are :class:`TinyModelServer`'s.
    """

    name = "llama-cpp-python-server"
    health_path = "/v1/models"

    def __init__(
        self,
        template: str = "Qwen-Qwen3-0.6B",
        *,
        python: str | None = None,
        **options: Unpack[TinyModelOptions],
    ) -> None:
        super().__init__(template, **options)
        self.python = python or llama_cpp_python_interpreter()

    def prepare(self) -> None:
        if not llama_cpp_python_available(self.python):
            raise ConfigError(
                f"the llama-cpp-python server lane needs the optional package in {self.python}: "
                f"pip install '{LLAMA_CPP_PYTHON_SERVER_SPEC}' (or point "
                f"{LLAMA_CPP_PYTHON_ENV} at a Python that has it)"
            )
        self._model()

    def command(self, port: int) -> list[str]:
        return [
            self.python, "-m", "llama_cpp.server",
            "--model", str(self._model()),
            "--host", LOOPBACK,
            "--port", str(port),
            "--n_ctx", str(self.ctx_size),
            *self.extra_args,
        ]  # fmt: skip
