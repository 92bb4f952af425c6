"""Token counts with a model's own vocabulary, read from a GGUF vocabulary file.

Why: a chat template's effect is measured in prompt tokens (the same signal the live harness
uses), so the offline scan must count the way the model's server would. The llama.cpp tree
ships real vocabularies as ``ggml-vocab-*.gguf`` files, together with ``.inp``/``.out`` pairs
recorded from the reference tokenizers; those pairs are the ground truth the tests check.

How: tokens, merges, token types and the pre-tokenizer name (``tokenizer.ggml.pre``) are read
from the GGUF metadata (:func:`read_gguf_metadata`, with the GGUF format's type codes).
For byte-level BPE vocabularies (``tokenizer.ggml.model == "gpt2"``)
the HF ``tokenizers`` engine is assembled from that data: a sequence of regex splits chosen by
the pre-tokenizer name (each split keeps both the matches and the text between them, as
llama.cpp does), byte-level mapping, BPE over the GGUF merges. Control and user-defined tokens
are added as whole strings and matched before any splitting, so ``<|im_start|>`` counts as one
token the way llama-server parses a rendered prompt. SentencePiece-style vocabularies
(``tokenizer.ggml.model == "llama"``) use a small score-driven merge loop written here.

:data:`CHARS_PER_TOKEN` is the fallback estimate (``tokenizer="chars/4"``) used when no
vocabulary fits a template.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import struct
import weakref
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import orjson

from reasonwire.errors import ConfigError
from reasonwire.wire.model import JSON, JsonObject

if TYPE_CHECKING:
    from tokenizers.models import BPE

CHARS_PER_TOKEN = 4

# Pre-tokenizer regex sequences by ``tokenizer.ggml.pre`` name. Each name lists the patterns
# that split the text one after another (the published tokenizer.json patterns, as llama.cpp
# applies them). Names that share a scheme point at the same tuple.
_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
_QWEN35 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
_GPT2 = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",)
_STARCODER = (r"\p{N}", *_GPT2)
_FALCON = (
    r"[\p{P}\$\+<=>\^~\|`]+",
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
    r"[0-9][0-9][0-9]",
)
_DEEPSEEK_LLM = (
    r"[\r\n]",
    r"\s?[A-Za-z"
    "\xb5\xc0-\xd6\xd8-\xf6\xf8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373"
    "\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd"
    "\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15"
    "\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d"
    "\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb"
    "\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d"
    "\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e"
    "\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
    "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
    "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
    "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
    "\U0001e900-\U0001e943]+",
    r"\s?[!-/:-~" "\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    r"\s+$",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    r"\p{N}+",
)
_DEEPSEEK_CODER = (
    r"[\r\n]",
    r"\s?\p{L}+",
    r"\s?\p{P}+",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    r"\p{N}",
)
_DEEPSEEK_V3 = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)

PRE_TOKENIZERS: dict[str, tuple[str, ...]] = {
    "llama3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "llama-v3": _LLAMA3,
    "smaug-bpe": _LLAMA3,
    "dbrx": _LLAMA3,
    "qwen2": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
    "stablelm2": _QWEN2,
    "qwen35": _QWEN35,
    "gpt-2": _GPT2,
    "mpt": _GPT2,
    "olmo": _GPT2,
    "starcoder": _STARCODER,
    "refact": _STARCODER,
    "command-r": _STARCODER,
    "smollm": _STARCODER,
    "falcon": _FALCON,
    "deepseek-llm": _DEEPSEEK_LLM,
    "deepseek-coder": _DEEPSEEK_CODER,
    "deepseek-v3": _DEEPSEEK_V3,
}

# pre-tokenizers whose whole-word vocabulary hits skip the merges (llama.cpp: ignore_merges)
_IGNORE_MERGES = frozenset({"llama3", "llama-bpe", "llama-v3"})

# GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE_*)
_TYPE_NORMAL, _TYPE_UNKNOWN, _TYPE_CONTROL, _TYPE_USER_DEFINED, _TYPE_UNUSED, _TYPE_BYTE = (
    1,
    2,
    3,
    4,
    5,
    6,
)


class TokenCounter(Protocol):
    """Anything that turns text into a token count (a vocabulary or the chars/4 estimate)."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class CharsPerToken:
    """The stated fallback: ``ceil(len(text) / 4)``, used when no vocabulary fits."""

    name: str = "chars/4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class _GGUFVocab:
    model: str
    pre: str
    tokens: list[str]
    types: list[int]
    scores: list[float]
    merges: list[str]
    bos: str | None
    eos: str | None


def _read_gguf(path: Path) -> _GGUFVocab:
    meta = read_gguf_metadata(path, prefix="tokenizer.")
    tokens = meta.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise ConfigError(f"{path} has no tokenizer.ggml.tokens")
    types = meta.get("tokenizer.ggml.token_type") or [_TYPE_NORMAL] * len(tokens)
    scores = meta.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    bos_id, eos_id = (
        meta.get("tokenizer.ggml.bos_token_id"),
        meta.get("tokenizer.ggml.eos_token_id"),
    )
    return _GGUFVocab(
        model=str(meta.get("tokenizer.ggml.model") or ""),
        pre=str(meta.get("tokenizer.ggml.pre") or "default"),
        tokens=[str(t) for t in tokens],
        types=[int(t) for t in types],
        scores=[float(x) for x in scores],
        merges=[str(m) for m in meta.get("tokenizer.ggml.merges") or []],
        bos=tokens[bos_id] if isinstance(bos_id, int) and 0 <= bos_id < len(tokens) else None,
        eos=tokens[eos_id] if isinstance(eos_id, int) and 0 <= eos_id < len(tokens) else None,
    )


_GGUF_MAGIC = 0x46554747
"""The first four bytes of a GGUF file, ``GGUF``, read as a little-endian u32."""


class _GGUFType(IntEnum):
    """The GGUF format's metadata value types (ggml ``docs/gguf.md``; the test suite checks
    them against the ``gguf`` package's own). Why not import that package: it imports numpy
    on the way, about 0.2 s of a scan's first vocabulary load, for these thirteen codes."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


def read_gguf_metadata(path: Path, *, prefix: str = "") -> JsonObject:
    """The key/value metadata of a GGUF file (keys starting with ``prefix``).

    Why not ``gguf.GGUFReader``: it maps every tensor and builds a numpy view per array
    element, about 9 s for a 150k-token vocabulary; a scan needs the metadata only, which
    this single pass over the header reads in a fraction of a second. Value type codes and
    the magic are the format's (:class:`_GGUFType`, :data:`_GGUF_MAGIC`).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read GGUF file {path}: {exc}") from exc
    scalar = {
        _GGUFType.UINT8: "<B",
        _GGUFType.INT8: "<b",
        _GGUFType.UINT16: "<H",
        _GGUFType.INT16: "<h",
        _GGUFType.UINT32: "<I",
        _GGUFType.INT32: "<i",
        _GGUFType.FLOAT32: "<f",
        _GGUFType.BOOL: "<?",
        _GGUFType.UINT64: "<Q",
        _GGUFType.INT64: "<q",
        _GGUFType.FLOAT64: "<d",
    }
    unpack = struct.unpack_from
    try:
        magic, version = unpack("<II", data, 0)
        if magic != _GGUF_MAGIC or version < 2:
            raise ConfigError(f"{path} is not a GGUF v2+ file")
        _n_tensors, n_kv = unpack("<QQ", data, 8)
        off = 24

        def read_str(o: int) -> tuple[str, int]:
            (n,) = unpack("<Q", data, o)
            return data[o + 8 : o + 8 + n].decode("utf-8", errors="replace"), o + 8 + n

        def read_value(vtype: int, o: int) -> tuple[JSON, int]:
            if vtype == _GGUFType.STRING:
                return read_str(o)
            if vtype == _GGUFType.ARRAY:
                itype, count = unpack("<IQ", data, o)
                o += 12
                if itype == _GGUFType.STRING:
                    items: list[JSON] = []
                    for _ in range(count):
                        (n,) = unpack("<Q", data, o)
                        items.append(data[o + 8 : o + 8 + n].decode("utf-8", errors="replace"))
                        o += 8 + n
                    return items, o
                fmt = scalar[_GGUFType(itype)]
                size = struct.calcsize(fmt)
                arr = list(struct.unpack_from(f"<{count}{fmt[1]}", data, o))
                return arr, o + size * count
            fmt = scalar[_GGUFType(vtype)]
            return unpack(fmt, data, o)[0], o + struct.calcsize(fmt)

        meta: JsonObject = {}
        for _ in range(n_kv):
            key, off = read_str(off)
            (vtype,) = unpack("<I", data, off)
            value, off = read_value(vtype, off + 4)
            if key.startswith(prefix):
                meta[key] = value
        return meta
    except (struct.error, ValueError, KeyError) as exc:
        raise ConfigError(f"{path}: malformed GGUF metadata ({exc})") from exc


class _Engine(Protocol):
    def encode(self, text: str, parse_special: bool) -> list[int]: ...


class _SharedBPE:
    """One built BPE model (tokens, merges, ``ignore_merges``), shared by every engine built
    from the same three while one of them is alive (see :func:`_bpe_model`)."""

    __slots__ = ("__weakref__", "bpe")

    def __init__(self, bpe: BPE) -> None:
        self.bpe = bpe


_BUILT: weakref.WeakValueDictionary[str, _SharedBPE] = weakref.WeakValueDictionary()


def _bpe_model(vocab: _GGUFVocab) -> _SharedBPE:
    """The BPE model of ``vocab``, built once for vocabularies that differ only in their
    pre-tokenizer. Why: building the merge table is most of loading a vocabulary, and
    llama.cpp ships some twice (``qwen2`` and ``qwen35``: the same tokens and merges, another
    pre-tokenizer). The BPE of a word depends on the tokens, the merges and ``ignore_merges``
    alone, so those three, digested, are the key; the pre-tokenizer and added tokens stay
    each engine's own."""
    from tokenizers import models

    ignore_merges = vocab.pre in _IGNORE_MERGES
    key = hashlib.sha256(orjson.dumps([vocab.tokens, vocab.merges, ignore_merges])).hexdigest()
    shared = _BUILT.get(key)
    if shared is None:
        ids = {tok: i for i, tok in enumerate(vocab.tokens)}
        merges = [(a, b) for a, _, b in (m.partition(" ") for m in vocab.merges)]
        shared = _SharedBPE(models.BPE(vocab=ids, merges=merges, ignore_merges=ignore_merges))
        _BUILT[key] = shared
    return shared


class _ByteLevelBPE:
    """HF ``tokenizers`` assembled from the GGUF tokens, merges and pre-tokenizer name."""

    def __init__(self, vocab: _GGUFVocab) -> None:
        try:
            from tokenizers import AddedToken, Regex, Tokenizer, pre_tokenizers
        except ImportError as exc:  # pragma: no cover - declared dependency
            raise ConfigError("the tokenizers package is needed for BPE vocabularies") from exc
        patterns = PRE_TOKENIZERS.get(vocab.pre)
        if patterns is None:
            raise ConfigError(f"no pre-tokenizer known for tokenizer.ggml.pre={vocab.pre!r}")
        self._model = _bpe_model(vocab)  # kept alive while this engine uses it
        tok = Tokenizer(self._model.bpe)
        splits: list[JSON] = [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in patterns]
        splits.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
        tok.pre_tokenizer = pre_tokenizers.Sequence(splits)
        specials = [
            AddedToken(t, special=True, normalized=False)
            for t, ty in zip(vocab.tokens, vocab.types, strict=True)
            if ty == _TYPE_CONTROL and t
        ]
        user = [
            AddedToken(t, special=False, normalized=False)
            for t, ty in zip(vocab.tokens, vocab.types, strict=True)
            if ty == _TYPE_USER_DEFINED and t
        ]
        tok.add_special_tokens(specials)
        tok.add_tokens(user)
        self._tok = tok

    def encode(self, text: str, parse_special: bool) -> list[int]:
        self._tok.encode_special_tokens = not parse_special
        return list(self._tok.encode(text, add_special_tokens=False).ids)


_SPM_SPACE = "\u2581"


class _SentencePiece:
    """Score-driven merges over characters (llama.cpp's SPM tokenizer), with byte fallback.

    A space becomes ``▁`` and a ``▁`` is put in front of the text; adjacent pieces whose join
    is in the vocabulary merge, highest score first; leftovers fall back to ``<0xXX>`` bytes.
    """

    def __init__(self, vocab: _GGUFVocab) -> None:
        self._ids = {tok: i for i, tok in enumerate(vocab.tokens)}
        self._scores = vocab.scores
        self._special = sorted(
            (
                t
                for t, ty in zip(vocab.tokens, vocab.types, strict=True)
                if ty in (_TYPE_CONTROL, _TYPE_USER_DEFINED) and t
            ),
            key=len,
            reverse=True,
        )
        self._unk = next((i for i, ty in enumerate(vocab.types) if ty == _TYPE_UNKNOWN), 0)

    def encode(self, text: str, parse_special: bool) -> list[int]:
        out: list[int] = []
        first = True
        for piece, special in _split_specials(text, self._special if parse_special else []):
            if special:
                out.append(self._ids[piece])
                continue
            out.extend(self._encode_plain(piece, prefix=first))
            first = False
        return out

    def _encode_plain(self, text: str, *, prefix: bool) -> list[int]:
        if not text:
            return []
        text = (_SPM_SPACE if prefix else "") + text.replace(" ", _SPM_SPACE)
        syms: list[str | None] = list(text)
        nxt = list(range(1, len(syms) + 1))
        prv = list(range(-1, len(syms) - 1))
        heap: list[tuple[float, int, int, str]] = []

        def push(left: int) -> None:
            right = nxt[left]
            if right >= len(syms):
                return
            a, b = syms[left], syms[right]
            if a is None or b is None:
                return
            joined = a + b
            tid = self._ids.get(joined)
            if tid is not None:
                heapq.heappush(heap, (-self._scores[tid], left, right, joined))

        for i in range(len(syms) - 1):
            push(i)
        while heap:
            _, left, right, joined = heapq.heappop(heap)
            a, b = syms[left], syms[right]
            if a is None or b is None or nxt[left] != right or a + b != joined:
                continue
            syms[left] = joined
            syms[right] = None
            nxt[left] = nxt[right]
            if nxt[right] < len(syms):
                prv[nxt[right]] = left
            if prv[left] >= 0:
                push(prv[left])
            push(left)
        out: list[int] = []
        for sym in syms:
            if sym is None:
                continue
            tid = self._ids.get(sym)
            if tid is not None:
                out.append(tid)
                continue
            for byte in sym.encode("utf-8"):
                out.append(self._ids.get(f"<0x{byte:02X}>", self._unk))
        return out


def _split_specials(text: str, specials: list[str]) -> list[tuple[str, bool]]:
    """Split ``text`` around whole special-token strings, longest match first."""
    if not specials:
        return [(text, False)]
    parts: list[tuple[str, bool]] = []
    start = i = 0
    firsts = {s[0] for s in specials}
    while i < len(text):
        if text[i] in firsts:
            hit = next((s for s in specials if text.startswith(s, i)), None)
            if hit is not None:
                if start < i:
                    parts.append((text[start:i], False))
                parts.append((hit, True))
                i += len(hit)
                start = i
                continue
        i += 1
    if start < len(text):
        parts.append((text[start:], False))
    return parts


@dataclass
class GGUFVocabTokenizer:
    """A tokenizer built from one ``ggml-vocab-*.gguf`` file.

    ``name`` is the file stem (e.g. ``ggml-vocab-qwen2``); ``pre`` the GGUF pre-tokenizer
    name; ``bos_token``/``eos_token`` the vocabulary's own, for rendering templates.
    """

    name: str
    pre: str
    bos_token: str | None
    eos_token: str | None
    _engine: _Engine = field(repr=False)

    @classmethod
    def from_file(cls, path: str | Path) -> GGUFVocabTokenizer:
        """Read a GGUF vocabulary; raises :class:`ConfigError` for a vocabulary it cannot run."""
        p = Path(path)
        vocab = _read_gguf(p)
        engine: _Engine
        if vocab.model == "gpt2":
            engine = _ByteLevelBPE(vocab)
        elif vocab.model == "llama":
            engine = _SentencePiece(vocab)
        else:
            raise ConfigError(f"{p.name}: tokenizer model {vocab.model!r} is not supported")
        return cls(
            name=p.name.removesuffix(".gguf"),
            pre=vocab.pre,
            bos_token=vocab.bos,
            eos_token=vocab.eos,
            _engine=engine,
        )

    def encode(self, text: str, *, parse_special: bool = True) -> list[int]:
        """Token ids for ``text``; special-token strings count as one token unless
        ``parse_special`` is false (llama.cpp's tokenizer tests use false)."""
        return self._engine.encode(text, parse_special)

    def count(self, text: str) -> int:
        return len(self.encode(text))


def read_vocab_tests(inp: Path, out: Path) -> list[tuple[str, list[int]]]:
    """llama.cpp's recorded tokenizer cases: ``.inp`` texts split by ``__ggml_vocab_test__``
    lines, ``.out`` one line of ids per text."""
    marker = "\n__ggml_vocab_test__\n"
    texts = inp.read_text(encoding="utf-8").split(marker)
    if texts and texts[-1].endswith("\n__ggml_vocab_test__"):
        texts[-1] = texts[-1][: -len("\n__ggml_vocab_test__")]
    ids = [[int(x) for x in line.split()] for line in out.read_text(encoding="utf-8").split("\n")]
    return list(zip(texts, ids[: len(texts)], strict=True))
