"""``<think>...</think>`` blocks written inline in visible content, cut out.

Open reasoning models served without a reasoning parser (vLLM, SGLang, llama.cpp with
reasoning format none, Ollama raw) put their reasoning in ``content`` between these tags
(WIRE.md, "hidden reasoning ... besides the dialect's documented fields"). A governed client
must not see it. :func:`cut_think` handles a whole text; :class:`ThinkCutter` a stream of
fragments in which a tag may be split across chunks: it holds back only a tail that could
still become a tag, never more than the tag's length.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


def cut_think(path: str, text: str) -> str:
    """``text`` without its ``<think>`` blocks (an unclosed block runs to the end)."""
    if OPEN not in text:
        return text
    cutter = ThinkCutter()
    return cutter.feed(text) + cutter.flush()


class ThinkCutter:
    """Incremental cut: ``feed`` fragments in order, ``flush`` at the end."""

    __slots__ = ("_held", "_inside")

    def __init__(self) -> None:
        self._inside = False
        self._held = ""

    def feed(self, fragment: str) -> str:
        text = self._held + fragment
        self._held = ""
        out: list[str] = []
        while text:
            tag = CLOSE if self._inside else OPEN
            at = text.find(tag)
            if at >= 0:
                if not self._inside:
                    out.append(text[:at])
                text = text[at + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_tail(text, tag)
            if not self._inside:
                out.append(text[: len(text) - keep])
            self._held = text[len(text) - keep :]
            break
        return "".join(out)

    def flush(self) -> str:
        """What was held back, when it turned out not to be a tag (outside a block)."""
        held, self._held = self._held, ""
        return "" if self._inside else held


def _partial_tail(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class PathCutters:
    """One :class:`ThinkCutter` per JSON path of a stream (one per choice's content)."""

    __slots__ = ("_cutters",)

    def __init__(self) -> None:
        self._cutters: dict[str, ThinkCutter] = {}

    def __call__(self, path: str, text: str) -> str:
        cutter = self._cutters.get(path)
        if cutter is None:
            cutter = self._cutters[path] = ThinkCutter()
        return cutter.feed(text)


__all__ = ["CLOSE", "OPEN", "PathCutters", "ThinkCutter", "cut_think"]
