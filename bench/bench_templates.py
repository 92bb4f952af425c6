"""Benchmark: the offline chat-template scan over the whole llama.cpp corpus.

Bar (issue 28): every corpus template, all variants and positions, in under 5 s on this
machine, once the token counts are stored (no repeated work) and from empty stores too: the
first scan after install, what a user sees first (the llama.cpp tree is fetched before timing;
no stored counts, no stored compiled templates). The empty-store scan's CPU time is printed
beside its wall time: on a loaded machine the CPU time is the figure a quiet machine's wall
time comes near.
Peers measured in the same run: the scan from an empty store (every vocabulary loaded and
every template compiled, as before the stores existed), the same scan counting chars/4 (no
vocabulary, compiled templates stored: the floor a stored scan can reach), and a plain
unsandboxed jinja2 render of the same fixture (the cost of the transformers-compatible
sandbox). Every scan starts with the in-process template caches cleared, as a fresh process
would.

Run: .venv/bin/python bench/bench_templates.py
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import jinja2

from reasonwire.llamacpp.sdist import templates_dir, vocab_dir
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.templates import _count_cache
from reasonwire.templates.fixture import POSITIONS, TOOLS, VARIANTS, Fixture
from reasonwire.templates.render import (
    _compiled,
    compile_template,
    render_chat_template,
    variables_read,
)
from reasonwire.templates.scan import (
    ScanOptions,
    ScanResult,
    TemplateSource,
    corpus_sources,
    scan,
)

BAR_SECONDS = 5.0
COLD_BAR_SECONDS = 5.0

_loads: Counter[str] = Counter()
_cpu: list[float] = []  # CPU seconds of each timed scan, in order
_real_from_file = GGUFVocabTokenizer.from_file


def _counting_from_file(path: str | Path) -> GGUFVocabTokenizer:
    _loads[Path(path).stem] += 1
    return _real_from_file(path)


def _fresh_process() -> None:
    """Clear what a fresh process would not have: the in-process template caches."""
    compile_template.cache_clear()
    _compiled.cache_clear()
    variables_read.cache_clear()


def _timed_scan(
    sources: list[TemplateSource], vocabs: Path, opts: ScanOptions | None = None
) -> tuple[ScanResult, float, int]:
    """One scan as a fresh process runs it (template caches cleared); (result, s, loads)."""
    _fresh_process()
    _loads.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    result = scan(sources, opts, vocab_dir=vocabs)
    _cpu.append(time.process_time() - c0)
    return result, time.perf_counter() - t0, sum(_loads.values())


def main() -> None:
    templates_dir()  # make sure the tree is cached before timing anything
    sources = corpus_sources()
    vocabs = vocab_dir()
    _count_cache.GGUFVocabTokenizer.from_file = _counting_from_file  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as store:
        os.environ["REASONWIRE_CACHE"] = store  # an empty count store for this run only
        cold, cold_s, cold_loads = _timed_scan(sources, vocabs)
        full, full_s, full_loads = _timed_scan(sources, vocabs)
        _, chars_s, _ = _timed_scan(sources, vocabs, ScanOptions(chars_only=True))
        del os.environ["REASONWIRE_CACHE"]
    _count_cache.GGUFVocabTokenizer.from_file = _real_from_file  # type: ignore[method-assign]
    same = [r.to_json() for r in cold.rows] == [r.to_json() for r in full.rows]
    templates = len({r.template for r in full.rows})
    errors = full.errors()

    fx = Fixture.from_seed()
    plain_env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    msgs = fx.messages("reasoning_content", "in_loop")
    msgs[2]["content"] = ""  # the shape most corpus templates accept
    t0 = time.perf_counter()
    ok_plain = 0
    for src in sources:
        try:
            plain_env.from_string(src.text).render(
                messages=msgs,
                tools=TOOLS,
                add_generation_prompt=True,
                bos_token="",
                eos_token="",
                raise_exception=lambda m: None,
            )
            ok_plain += 1
        except Exception:  # a peer timing: failures are only counted
            pass
    plain_s = time.perf_counter() - t0
    _fresh_process()
    with tempfile.TemporaryDirectory() as store:
        os.environ["REASONWIRE_CACHE"] = store  # first renders: nothing compiled is stored
        t0 = time.perf_counter()
        for src in sources:
            with contextlib.suppress(Exception):
                render_chat_template(src.text, msgs, TOOLS, True)
        sandbox_s = time.perf_counter() - t0
        del os.environ["REASONWIRE_CACHE"]

    t0 = time.perf_counter()
    tok = GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-qwen2.gguf")
    load_s = time.perf_counter() - t0
    text = render_chat_template(
        next(s.text for s in sources if s.name == "Qwen-Qwen3-0.6B"), msgs, TOOLS, True
    )
    t0 = time.perf_counter()
    n = 200
    for _ in range(n):
        tokens = tok.count(text)
    enc_s = (time.perf_counter() - t0) / n

    renders = templates * len(VARIANTS) * len(POSITIONS)
    print(
        f"templates scanned: {templates}  rows: {len(full.rows)}  all-error templates: "
        f"{len(errors)} {errors}"
    )
    print(
        f"full scan, stored counts ({renders}+ renders, {full_loads} vocabulary loads): "
        f"{full_s:.2f} s  (bar < {BAR_SECONDS:.0f} s: {'PASS' if full_s < BAR_SECONDS else 'FAIL'})"
        f"; rows identical to the empty-store scan: {same}"
    )
    print(
        f"first run: full scan, empty stores ({cold_loads} vocabulary loads, every template "
        f"compiled): "
        f"{cold_s:.2f} s, cpu {_cpu[0]:.2f} s (bar < {COLD_BAR_SECONDS:.0f} s: "
        f"{'PASS' if cold_s < COLD_BAR_SECONDS else 'FAIL'})  ratio stored/empty = "
        f"{full_s / cold_s:.2f}"
    )
    print(
        f"peer: chars/4-only scan: {chars_s:.2f} s  ratio stored/chars = {full_s / chars_s:.2f}, "
        f"empty/chars = {cold_s / chars_s:.2f} (the difference is loading and running the GGUF "
        "vocabularies)"
    )
    print(
        f"peer: plain jinja2 first render of {len(sources)} templates: {plain_s:.2f} s "
        f"({ok_plain} rendered); sandboxed HF env: {sandbox_s:.2f} s "
        f"ratio = {sandbox_s / plain_s:.2f}"
    )
    print(
        f"qwen2 vocabulary load: {load_s:.2f} s; Qwen3 prompt ({len(text)} chars, {tokens} "
        f"tokens) encoded in {enc_s * 1e3:.2f} ms = {tokens / enc_s / 1e6:.2f} M tokens/s"
    )


if __name__ == "__main__":
    main()
