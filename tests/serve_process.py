"""A ``reasonwire ... serve`` command run as a real process in tests: the command line and
how its end is awaited (shared by the ``sim serve`` and ``gateway serve`` tests)."""

from __future__ import annotations

import subprocess

RUN = "from reasonwire.cli import main; main()"
"""``python -c RUN ARGS...`` runs the CLI with the interpreter running the tests."""


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """The exit code and stderr of ``proc`` once it ends (killed past a bound meant for a
    loaded machine, not a timing check)."""
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err
