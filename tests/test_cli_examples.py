"""Every ``Example:`` line of the CLI help is a command a user can run: each parses on its
own sub-command (no unknown option, no extra argument), every sub-command has one, and those
that need nothing but this machine (no key, no network, no long-running server) are run as
written, in a scratch directory, and succeed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reasonwire.cli import EXAMPLES, command
from tests.conformance.corpus import PRESENT, corpus_path

ROOT = command()

RUN_AS_WRITTEN = {
    "sim models": "the simulator's catalogue",
    "localserver model": "the bundled template and vocabulary named",
    "probe report": "an empty ledger: zero rows, in JSON",
    "gateway keygen": "a key ring written into the scratch directory",
    "inspect": "a saved stream (a recorded one, copied under the example's file name)",
    "audit run": "a two-line my_agent.py under the audit (its `audit -- cmd` shorthand too)",
}
"""Examples run for real; every other one needs a key, the network, input files of the
user's or runs a server until Ctrl-C, and is parsed only."""


def _argv(example: str) -> list[str]:
    words = shlex.split(example)
    assert words[0] == "reasonwire", example
    return words[1:]


def _leaf(argv: list[str]) -> Any:
    """The context of the sub-command ``argv`` names, its options and arguments parsed."""
    ctx = ROOT.make_context("reasonwire", list(argv))
    while hasattr(ctx.command, "commands"):  # a group (typer carries its own click)
        held = getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", ())
        args = [*held, *ctx.args]  # the sub-command name click keeps apart, then the rest
        name, sub, rest = ctx.command.resolve_command(ctx, args)
        assert sub is not None and name is not None
        ctx = sub.make_context(name, rest, parent=ctx)
    return ctx


def _leaf_names(cmd: Any, path: tuple[str, ...] = ()) -> list[str]:
    if hasattr(cmd, "commands"):
        return [n for name, sub in cmd.commands.items() for n in _leaf_names(sub, (*path, name))]
    return [" ".join(path)]


def test_every_sub_command_has_an_example() -> None:
    leaves = set(_leaf_names(ROOT))
    assert leaves - set(EXAMPLES) == set(), sorted(leaves - set(EXAMPLES))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_parses_on_its_own_command(name: str) -> None:
    if name == "audit run":
        pytest.skip("`audit -- cmd` is the audit group's own shorthand: run as written below")
    argv = _argv(EXAMPLES[name])
    ctx = _leaf(argv)
    assert ctx.command_path.removeprefix("reasonwire ") in (name, name.split()[0])


@pytest.mark.parametrize("name", sorted(RUN_AS_WRITTEN))
def test_local_examples_run_as_written(name: str, tmp_path: Path) -> None:
    if name == "inspect":
        if not PRESENT:
            pytest.skip("conformance corpus not present")
        src = corpus_path("vercel__google-interactions__tool-call-step1.chunks.txt")
        lines = src.read_text(encoding="utf-8").splitlines()
        (tmp_path / "saved-stream.txt").write_text("".join(f"data: {ln}\n\n" for ln in lines))
    if name == "audit run":
        (tmp_path / "my_agent.py").write_text("print('an agent that calls no model')\n")
    env = {**os.environ, "REASONWIRE_HOME": str(tmp_path / "home")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    exe = shutil.which("reasonwire", path=str(Path(sys.executable).parent))
    assert exe is not None
    done = subprocess.run(
        [exe, *_argv(EXAMPLES[name])], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, (name, done.stdout[-800:], done.stderr[-800:])
    if name == "probe report":
        assert json.loads(done.stdout) is not None
    if name == "gateway keygen":
        assert any((tmp_path / "keys").iterdir())
    if name == "inspect":
        assert "thought_signature" in done.stdout or "signature" in done.stdout
    if name == "audit run":
        assert (tmp_path / "audit-out" / "audit.json").is_file()
