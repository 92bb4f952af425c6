"""All findings of a document: the structural checks, and with the originals (``--against``)
the carriers that are not the provider's. Kept apart so that :mod:`.against` and
:mod:`.checks` do not import each other."""

from __future__ import annotations

from reasonwire.doctor import against
from reasonwire.doctor.checks import Hit, document_structure_hits, to_findings
from reasonwire.doctor.model import Document, Finding


def document_hits(doc: Document, known: against.Originals | None = None) -> list[Hit]:
    """Every hit of a document; with ``known`` (original carrier digests) also every carrier
    that is not an original, where structure found nothing already."""
    out = document_structure_hits(doc)
    if known is not None:
        seen = {h.path for h in out}
        out.extend(h for h in against.hits(doc, known) if h.path not in seen)
    return out


def findings(doc: Document, name: str, known: against.Originals | None = None) -> list[Finding]:
    """Every finding of a document, in file order."""
    return to_findings(doc, name, document_hits(doc, known))
