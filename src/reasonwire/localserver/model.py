"""Tiny llama-architecture GGUF models that carry a real vocabulary and a real chat template.

The weights are random (seeded), so the text a server generates is noise; what is real is
everything reasonwire measures: the chat template the server renders with ``--jinja`` and the
tokenizer that counts ``usage.prompt_tokens``. The vocabulary (tokens, merges, scores, token
types, special ids, pre-tokenizer name) is copied from one of the vocab GGUF files bundled in
the llama.cpp tree; the template is one of the bundled real templates, or any file.

Models are cached under ``cache_root()/models-<version>/`` keyed by the template text, the
vocab and :data:`WRITER_VERSION`, and written to a temporary name then renamed into place.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from numpy.typing import NDArray

from reasonwire.errors import ConfigError
from reasonwire.llamacpp import sdist
from reasonwire.localserver.ggufkv import read_kv

#: Bump when the written model changes shape, so cached files are rewritten.
WRITER_VERSION = 3

N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_FF = 128
CONTEXT_LENGTH = 32768
SEED = 20261101

CONTROL = int(gguf.TokenType.CONTROL)
USER_DEFINED = int(gguf.TokenType.USER_DEFINED)

# The tokens Qwen3 adds after the base Qwen2 BPE vocabulary, by id. Source: the
# ``added_tokens_decoder`` of Qwen/Qwen3-0.6B's ``tokenizer_config.json`` on Hugging Face
# (ids 151643-151645 are already present in the bundled qwen2 vocab). The flag is that file's
# ``special``; llama.cpp's converter marks special or ``<|...|>``-looking tokens CONTROL and the
# rest USER_DEFINED, which is what :func:`_token_type` reproduces.
QWEN3_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = (
    (151646, "<|object_ref_start|>", True),
    (151647, "<|object_ref_end|>", True),
    (151648, "<|box_start|>", True),
    (151649, "<|box_end|>", True),
    (151650, "<|quad_start|>", True),
    (151651, "<|quad_end|>", True),
    (151652, "<|vision_start|>", True),
    (151653, "<|vision_end|>", True),
    (151654, "<|vision_pad|>", True),
    (151655, "<|image_pad|>", True),
    (151656, "<|video_pad|>", True),
    (151657, "<tool_call>", False),
    (151658, "</tool_call>", False),
    (151659, "<|fim_prefix|>", False),
    (151660, "<|fim_middle|>", False),
    (151661, "<|fim_suffix|>", False),
    (151662, "<|fim_pad|>", False),
    (151663, "<|repo_name|>", False),
    (151664, "<|file_sep|>", False),
    (151665, "<tool_response>", False),
    (151666, "</tool_response>", False),
    (151667, "<think>", False),
    (151668, "</think>", False),
)

_PLACEHOLDER = re.compile(rb"\[PAD\d+\]|<\|reserved_special_token_\d+\|>")
# Special-looking literals in a template: ``<|...|>`` and DeepSeek's full-width ``<｜...｜>``.
_TEMPLATE_TAG = re.compile(r"<\|[^|<>\s'\"]{1,48}\|>|<｜[^｜<>\s'\"]{1,48}｜>")


@dataclass(frozen=True)
class VocabChoice:
    """Which bundled vocab fits a template, and whether the fit is exact."""

    vocab: str
    exact: bool
    note: str


# (template-stem pattern, vocab name, exact, note). First match wins.
_VOCAB_RULES: tuple[tuple[str, str, bool, str], ...] = (
    (r"^(Qwen-Qwen3-|Qwen-QwQ|Qwen3-Coder)", "qwen2", True, "Qwen2 BPE + Qwen3 added tokens"),
    (r"^Qwen-Qwen2\.5", "qwen2", True, "Qwen2 BPE; its added tokens are a prefix of Qwen3's"),
    (r"^Qwen3\.5", "qwen35", False, "bundled qwen35 pre-tokenizer with Qwen3 added tokens"),
    (r"R1-Distill-Qwen", "qwen2", False, "Qwen2 BPE; DeepSeek tags added into placeholders"),
    (r"R1-Distill-Llama", "llama-bpe", False, "Llama 3 BPE; DeepSeek tags into reserved slots"),
    (r"(?i)deepseek", "deepseek-llm", False, "DeepSeek LLM BPE; V3+ tags into placeholders"),
    (
        r"^(meta-llama-Llama-3|NousResearch-Hermes-.*Llama-3|fireworks-ai-llama-3|meetkai)",
        "llama-bpe",
        True,
        "Llama 3 BPE",
    ),
    (r"^openai-gpt-oss", "llama-bpe", False, "o200k not bundled; harmony tags into reserved"),
    (r"^google-gemma-4", "gemma-4", True, "Gemma 4 vocab"),
    (r"^google-gemma", "gemma-4", False, "Gemma 4 vocab for an older Gemma template"),
    (r"^microsoft-Phi-3", "phi-3", True, "Phi-3 SPM vocab"),
    (r"^(CohereForAI|Cohere)", "command-r", True, "Command-R vocab"),
)
_DEFAULT_VOCAB = VocabChoice("qwen2", False, "no bundled vocab for this family; Qwen2 BPE")


def vocab_for_template(template_name: str) -> VocabChoice:
    """The best bundled vocab for a template stem (e.g. ``Qwen-Qwen3-0.6B``)."""
    for pattern, vocab, exact, note in _VOCAB_RULES:
        if re.search(pattern, template_name):
            return VocabChoice(vocab, exact, note)
    return _DEFAULT_VOCAB


def template_names(version: str = sdist.LLAMA_CPP_PYTHON_VERSION) -> list[str]:
    """The stems of the bundled real chat templates."""
    return sorted(p.stem for p in sdist.templates_dir(version).glob("*.jinja"))


def _file_or_bundled(name_or_path: str, bundled: Path) -> Path | None:
    """``name_or_path`` when it names a file, else the ``bundled`` one when it exists."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    return bundled if bundled.is_file() else None


def resolve_template(name_or_path: str, version: str = sdist.LLAMA_CPP_PYTHON_VERSION) -> Path:
    """A bundled template stem, or a path to a template file."""
    found = _file_or_bundled(name_or_path, sdist.templates_dir(version) / f"{name_or_path}.jinja")
    if found is not None:
        return found
    raise ConfigError(
        f"unknown template {name_or_path!r}: not a file and not one of the bundled templates "
        f"({', '.join(template_names(version)[:8])}, ...; `reasonwire localserver model --help`)"
    )


def resolve_vocab(name_or_path: str, version: str = sdist.LLAMA_CPP_PYTHON_VERSION) -> Path:
    """A bundled vocab name (``qwen2``, ``llama-bpe``...) or a path to a vocab GGUF."""
    found = _file_or_bundled(
        name_or_path, sdist.vocab_dir(version) / f"ggml-vocab-{name_or_path}.gguf"
    )
    if found is not None:
        return found
    names = sorted(
        p.name.removeprefix("ggml-vocab-").removesuffix(".gguf")
        for p in sdist.vocab_dir(version).glob("ggml-vocab-*.gguf")
    )
    raise ConfigError(f"unknown vocab {name_or_path!r}: not a file nor one of {', '.join(names)}")


def model_path(
    template: str,
    vocab: str | None = None,
    version: str = sdist.LLAMA_CPP_PYTHON_VERSION,
    *,
    quiet: bool = False,
) -> Path:
    """The cached tiny model for ``template`` (stem or path) and ``vocab``, written if absent.

    ``vocab`` defaults to :func:`vocab_for_template` of the template's stem.
    """
    template_file = resolve_template(template, version)
    vocab_name = vocab or vocab_for_template(template_file.stem).vocab
    vocab_file = resolve_vocab(vocab_name, version)
    text = template_file.read_text(encoding="utf-8")
    key = hashlib.sha256(
        f"{WRITER_VERSION}\0{version}\0{vocab_file.name}\0{vocab_file.stat().st_size}\0{text}".encode()
    ).hexdigest()[:12]
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", template_file.stem)
    prefix = f"{stem}--{vocab_file.stem}--"
    out = sdist.cache_root() / f"models-{version}" / f"{prefix}w{WRITER_VERSION}-{key}.gguf"
    if out.is_file():
        return out
    if not quiet:
        print(f"reasonwire: writing tiny model {out.name} ...", file=sys.stderr, flush=True)
    write_tiny_model(out, template_text=text, vocab_file=vocab_file)
    for stale in out.parent.glob(f"{prefix}*.gguf"):  # written by an older writer version
        if not stale.name.startswith(f"{prefix}w{WRITER_VERSION}-"):
            stale.unlink(missing_ok=True)
    return out


def write_tiny_model(out: Path, *, template_text: str, vocab_file: Path) -> Path:
    """Write a 2-layer llama GGUF with ``vocab_file``'s tokenizer and ``template_text``.

    Written to a temporary file and renamed, so a reader never sees a partial model.
    """
    meta = read_kv(vocab_file)
    tokens = list(meta["tokenizer.ggml.tokens"].value)
    types = list(meta["tokenizer.ggml.token_type"].value)
    pre = meta.get("tokenizer.ggml.pre")
    _fill_added_tokens(tokens, types, str(pre.value) if pre else "", template_text)
    n_vocab = len(tokens)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    writer = gguf.GGUFWriter(tmp, "llama")
    writer.add_name(f"reasonwire-tiny-{vocab_file.stem}")
    writer.add_block_count(N_LAYER)
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(N_EMBD)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    writer.add_tokenizer_model(str(meta["tokenizer.ggml.model"].value))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    for key, kv in meta.items():
        if key.startswith("tokenizer.") and key not in _WRITTEN_KEYS:
            writer.add_key_value(key, kv.value, kv.vtype, sub_type=kv.sub_type)
    writer.add_chat_template(template_text)

    eos = meta.get("tokenizer.ggml.eos_token_id")
    for name, tensor in _weights(n_vocab, int(eos.value) if eos else None):
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return out


_WRITTEN_KEYS = frozenset(
    {
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.token_type",
        "tokenizer.chat_template",
        "tokenizer.chat_templates",
        "tokenizer.chat_template.tool_use",
        "tokenizer.chat_template.rag",
    }
)


def _token_type(text: str, special: bool) -> int:
    """llama.cpp's converter rule: special or ``<|..|>``-looking -> CONTROL, else USER_DEFINED."""
    looks_special = (text.startswith("<|") and text.endswith("|>")) or (
        text.startswith("<｜") and text.endswith("｜>")
    )
    return CONTROL if special or looks_special else USER_DEFINED


def _fill_added_tokens(
    tokens: list[bytes], types: list[int], pre_name: str, template_text: str
) -> None:
    """Put missing special tokens into the vocab's placeholder slots, in place.

    For the Qwen2 BPE vocab the Qwen3 added tokens go to their real ids. Then any
    special-looking tag the template uses (``<|start|>``, ``<｜User｜>``...) that is still
    missing goes into the next free placeholder: an approximation (the id differs from the real
    model's) that keeps each tag one token, as it is for the real model.
    """
    if pre_name in {"qwen2", "qwen35"} and len(tokens) > QWEN3_ADDED_TOKENS[-1][0]:
        for idx, text, special in QWEN3_ADDED_TOKENS:
            if _PLACEHOLDER.fullmatch(tokens[idx]):
                tokens[idx] = text.encode()
                types[idx] = _token_type(text, special)
    present = set(tokens)
    free = (i for i, t in enumerate(tokens) if _PLACEHOLDER.fullmatch(t))
    for tag in dict.fromkeys(_TEMPLATE_TAG.findall(template_text)):
        raw = tag.encode()
        if raw in present:
            continue
        slot = next(free, None)
        if slot is None:
            break
        tokens[slot] = raw
        types[slot] = CONTROL
        present.add(raw)


def _weights(
    n_vocab: int, eos_id: int | None
) -> list[tuple[str, NDArray[np.float16 | np.float32]]]:
    """Seeded random weights; the output head is tied to the token embedding (no output.weight).

    The model is made to answer with end-of-sequence first: embedding dimension 0 is a
    constant 1 for every token, so it dominates the normed hidden state, and the EOS row has
    50 there, so its logit beats every other by ~50x. Why: noise tokens break the servers'
    output parsers for some templates (gpt-oss's harmony parser answers HTTP 500), while an
    empty answer parses everywhere. ``ignore_eos: true`` (a llama.cpp request field) still gets
    noise tokens when a test needs generated text.

    Note numpy shapes are the reverse of GGML's: ``token_embd`` is (n_vocab, n_embd).
    """
    rng = np.random.default_rng(SEED)

    def mat(rows: int, cols: int) -> NDArray[np.float16 | np.float32]:
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    ones = np.ones(N_EMBD, dtype=np.float32)
    embd = mat(n_vocab, N_EMBD)
    embd[:, 0] = 1.0
    if eos_id is not None and 0 <= eos_id < n_vocab:
        embd[eos_id, 0] = 50.0
    out: list[tuple[str, NDArray[np.float16 | np.float32]]] = [
        ("token_embd.weight", embd),
        ("output_norm.weight", ones),
    ]
    for layer in range(N_LAYER):
        p = f"blk.{layer}."
        out += [
            (p + "attn_norm.weight", ones),
            (p + "attn_q.weight", mat(N_EMBD, N_EMBD)),
            (p + "attn_k.weight", mat(N_EMBD, N_EMBD)),
            (p + "attn_v.weight", mat(N_EMBD, N_EMBD)),
            (p + "attn_output.weight", mat(N_EMBD, N_EMBD)),
            (p + "ffn_norm.weight", ones),
            (p + "ffn_gate.weight", mat(N_FF, N_EMBD)),
            (p + "ffn_up.weight", mat(N_FF, N_EMBD)),
            (p + "ffn_down.weight", mat(N_EMBD, N_FF)),
        ]
    return out
