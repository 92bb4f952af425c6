"""Which templates a scan reads: the llama.cpp corpus, files, model dirs, HF cache ids."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reasonwire.errors import ConfigError
from reasonwire.wire.model import JSON


@dataclass(frozen=True)
class TemplateSource:
    """One template to scan: its name, text, origin and (optionally) its own tokenizer."""

    name: str
    text: str
    origin: str
    tokenizer_json: Path | None = None
    """The template's own tokenizer (a local model folder's); None: counted with the
    vocabulary its name maps to."""
    bos_token: str | None = None
    eos_token: str | None = None


def corpus_sources() -> list[TemplateSource]:
    """The llama.cpp template corpus (the 70 ``.jinja`` files of the pinned sdist)."""
    from reasonwire.llamacpp.sdist import templates_dir

    return [_jinja_source(p) for p in sorted(templates_dir().glob("*.jinja"))]


def resolve_sources(specs: Sequence[str]) -> list[TemplateSource]:
    """Turn CLI arguments into templates; no argument means the llama.cpp corpus.

    Accepted: a ``.jinja`` file, a HF ``tokenizer_config.json``, a directory (a HF model
    directory, or a folder of ``.jinja`` files), or a model id in the local HF cache
    (``org/name``). Anything else is a :class:`ConfigError` naming the argument.
    """
    if not specs:
        return corpus_sources()
    out: list[TemplateSource] = []
    for spec in specs:
        path = Path(spec).expanduser()
        if path.is_file():
            out.extend(_file_sources(path))
        elif path.is_dir():
            out.extend(_dir_sources(path))
        elif re.fullmatch(r"[\w.-]+/[\w.-]+", spec):
            out.extend(_dir_sources(_hf_cache_snapshot(spec), name=spec.replace("/", "-")))
        else:
            raise ConfigError(f"{spec}: not a .jinja file, tokenizer_config.json, dir or model id")
    return out


def _jinja_source(path: Path, name: str | None = None) -> TemplateSource:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read template {path}: {exc}") from exc
    if name is None:
        name = path.parent.name if path.stem == "chat_template" else path.stem
    tok = path.parent / "tokenizer.json"
    return TemplateSource(name, text, str(path), tok if tok.is_file() else None)


def _file_sources(path: Path, name: str | None = None) -> list[TemplateSource]:
    if path.suffix != ".json":
        return [_jinja_source(path, name)]
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    base = name or (path.parent.name if path.name == "tokenizer_config.json" else path.stem)
    chat = cfg.get("chat_template") if isinstance(cfg, dict) else None
    named: list[tuple[str, str]] = []
    if isinstance(chat, str):
        named = [(base, chat)]
    elif isinstance(chat, list):
        for item in chat:
            if isinstance(item, dict) and isinstance(item.get("template"), str):
                sub = str(item.get("name", "default"))
                named.append((base if sub == "default" else f"{base}-{sub}", item["template"]))
    if not named:
        raise ConfigError(f"{path}: no chat_template in this file")
    tok = path.parent / "tokenizer.json"
    bos, eos = _special(cfg.get("bos_token")), _special(cfg.get("eos_token"))
    return [
        TemplateSource(n, t, str(path), tok if tok.is_file() else None, bos, eos) for n, t in named
    ]


def _special(value: JSON) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _dir_sources(path: Path, name: str | None = None) -> list[TemplateSource]:
    jinja = path / "chat_template.jinja"
    cfg = path / "tokenizer_config.json"
    if jinja.is_file():
        src = _jinja_source(jinja, name or path.name)
        if cfg.is_file():  # take bos/eos from the config when present
            try:
                data = json.loads(cfg.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                data = {}
            src = TemplateSource(
                src.name,
                src.text,
                src.origin,
                src.tokenizer_json,
                _special(data.get("bos_token")),
                _special(data.get("eos_token")),
            )
        return [src]
    if cfg.is_file():
        return _file_sources(cfg, name or path.name)
    files = sorted(path.glob("*.jinja"))
    if not files:
        raise ConfigError(f"{path}: no chat_template.jinja, tokenizer_config.json or .jinja")
    return [_jinja_source(p) for p in files]


def _hf_cache_snapshot(model_id: str) -> Path:
    roots = []
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]) / "hub")
    roots.append(Path.home() / ".cache" / "huggingface" / "hub")
    folder = "models--" + model_id.replace("/", "--")
    for root in roots:
        snaps = sorted(
            (root / folder / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for snap in snaps:
            if (snap / "chat_template.jinja").is_file() or (
                snap / "tokenizer_config.json"
            ).is_file():
                return snap
    raise ConfigError(f"{model_id}: not in the local Hugging Face cache (looked in {roots[-1]})")
