"""``eval run --fold`` against the simulator: the fold evidence follows the sim's designed
truth, costs only the calls it needs, resumes, and leaves the method's requests unchanged.

Expected values: which fields a model reads in the loop is the sim's data
(``BEHAVIOURS[model].truth``, see ``truth.py``); the tokens saved come from the sim's own
tokenizer over the trace and over the folded text built by hand from the documented rule;
the canaries' recall from where the trace places them (head and tail kept, middle folded)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._embedded import SIM_LANES, sim_targets
from reasonwire.eval._records import read_jsonl
from reasonwire.eval._report_html import write_all
from reasonwire.eval.cli import app
from reasonwire.fold.trace import make_fold_trace
from reasonwire.method.fixture import DEFAULT_SEED, SeededTrace
from reasonwire.method.matrix import FoldSection, read_matrix
from reasonwire.sim import SimServer
from reasonwire.sim.behaviours import BEHAVIOURS
from reasonwire.sim.tokens import count
from reasonwire.wire.fold import FoldSettings
from tests.eval.slim_oracle import rows_both_ways
from tests.fold.test_trace import by_hand

from .truth import VARIANT_KEYS, lane_behaviour

MODELS = ("sim-chat-all", "sim-qwen3", "sim-chat-ignore", "sim-r1", "sim-vllm", "sim-gemini",
          "sim-grok-refuse", "sim-portal")  # fmt: skip
SINGLE_LANE = ("sim-chat-all", "sim-qwen3", "sim-chat-ignore", "sim-r1", "sim-gemini")
ON = FoldSettings(enabled=True)
TEXT_KEYS = (44, "1070d94aa80d47537035d7f16f63dcdd29ded9591483fdcfed1ddcdde2a9afb5")
"""Resume keys of the method's text step over SINGLE_LANE (sorted, sha256 of their lines),
measured with the main checkout at 4882a37, before ``--fold`` existed: resume keys hash the
request bodies (all 71 keys hashed to a228082f... there)."""
METHOD_KEYS = (71, "d6061912c148b5da6bdba301977f4e31e484f8f88d147154fa3bc6907d1969d8")
"""All 71 keys since the opaque step's turn 1 asks the method's arithmetic prompt
(``TURN1_TASK``, which changed the turn-1 and turn-2 bodies only; the text keys above did not
move), measured on branch wt-eval at that change."""


def _cfg(sim: SimServer, out: Path, models: tuple[str, ...], **kw: Any) -> EvalConfig:
    targets = [t for t in sim_targets(sim.base_url, sim.root_url) if t.model in models]
    return EvalConfig(targets=targets, out=out, lane_attempts=12, **kw)


def _calls(out: Path) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call"]


def _read_in_loop(model: str, lane: str) -> dict[str, int]:
    """Field -> how many of its carriers the sim reads in the loop (its designed truth)."""
    beh = lane_behaviour(BEHAVIOURS[model], lane)
    out = {}
    for field, keys in VARIANT_KEYS.items():
        n = sum(1 for k in keys if k in beh.truth and beh.truth[k].in_loop == "consumed")
        if n:
            out[field] = n
    return out


@pytest.fixture(scope="module")
def fold_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """Its own simulator: the portal's lane follows the server's call counter, so on the
    session's shared simulator the lanes this run sees depended on the tests run before it
    (a full-suite run once saw no OpenRouter lane at all)."""
    out = tmp_path_factory.mktemp("fold-run")
    with SimServer(seed=0) as own:
        run_eval(_cfg(own, out, MODELS, fold=ON))
    yield out, write_all(out)


def test_fold_rows_are_the_fields_the_sim_reads_in_the_loop(fold_run: tuple[Path, Any]) -> None:
    _, matrix = fold_run
    rows = matrix["fold"]["rows"]
    got = {(r["model"], r["lane"], r["field"]) for r in rows}
    lanes = {"sim-portal": [SIM_LANES.lane("gen-x"), SIM_LANES.lane("chatcmpl-x")]}
    want = {
        (m, lane, f)
        for m in MODELS
        for lane in lanes.get(m, ["direct"])
        for f in _read_in_loop(m, lane)
        if f in matrix["variants"][BEHAVIOURS[m].dialect]
    }
    assert got >= want
    assert ("sim-qwen3", "direct", "reasoning") not in got  # the sim ignores it: no call
    # a cell resampled towards another lane may land on one that ignores the field: a row
    # that shows it unread, with no recall verdict
    for r in rows:
        if (r["model"], r["lane"], r["field"]) not in want:
            assert r["model"] == "sim-portal"
            assert {r["unfolded_outcome"], r["folded_outcome"]} <= {"dropped", "missing"}
            assert r["recall_as_expected"] is None


def test_folded_carrier_is_consumed_saves_its_share_and_keeps_head_and_tail(
    fold_run: tuple[Path, Any],
) -> None:
    _, matrix = fold_run
    trace = make_fold_trace(DEFAULT_SEED, ON)
    sent = by_hand(trace.text, 4000, 2000)
    saved_one = count(trace.text) - count(sent)  # the sim's tokenizer: an outside measure
    read = [
        r for r in matrix["fold"]["rows"] if _read_in_loop(r["model"], r["lane"]).get(r["field"])
    ]
    assert len(read) >= 10
    for row in read:
        n = _read_in_loop(row["model"], row["lane"])[row["field"]]
        assert row["action"] == "fold"
        assert row["unfolded_outcome"] == "consumed" and row["folded_outcome"] == "consumed"
        assert row["unfolded_delta"] == n * count(trace.text)
        assert row["folded_delta"] == n * count(sent)
        assert row["saved_tokens"] == n * saved_one
        assert row["folded_share"] == 0.625  # 10,000 of 16,000 characters
        assert abs(row["saved_share"] - 0.625) < 0.03
        assert row["T_unfolded"] == 4000 and row["T_folded"] == round(len(sent) / 4)
        recall = {r["region"]: (r["unfolded"], r["folded"], r["expected"]) for r in row["recall"]}
        assert recall == {
            "head": (True, True, True),
            "middle": (True, False, False),
            "tail": (True, True, True),
        }
        assert row["recall_as_expected"] is True


def test_the_fold_section_renders_and_reads_back(fold_run: tuple[Path, Any]) -> None:
    out, matrix = fold_run
    md = (out / "matrix.md").read_text()
    section = md[md.index("## fold") :]
    assert sum(1 for ln in section.splitlines() if ln.startswith("| sim")) == len(
        matrix["fold"]["rows"]
    )
    assert "| sim | sim-qwen3 | direct | reasoning_content | fold | consumed (" in section
    assert "head y>y (want y), middle y>n (want n), tail y>y (want y) | yes |" in section
    html = (out / "report.html").read_text()
    assert '<section id="fold">' in html and html.count("<tr>") > len(matrix["fold"]["rows"])
    typed = read_matrix(out / "matrix.json")
    assert isinstance(typed.fold, FoldSection)
    assert typed.fold.setup.fold_id == make_fold_trace(DEFAULT_SEED, ON).fold_id
    assert json.loads((out / "matrix.json").read_text())["fold"] == matrix["fold"]


def test_notes_say_why_a_field_got_no_fold_call(fold_run: tuple[Path, Any]) -> None:
    _, matrix = fold_run
    notes = {r["model"]: " ".join(r["notes"]) for r in matrix["rows"]}
    assert "fold: reasoning: not consumed in the loop unfolded" in notes["sim-qwen3"]
    assert "fold: all: not consumed" in notes["sim-r1"]  # every field refused: none folded
    assert "fold: thought_part: not consumed" in notes["sim-gemini"]


def test_fold_adds_only_its_calls_resumes_and_keeps_the_method_bytes(
    sim: SimServer, tmp_path: Path
) -> None:
    plain = run_eval(_cfg(sim, tmp_path / "plain", SINGLE_LANE))
    plain_keys = sorted(r["key"] for r in _calls(tmp_path / "plain"))
    # the method's requests are the bytes they were before the fold step existed
    digest = hashlib.sha256("\n".join(plain_keys).encode()).hexdigest()
    assert (len(plain_keys), digest) == METHOD_KEYS
    text_keys = sorted(r["key"] for r in _calls(tmp_path / "plain") if r["step"] == "text")
    text_digest = hashlib.sha256("\n".join(text_keys).encode()).hexdigest()
    assert (len(text_keys), text_digest) == TEXT_KEYS
    # the same directory, now with the fold: the method's calls are all reused
    res = run_eval(_cfg(sim, tmp_path / "plain", SINGLE_LANE, fold=ON))
    fields = {m: len(_read_in_loop(m, "direct")) for m in SINGLE_LANE}
    # per model with something to fold: one baseline, then each field unfolded and folded
    assert res.sent == sum(1 + 2 * n for n in fields.values() if n)
    assert res.reused == plain.sent
    # a fresh directory with the fold: the method sends exactly the bytes it sends without
    run_eval(_cfg(sim, tmp_path / "fold", SINGLE_LANE, fold=ON))
    method_keys = sorted(r["key"] for r in _calls(tmp_path / "fold") if r["step"] != "fold")
    assert method_keys == plain_keys
    again = run_eval(_cfg(sim, tmp_path / "fold", SINGLE_LANE, fold=ON))
    assert again.sent == 0


def test_the_consume_gate_is_the_methods_threshold_at_its_boundary(
    sim: SimServer, tmp_path: Path
) -> None:
    trace = SeededTrace.from_seed(DEFAULT_SEED).trace
    delta, T = count(trace), round(len(trace) / 4)  # the sim's in-loop delta; T by chars/4
    at = run_eval(_cfg(sim, tmp_path / "at", ("sim-qwen3",), fold=ON, consume_ratio=delta / T))
    above = run_eval(
        _cfg(sim, tmp_path / "above", ("sim-qwen3",), fold=ON, consume_ratio=(delta + 1) / T)
    )
    folds = [r for r in _calls(tmp_path / "at") if r["step"] == "fold"]
    assert {(r["variant"], r["fold_mode"]) for r in folds} >= {
        ("reasoning_content", "unfolded"),
        ("reasoning_content", "folded"),
    }
    assert not [r for r in _calls(tmp_path / "above") if r["step"] == "fold"]
    assert above.sent == at.sent - len(folds)


def test_settings_that_do_not_apply_send_nothing(sim: SimServer, tmp_path: Path) -> None:
    limited = FoldSettings(enabled=True, providers=frozenset({"elsewhere"}))
    run_eval(_cfg(sim, tmp_path, ("sim-qwen3",), fold=limited))
    assert not [r for r in _calls(tmp_path) if r["step"] == "fold"]
    (row,) = build_matrix(tmp_path)["rows"]
    assert "fold: the fold settings do not apply here" in " ".join(row["notes"])
    assert build_matrix(tmp_path)["fold"]["rows"] == []


def test_a_run_without_fold_has_no_fold_section(sim_run: tuple[Path, Any]) -> None:
    _, matrix = sim_run
    assert "fold" not in matrix
    assert not [r for r in _calls(sim_run[0]) if r["step"] == "fold"]


ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def _cli(tmp_path: Path, sim: SimServer, *args: str) -> tuple[int, str]:
    routes = tmp_path / "routes.toml"
    routes.write_text(f'[routes.mine]\nkind = "chat"\nbase_url = "{sim.base_url}"\n')
    res = CliRunner().invoke(
        app,
        ["run", "--no-progress", "--route", "mine", "--routes-file", str(routes), "--models",
         "sim-qwen3", "--out", str(tmp_path / "out"), *args],
        env=ENV,
    )  # fmt: skip
    return res.exit_code, res.output


def test_cli_fold_settings_file(sim: SimServer, tmp_path: Path) -> None:
    settings = tmp_path / "fold.toml"
    settings.write_text("[fold]\nenabled = true\nfloor_chars = 3000\nhead_chars = 1000\n"
                        "tail_chars = 600\n")  # fmt: skip
    code, output = _cli(tmp_path, sim, "--fold-settings", str(settings))
    assert code == 0, output
    assert "## fold" in output and "floor 3000, head 1000, tail 600" in output
    assert "| mine | sim-qwen3 | direct | reasoning_content | fold | consumed" in output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[fold]\nenabled = false\n", "enabled = false"),
        ("[fold]\nenabled = true\nhead_chars = 50\nfloor_chars = 3000\n", "head_chars (50)"),
        ("[fold]\nenabled = true\nfloor_chars = 10\n", "floor_chars (10) must be greater"),
        ("[fold\n", "is not valid TOML"),
    ],
)
def test_cli_bad_fold_settings_is_one_line_and_sends_nothing(
    sim: SimServer, tmp_path: Path, text: str, message: str
) -> None:
    settings = tmp_path / "fold.toml"
    settings.write_text(text)
    code, output = _cli(tmp_path, sim, "--fold", "--fold-settings", str(settings))
    assert code == 2
    assert message in output and "Traceback" not in output
    assert len(output.strip().splitlines()) <= 2  # one message (wrapped at most once)
    assert not (tmp_path / "out" / "calls.jsonl").exists() or not _calls(tmp_path / "out")


def test_cli_missing_fold_settings_file(sim: SimServer, tmp_path: Path) -> None:
    code, output = _cli(tmp_path, sim, "--fold-settings", str(tmp_path / "nope.toml"))
    assert code == 2 and "cannot read fold settings" in output and "Traceback" not in output


@pytest.mark.parametrize("sharded", [False, True])
def test_the_report_command_writes_the_fold_section_as_the_whole_matrix_does(
    fold_run: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded: bool
) -> None:
    """``eval report`` joins the fold rows of each process's keys: its files equal those
    ``write_all`` rendered from the whole matrix of the same records."""
    import shutil

    import reasonwire.eval.matrix as matrix_mod
    from reasonwire.eval._report_files import write_report
    from tests.eval.test_report_files import _stamped

    out, matrix = fold_run
    assert matrix["fold"]["rows"]
    pieces = tmp_path / "pieces"
    pieces.mkdir()
    for name in ("calls.jsonl", "runs.jsonl", "cost.jsonl"):
        shutil.copy(out / name, pieces / name)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0 if sharded else 1 << 62)
    write_report(pieces)
    for name in ("matrix.json", "matrix.md", "report.html"):
        assert _stamped(pieces, name) == _stamped(out, name), name


def test_the_fold_rows_of_the_slimmed_records_are_those_of_the_records_as_written(
    fold_run: tuple[Path, Any],
) -> None:
    """The report's reader keeps only the fields a row reads (``_shards._READ``): the fold
    rows, read from the fold step's own fields, are the same as from the whole records."""
    slim, whole, _ = rows_both_ways(fold_run[0])
    assert '"folded"' in whole
    assert slim == whole
