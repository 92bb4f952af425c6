"""The seeded trace is the method's size: about 400 tokens, with exactly one canary sentence."""

from __future__ import annotations

import pytest

from reasonwire.method.fixture import CANARY_IN_TEXT, DEFAULT_SEED, SeededTrace

SEEDS = (DEFAULT_SEED, 0, 1, 7, 42)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_trace_is_about_400_tokens_with_one_canary(seed: int) -> None:
    trace = SeededTrace.from_seed(seed)
    assert 340 <= trace.trace_tokens_estimate <= 460
    assert len(CANARY_IN_TEXT.findall(trace.trace)) == 1
    assert trace.trace.count(trace.canary) == 1


@pytest.mark.parametrize("vocab", ["qwen2", "llama-bpe"])
def test_the_trace_is_about_400_tokens_on_real_vocabularies(vocab: str) -> None:
    from reasonwire.llamacpp.sdist import vocab_dir
    from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer

    path = vocab_dir() / f"ggml-vocab-{vocab}.gguf"
    if not path.is_file():
        pytest.skip(f"{path.name} not unpacked")
    tok = GGUFVocabTokenizer.from_file(path)
    for seed in SEEDS:
        assert 350 <= tok.count(SeededTrace.from_seed(seed).trace) <= 450, seed
