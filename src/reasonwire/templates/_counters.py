"""Token counters for a scan: the vocabulary that fits a template, loaded at most once per
scan, and not at all when the counts a scan needs are stored (:mod:`._count_cache`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from reasonwire.errors import ConfigError
from reasonwire.llamacpp.tokenize import CharsPerToken, TokenCounter
from reasonwire.templates._count_cache import CachedVocabCounts
from reasonwire.templates._sources import TemplateSource

# Template stem (lower-cased, searched) -> (GGUF vocabulary stem, exact family?). First match
# wins. "Exact" means the model ships that tokenizer; "approx" means the nearest vocabulary in
# the llama.cpp tree (e.g. DeepSeek V3's 129k vocabulary is not there; its V2 one is).
# Unlike reasonwire.localserver.model.vocab_for_template, which must always pick a vocabulary
# (a tiny model needs one), a template with no fitting vocabulary is counted as chars/4 here,
# and said so: a token count from an unrelated vocabulary would pass for a measurement.
VOCAB_MAP: Final[tuple[tuple[str, str, bool], ...]] = (
    (r"qwen3\.5", "ggml-vocab-qwen35", True),
    (r"distill-qwen", "ggml-vocab-qwen2", False),
    (r"qwen|qwq", "ggml-vocab-qwen2", True),
    (r"mimo", "ggml-vocab-qwen2", False),
    (r"meta-llama-llama-3", "ggml-vocab-llama-bpe", True),
    (
        r"distill-llama|hermes-.*llama-3|firefunction|functionary-medium-v3|smollm3",
        "ggml-vocab-llama-bpe",
        False,
    ),
    (r"deepseek", "ggml-vocab-deepseek-llm", False),
    (r"command-r-plus", "ggml-vocab-command-r", True),
    (r"command-r|cohere", "ggml-vocab-command-r", False),
    (r"phi-3", "ggml-vocab-phi-3", True),
)


@dataclass(frozen=True)
class Counter:
    """A token counter with the label the report shows."""

    label: str
    exact: bool
    counter: TokenCounter
    bos_token: str | None = None
    eos_token: str | None = None


class _TokenizerJSON:
    """A model's own ``tokenizer.json`` through HF tokenizers."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad files
            raise ConfigError(f"cannot load {path}: {exc}") from exc
        self.name = "tokenizer.json"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


class CounterPool:
    """Picks the fitting vocabulary for a template; each vocabulary is loaded at most once per
    scan, and only for texts whose counts are not stored under ``store_dir`` (default: the
    reasonwire cache). Call :meth:`save` at the end of a scan to store the new counts."""

    def __init__(
        self,
        vocab_dir: Path | None = None,
        *,
        force_chars: bool = False,
        store_dir: Path | None = None,
    ) -> None:
        self._vocab_dir = vocab_dir
        self._force_chars = force_chars
        self._store_dir = store_dir
        self._cache: dict[str, Counter] = {}
        self._loaded: dict[str, CachedVocabCounts | None] = {}

    @property
    def vocabulary_loads(self) -> int:
        """How many GGUF vocabularies this pool has loaded (stored counts need none)."""
        return sum(c.loads for c in self._loaded.values() if c is not None)

    def save(self) -> None:
        """Store the counts computed in this scan for the next one."""
        for counts in self._loaded.values():
            if counts is not None:
                counts.save()

    def for_source(self, src: TemplateSource) -> Counter:
        if self._force_chars:
            return Counter("chars/4", False, CharsPerToken())
        if src.tokenizer_json is not None:
            key = str(src.tokenizer_json)
            if key not in self._cache:
                self._cache[key] = Counter(
                    "tokenizer.json",
                    True,
                    _TokenizerJSON(src.tokenizer_json),
                    src.bos_token,
                    src.eos_token,
                )
            return self._cache[key]
        lowered = src.name.lower()
        for pattern, stem, exact in VOCAB_MAP:
            if re.search(pattern, lowered):
                return self._vocab(stem, exact)
        return Counter("chars/4", False, CharsPerToken())

    def _vocab(self, stem: str, exact: bool) -> Counter:
        key = f"{stem}:{exact}"
        if key in self._cache:
            return self._cache[key]
        tok = self._load(stem)
        if tok is None:
            counter = Counter("chars/4", False, CharsPerToken())
        else:
            label = stem if exact else f"{stem} (approx)"
            counter = Counter(label, exact, tok, tok.bos_token, tok.eos_token)
        self._cache[key] = counter
        return counter

    def _load(self, stem: str) -> CachedVocabCounts | None:
        if stem in self._loaded:
            return self._loaded[stem]
        vocab_dir = self._vocab_dir
        if vocab_dir is None:
            from reasonwire.llamacpp.sdist import vocab_dir as default_vocab_dir

            vocab_dir = default_vocab_dir()
        path = vocab_dir / f"{stem}.gguf"
        store_dir = self._store_dir
        if store_dir is None:
            from reasonwire.llamacpp.sdist import cache_root

            store_dir = cache_root() / "token-counts"
        tok = CachedVocabCounts(path, store_dir) if path.is_file() else None
        self._loaded[stem] = tok
        return tok
