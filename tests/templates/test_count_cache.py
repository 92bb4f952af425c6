"""Stored token counts: a scan loads each vocabulary at most once, a repeated scan none, and a
stored count is only ever used for the same vocabulary bytes and tokenizer code."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from reasonwire.llamacpp.sdist import templates_dir, vocab_dir
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.templates import _count_cache
from reasonwire.templates._count_cache import CachedVocabCounts
from reasonwire.templates.scan import TemplateSource, resolve_sources, scan

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
