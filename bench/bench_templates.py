"""Benchmark: the offline chat-template scan over the whole llama.cpp corpus.

Bar: every corpus template, all variants and positions, in under 30 s on this machine.
Peers measured in the same run: the same scan counting chars/4 (no vocabulary: the cost of
real tokenization), and a plain unsandboxed jinja2 render of the same fixture (the cost of
the transformers-compatible sandbox).

Run: .venv/bin/python bench/bench_templates.py
"""

from __future__ import annotations

import contextlib
import time

import jinja2

from reasonwire.llamacpp.sdist import templates_dir, vocab_dir
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.templates.fixture import POSITIONS, TOOLS, VARIANTS, Fixture
from reasonwire.templates.render import _parsed, compile_template, render_chat_template
from reasonwire.templates.scan import ScanOptions, corpus_sources, scan

BAR_SECONDS = 30.0


def main() -> None:
    templates_dir()  # make sure the tree is cached before timing anything
    t0 = time.perf_counter()
    full = scan()
    full_s = time.perf_counter() - t0
    templates = len({r.template for r in full.rows})
    errors = full.errors()

    compile_template.cache_clear()  # every timing below compiles the templates afresh
    _parsed.cache_clear()
    t0 = time.perf_counter()
    scan(opts=ScanOptions(chars_only=True))
    chars_s = time.perf_counter() - t0

    fx = Fixture.from_seed()
    sources = corpus_sources()
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
    compile_template.cache_clear()
    _parsed.cache_clear()
    t0 = time.perf_counter()
    for src in sources:
        with contextlib.suppress(Exception):
            render_chat_template(src.text, msgs, TOOLS, True)
    sandbox_s = time.perf_counter() - t0

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
        f"full scan (vocabularies, {renders}+ renders): {full_s:.2f} s  "
        f"(bar < {BAR_SECONDS:.0f} s: {'PASS' if full_s < BAR_SECONDS else 'FAIL'})"
    )
    print(
        f"peer: chars/4-only scan: {chars_s:.2f} s  ratio full/chars = {full_s / chars_s:.2f} "
        "(the difference is loading and running the GGUF vocabularies)"
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
