"""Token counts of a GGUF vocabulary, kept on disk so a repeated scan does not load it again.

Why: loading a vocabulary (reading its GGUF metadata and assembling the BPE engine) costs
about a second per vocabulary, more than rendering every template of the corpus; a scan of
the corpus loads five or six. The texts a scan counts are the same from one run to the next
(the fixture is seeded), so their counts are stored and the vocabulary is only loaded when a
text has no stored count.

Never a wrong count: a stored count is keyed by the SHA-256 of the text it counts, in a file
keyed by the SHA-256 of the vocabulary file's bytes, of the tokenizer module's source and of
the ``tokenizers`` engine version; any change to one of them is a different file, and a file
that cannot be read is ignored (the vocabulary is loaded and the counts computed afresh).
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import orjson

from reasonwire.llamacpp import tokenize as _tokenize_module
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer

# bumped when the file layout below changes
_FORMAT = "reasonwire-token-counts-1"


@lru_cache(maxsize=1)
def _code_identity() -> str:
    """What, besides the vocabulary file, decides a count: the tokenizer code and engine."""
    import tokenizers

    source = Path(_tokenize_module.__file__ or "").read_bytes()
    return f"{_FORMAT}:{hashlib.sha256(source).hexdigest()}:{tokenizers.__version__}"


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CachedVocabCounts:
    """A :class:`~reasonwire.llamacpp.tokenize.TokenCounter` over one GGUF vocabulary whose
    counts come from the disk store when present; the vocabulary is loaded on the first text
    the store does not hold (``loads`` counts those loads: 0 or 1)."""

    def __init__(self, vocab: Path, store_dir: Path) -> None:
        data = vocab.read_bytes()
        key = hashlib.sha256(data + b"\0" + _code_identity().encode()).hexdigest()
        self._vocab = vocab
        self._file = store_dir / f"{vocab.stem}-{key[:40]}.json"
        self.name = vocab.stem
        self.loads = 0
        self._tok: GGUFVocabTokenizer | None = None
        self._counts: dict[str, int] = {}
        self._dirty = False
        stored = self._read()
        if stored is None:
            tok = self._tokenizer()  # raises ConfigError for a vocabulary it cannot run
            self.bos_token, self.eos_token = tok.bos_token, tok.eos_token
        else:
            self.bos_token, self.eos_token, self._counts = stored

    def _read(self) -> tuple[str | None, str | None, dict[str, int]] | None:
        try:
            doc = orjson.loads(self._file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(doc, dict) or doc.get("identity") != _code_identity():
            return None
        bos, eos, counts = doc.get("bos"), doc.get("eos"), doc.get("counts")
        if not isinstance(counts, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in counts.values()
        ):
            return None
        if not (bos is None or isinstance(bos, str)) or not (eos is None or isinstance(eos, str)):
            return None
        return bos, eos, {str(k): int(v) for k, v in counts.items()}

    def _tokenizer(self) -> GGUFVocabTokenizer:
        if self._tok is None:
            self._tok = GGUFVocabTokenizer.from_file(self._vocab)
            self.loads += 1
        return self._tok

    def count(self, text: str) -> int:
        key = _text_key(text)
        got = self._counts.get(key)
        if got is None:
            got = self._tokenizer().count(text)
            self._counts[key] = got
            self._dirty = True
        return got

    def save(self) -> None:
        """Write the counts (atomically: a concurrent reader sees the old file or the new
        one). A store that cannot be written only costs the next scan a vocabulary load."""
        if not self._dirty:
            return
        doc = {
            "identity": _code_identity(),
            "vocab": self._vocab.name,
            "bos": self.bos_token,
            "eos": self.eos_token,
            "counts": self._counts,
        }
        tmp = self._file.with_name(f"{self._file.name}.tmp-{os.getpid()}")
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))
            tmp.replace(self._file)
        except OSError:
            tmp.unlink(missing_ok=True)
            return
        self._dirty = False
