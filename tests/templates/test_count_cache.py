"""Stored work between scans: a scan loads each vocabulary at most once and a repeated scan
none; a compiled template is parsed once across scans. A stored count or compiled template is
only ever used for the same vocabulary bytes / template text and the same code."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from reasonwire.errors import TemplateRenderError
from reasonwire.llamacpp.sdist import templates_dir, vocab_dir
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.templates import _count_cache, render
from reasonwire.templates._compiled_store import CompiledStore
from reasonwire.templates._count_cache import CachedVocabCounts
from reasonwire.templates.scan import TemplateSource, resolve_sources, scan
from reasonwire.wire.model import JsonObject

# test_tokenize.py: this prompt is 5 qwen2 tokens (two specials, "user", "\n", "hi")
QWEN_PROMPT = "<|im_start|>user\nhi<|im_end|>"


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts GGUF vocabulary loads by file stem."""
    seen: Counter[str] = Counter()
    real = GGUFVocabTokenizer.from_file

    def counting(path: str | Path) -> GGUFVocabTokenizer:
        seen[Path(path).stem] += 1
        return real(path)

    monkeypatch.setattr(_count_cache.GGUFVocabTokenizer, "from_file", counting)
    return seen


def test_a_scan_loads_each_vocabulary_once_and_a_repeat_loads_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loads: Counter[str]
) -> None:
    vocabs = vocab_dir()  # resolved before REASONWIRE_CACHE moves the store
    monkeypatch.setenv("REASONWIRE_CACHE", str(tmp_path))
    corpus = {p.stem: p for p in templates_dir().glob("*.jinja")}
    names = ["Qwen-Qwen3-0.6B", "Qwen-QwQ-32B", "meta-llama-Llama-3.1-8B-Instruct"]
    sources = resolve_sources([str(corpus[n]) for n in names])
    # two extra templates on the qwen2 vocabulary, under names the vocabulary map sends there
    sources += [TemplateSource(f"qwen-copy-{i}", sources[0].text, "test") for i in range(2)]

    first = scan(sources, vocab_dir=vocabs)
    assert loads == {"ggml-vocab-qwen2": 1, "ggml-vocab-llama-bpe": 1}
    assert sorted(p.name.split("-")[2] for p in (tmp_path / "token-counts").iterdir()) == [
        "llama",
        "qwen2",
    ]

    loads.clear()
    second = scan(sources, vocab_dir=vocabs)
    assert loads == {}
    assert [r.to_json() for r in second.rows] == [r.to_json() for r in first.rows]
    assert {r.tokenizer for r in second.rows} == {
        "ggml-vocab-qwen2",
        "ggml-vocab-llama-bpe",
    }


def _qwen_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "ggml-vocab-qwen2.gguf"
    shutil.copyfile(vocab_dir() / "ggml-vocab-qwen2.gguf", copy)
    return copy


def test_stored_counts_are_read_back_without_a_load(tmp_path: Path, loads: Counter[str]) -> None:
    vocab, store = _qwen_copy(tmp_path), tmp_path / "store"
    counts = CachedVocabCounts(vocab, store)
    assert counts.count(QWEN_PROMPT) == 5
    counts.save()
    again = CachedVocabCounts(vocab, store)
    assert again.count(QWEN_PROMPT) == 5
    assert (again.bos_token, again.eos_token) == (counts.bos_token, counts.eos_token)
    assert again.loads == 0
    assert again.count(QWEN_PROMPT + " there") == 6  # not stored: loads the vocabulary
    assert again.loads == 1
    assert loads["ggml-vocab-qwen2"] == 2


def test_a_changed_vocabulary_file_does_not_reuse_the_counts(
    tmp_path: Path, loads: Counter[str]
) -> None:
    vocab, store = _qwen_copy(tmp_path), tmp_path / "store"
    counts = CachedVocabCounts(vocab, store)
    counts.count(QWEN_PROMPT)
    counts.save()
    with vocab.open("ab") as fh:  # trailing bytes: same metadata, other file bytes
        fh.write(b"\0")
    changed = CachedVocabCounts(vocab, store)
    assert changed.loads == 1
    assert changed.count(QWEN_PROMPT) == 5


def test_a_store_from_other_tokenizer_code_or_corrupt_is_ignored(
    tmp_path: Path, loads: Counter[str]
) -> None:
    vocab, store = _qwen_copy(tmp_path), tmp_path / "store"
    counts = CachedVocabCounts(vocab, store)
    counts.count(QWEN_PROMPT)
    counts.save()
    [path] = store.iterdir()
    doc = orjson.loads(path.read_bytes())
    doc["identity"] = "some other tokenizer code"
    doc["counts"] = dict.fromkeys(doc["counts"], 999)
    path.write_bytes(orjson.dumps(doc))
    other = CachedVocabCounts(vocab, store)
    assert (other.loads, other.count(QWEN_PROMPT)) == (1, 5)

    path.write_bytes(b"{not json")
    corrupt = CachedVocabCounts(vocab, store)
    assert (corrupt.loads, corrupt.count(QWEN_PROMPT)) == (1, 5)


TEMPLATE = (
    "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% if extra %}!{% endif %}{% endfor %}"
)
MESSAGES: list[JsonObject] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Parse-and-generate passes over a template (the step a stored entry skips), with an
    empty store."""
    monkeypatch.setenv("REASONWIRE_CACHE", str(tmp_path))
    seen: list[str] = []
    real = render._compiled

    def counting(template: str, compat: bool) -> object:
        seen.append(template)
        return real.__wrapped__(template, compat)

    monkeypatch.setattr(render, "_compiled", counting)
    render.compile_template.cache_clear()
    render.variables_read.cache_clear()
    return seen


def _fresh_process() -> None:
    render.compile_template.cache_clear()
    render.variables_read.cache_clear()


def test_a_compiled_template_is_stored_and_reused(compiles: list[str], tmp_path: Path) -> None:
    assert render.render_chat_template(TEMPLATE, MESSAGES, extra=True) == "[user]hi!"
    assert render.variables_read(TEMPLATE) == {"messages", "extra"}
    assert len(compiles) == 1  # one pass gives the code and the variables
    _fresh_process()
    assert render.render_chat_template(TEMPLATE, MESSAGES, extra=False) == "[user]hi"
    assert render.variables_read(TEMPLATE) == {"messages", "extra"}
    assert len(compiles) == 1  # both read from the store
    assert render.render_chat_template(TEMPLATE + "?", MESSAGES) == "[user]hi?"
    assert len(compiles) == 2


def test_variables_asked_first_are_stored_too(compiles: list[str]) -> None:
    assert render.variables_read(TEMPLATE) == {"messages", "extra"}
    _fresh_process()
    assert render.variables_read(TEMPLATE) == {"messages", "extra"}
    assert len(compiles) == 1


def test_a_corrupt_or_foreign_compiled_entry_is_a_miss(compiles: list[str], tmp_path: Path) -> None:
    render.compile_template(TEMPLATE)
    render.variables_read(TEMPLATE)
    assert len(compiles) == 1
    for entry in (tmp_path / "compiled-templates").iterdir():
        entry.write_bytes(b"\x00not marshal data")
    _fresh_process()
    assert render.variables_read(TEMPLATE) == {"messages", "extra"}
    assert len(compiles) == 2
    render.compile_template.cache_clear()
    assert render.render_chat_template(TEMPLATE, MESSAGES, extra=True) == "[user]hi!"
    assert len(compiles) == 3
    # an environment module with other bytes names other entries
    other = tmp_path / "other_render.py"
    other.write_text("# another environment\n")
    assert CompiledStore(other).load_code(TEMPLATE, False) is None
    assert render._STORE.load_code(TEMPLATE, False) is not None


def test_a_failing_template_is_not_stored(compiles: list[str], tmp_path: Path) -> None:
    with pytest.raises(TemplateRenderError, match="syntax error"):
        render.compile_template("{% for %}")
    assert render.variables_read("{% for %}") == frozenset()
    assert not (tmp_path / "compiled-templates").exists()
