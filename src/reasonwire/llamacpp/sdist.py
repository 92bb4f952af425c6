"""The llama.cpp source tree, fetched once through pip and cached.

The ``llama-cpp-python`` source distribution on PyPI carries the full llama.cpp tree under
``vendor/llama.cpp``: the server sources, the real chat templates under ``models/templates``
and real vocabularies as GGUF files under ``models``. pip is the only network client used, so
this works wherever the package registry is reachable, and never again once cached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import platformdirs

from reasonwire.errors import ConfigError

LLAMA_CPP_PYTHON_VERSION = "0.3.36"


def cache_root() -> Path:
    """Where reasonwire caches builds and downloads (``REASONWIRE_CACHE`` overrides)."""
    env = os.environ.get("REASONWIRE_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("reasonwire"))


def _version_dir(version: str) -> Path:
    return cache_root() / f"llama-cpp-python-{version}"


def llama_tree(version: str = LLAMA_CPP_PYTHON_VERSION, *, quiet: bool = False) -> Path:
    """The extracted ``vendor/llama.cpp`` directory, downloading and unpacking on first use.

    Extraction goes to a temporary directory that is renamed into place, so an interrupted
    run never leaves a half-extracted tree that later runs would trust.
    """
    base = _version_dir(version)
    tree = base / "src" / f"llama_cpp_python-{version}" / "vendor" / "llama.cpp"
    if (tree / "models" / "templates").is_dir():
        return tree
    base.mkdir(parents=True, exist_ok=True)
    archive = _download(version, base / "dl", quiet=quiet)
    tmp = base / f"src.tmp-{os.getpid()}"
    with tarfile.open(archive) as tf:
        tf.extractall(tmp, filter="data")
    extracted = next(tmp.iterdir())
    final = base / "src"
    final.mkdir(exist_ok=True)
    target = final / f"llama_cpp_python-{version}"
    if not target.exists():
        extracted.rename(target)
    _rmtree(tmp)
    if not (tree / "models" / "templates").is_dir():
        raise ConfigError(f"llama-cpp-python {version} sdist has no vendor/llama.cpp tree")
    return tree


def _download(version: str, dest: Path, *, quiet: bool) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    found = sorted(dest.glob(f"llama_cpp_python-{version}.tar.gz"))
    if found:
        return found[0]
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--disable-pip-version-check",
        "-d",
        str(dest),
        f"llama-cpp-python=={version}",
    ]
    if not quiet:
        print(
            f"reasonwire: fetching llama-cpp-python=={version} source through pip ...",
            file=sys.stderr,
            flush=True,
        )
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(dest.glob(f"llama_cpp_python-{version}.tar.gz"))
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ConfigError(
            f"could not download llama-cpp-python=={version} with pip: {' | '.join(tail)}"
        )
    return found[0]


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def templates_dir(version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    """The directory of the bundled real chat templates (``*.jinja``)."""
    return llama_tree(version) / "models" / "templates"


def vocab_dir(version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    """The directory of the bundled real vocabularies (``ggml-vocab-*.gguf``)."""
    return llama_tree(version) / "models"
