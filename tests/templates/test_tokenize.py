"""The GGUF-vocabulary tokenizer against llama.cpp's recorded reference ids."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reasonwire.errors import ConfigError
from reasonwire.llamacpp.sdist import vocab_dir
from reasonwire.llamacpp.tokenize import (
    _GGUF_MAGIC,
    GGUFVocabTokenizer,
    _ByteLevelBPE,
    _GGUFType,
    _read_gguf,
    read_vocab_tests,
)

VOCABS = sorted(p for p in vocab_dir().glob("ggml-vocab-*.gguf") if Path(f"{p}.out").is_file())
SUPPORTED = [p for p in VOCABS if p.stem not in {"ggml-vocab-bert-bge", "ggml-vocab-gemma-4"}]


@pytest.mark.parametrize("path", SUPPORTED, ids=lambda p: p.stem)
def test_encode_equals_llama_cpp_recorded_ids(path: Path) -> None:
    tok = GGUFVocabTokenizer.from_file(path)
    cases = read_vocab_tests(Path(f"{path}.inp"), Path(f"{path}.out"))
    assert len(cases) >= 40
    wrong = [
        (text, want, got)
        for text, want in cases
        if (got := tok.encode(text, parse_special=False)) != want
    ]
    assert wrong == []


def test_the_scan_vocabularies_are_all_validated() -> None:
    names = {p.stem for p in SUPPORTED}
    assert {
        "ggml-vocab-qwen2",
        "ggml-vocab-qwen35",
        "ggml-vocab-llama-bpe",
        "ggml-vocab-deepseek-llm",
        "ggml-vocab-command-r",
        "ggml-vocab-phi-3",
    } <= names


def test_special_tokens_are_whole_strings() -> None:
    tok = GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-qwen2.gguf")
    plain = tok.encode("<|im_start|>user\nhi<|im_end|>", parse_special=False)
    parsed = tok.encode("<|im_start|>user\nhi<|im_end|>")
    assert len(parsed) == 5
    assert len(plain) > len(parsed)
    assert tok.count("<|im_start|>") == 1


def test_unsupported_vocabulary_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="not supported"):
        GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-bert-bge.gguf")


def test_not_a_gguf_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"not a gguf file at all, not at all")
    with pytest.raises(ConfigError):
        GGUFVocabTokenizer.from_file(bad)


def _model_of(tok: GGUFVocabTokenizer) -> object:
    assert isinstance(tok._engine, _ByteLevelBPE)
    return tok._engine._model


def test_vocabularies_with_the_same_tokens_and_merges_share_one_model() -> None:
    """llama.cpp ships qwen2 and qwen35 with the same tokens and merges (another pre-tokenizer):
    the second is built on the first's BPE model, and each still gives llama.cpp's recorded
    ids for its own recordings."""
    qwen2 = GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-qwen2.gguf")
    qwen35 = GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-qwen35.gguf")
    assert _model_of(qwen35) is _model_of(qwen2)
    for tok, stem in ((qwen2, "ggml-vocab-qwen2"), (qwen35, "ggml-vocab-qwen35")):
        path = vocab_dir() / f"{stem}.gguf"
        cases = read_vocab_tests(Path(f"{path}.inp"), Path(f"{path}.out"))
        wrong = [t for t, want in cases if tok.encode(t, parse_special=False) != want]
        assert wrong == [], stem


def test_other_merges_or_merge_rule_build_their_own_model() -> None:
    qwen2 = GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-qwen2.gguf")
    vocab = _read_gguf(vocab_dir() / "ggml-vocab-qwen2.gguf")
    no_merges = _ByteLevelBPE(replace(vocab, merges=[]))
    assert no_merges._model is not _model_of(qwen2)
    # BPE without merges: every byte of a plain word is its own token
    assert len(no_merges.encode("hello", parse_special=True)) == 5
    assert len(qwen2.encode("hello")) < 5
    one_less = _ByteLevelBPE(replace(vocab, merges=vocab.merges[:-1]))
    assert one_less._model is not _model_of(qwen2)
    # llama3's pre-tokenizer sets ignore_merges (a whole-word vocabulary hit skips the merges)
    ignoring = _ByteLevelBPE(replace(vocab, pre="llama3"))
    assert ignoring._model is not _model_of(qwen2)


def test_the_gguf_codes_are_the_gguf_packages() -> None:
    import gguf

    assert _GGUF_MAGIC == gguf.GGUF_MAGIC
    assert {t.name: int(t) for t in _GGUFType} == {t.name: int(t) for t in gguf.GGUFValueType}


def test_reading_a_vocabulary_imports_no_numpy() -> None:
    """The scan's first vocabulary load does not pay for numpy (the gguf package imports it)."""
    code = (
        "import sys; from pathlib import Path; "
        "from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer; "
        f"GGUFVocabTokenizer.from_file(Path({str(vocab_dir() / 'ggml-vocab-phi-3.gguf')!r})); "
        "print(sorted(m for m in ('numpy', 'gguf') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
