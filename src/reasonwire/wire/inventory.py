"""The controls inventory and the visible projections, as tables for people.

``python -m reasonwire.wire.inventory`` prints the Markdown kept in ``wire/CONTROLS.md``; a
test checks the two agree, so the document is the dialect objects' own data.
"""

from __future__ import annotations

from reasonwire.wire.registry import dialects
from reasonwire.wire.shape import ListOf, Nullable, Obj, OneOf, Shape, Tagged


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def controls_table() -> str:
    rows = ["| dialect | control | kind | what | source |", "|---|---|---|---|---|"]
    for d in dialects():
        for c in d.controls:
            kind = "header" if c.header else "body field"
            rows.append(f"| {d.name} | `{c.name}` | {kind} | {_cell(c.what)} | {c.source} |")
        for name, prof in d.profiles.items():
            for c in prof.controls:
                where, what = f"{d.name} ({name})", _cell(c.what)
                rows.append(f"| {where} | `{c.name}` | body field | {what} | {c.source} |")
    return "\n".join(rows)


def _paths(shape: Shape, prefix: str, out: list[str], depth: int = 0) -> None:
    if depth > 12:
        return
    if isinstance(shape, Nullable):
        _paths(shape.inner, prefix, out, depth)
    elif isinstance(shape, OneOf):
        for option in shape.options:
            _paths(option, prefix, out, depth)
    elif isinstance(shape, ListOf):
        _paths(shape.item, prefix + "[]", out, depth + 1)
    elif isinstance(shape, Tagged):
        if shape.untagged is not None:
            _paths(shape.untagged, prefix, out, depth + 1)
        for tag, variant in shape.variants.items():
            _paths(variant, f"{prefix}({shape.key}={tag})", out, depth + 1)
    elif isinstance(shape, Obj):
        for key, sub in shape.fields.items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(sub, Obj | ListOf | Tagged | Nullable | OneOf):
                before = len(out)
                _paths(sub, path, out, depth + 1)
                if len(out) == before:
                    out.append(path)
            else:
                out.append(path)


def projection_list(name: str) -> list[str]:
    """Every JSON path a governed client may see of an answer in dialect ``name``."""
    from reasonwire.wire.registry import get_dialect

    out: list[str] = []
    shape = get_dialect(name).visible_body
    if shape is not None:
        _paths(shape, "", out)
    return sorted(set(out))


def document() -> str:
    parts = [
        "# Reasoning controls and visible projections",
        "",
        "Generated from the dialect objects (`python -m reasonwire.wire.inventory`); a test",
        "keeps this file equal to their data.",
        "",
        "## Controls: removed from every governed request",
        "",
        controls_table(),
        "",
        "## Visible projection: the only paths a governed client receives of an answer",
        "",
    ]
    for d in dialects():
        paths = projection_list(d.name)
        if paths:
            parts += [f"### {d.name}", "", *(f"- `{p}`" for p in paths), ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(document())
