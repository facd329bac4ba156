"""PDF page numbers: one mapping from transcript bytes to pages, carried by every span."""

from __future__ import annotations

import pytest

from arkai.core.document import Document
from arkai.core.grammar import format_page_marker
from arkai.core.receipts import check_receipt, receipt_from_dict
from arkai.core.resolve import resolve_quote
from arkai.model.evidence import Span
from arkai.ops.context import ContextEntry
from arkai.search.chunks import chunk_transcript

PDF = (
    "# Hive notes\n\n"
    f"{format_page_marker(1)}\nBees keep the hive warm.\n\n"
    f"{format_page_marker(2)}\nA queen lays eggs.\nDrones do not sting.\n\n"
    f"{format_page_marker(3)}\n\n"  # a page without text keeps its number
    f"{format_page_marker(4)}\nVarroa mites spread in late summer.\n"
).encode()


def test_page_at_follows_the_last_marker() -> None:
    doc = Document(PDF)
    assert doc.page_at(0) is None  # the title
    assert doc.page_at(PDF.index(b"Bees")) == 1
    assert doc.page_at(PDF.index(b"[p. 2]")) == 2  # the marker line is on its page
    assert doc.page_at(PDF.index(b"Drones") + 3) == 2
    assert doc.page_at(PDF.index(b"Varroa")) == 4
    assert doc.page_at(len(PDF)) == 4
    assert doc.first_page(0, PDF.index(b"Bees")) == 1  # title + page 1: starts on page 1
    assert doc.first_page(0, 5) is None


def test_no_markers_no_page() -> None:
    data = b"[00:00:01] Speaker: a line [p. 2] inside text\nplain [p. 3]\n [p. 4]\n"
    doc = Document(data)
    assert all(doc.page_at(i) is None for i in range(len(data) + 1))


def test_spans_carry_the_page_and_other_files_do_not_change() -> None:
    span = resolve_quote(Document(PDF), "Drones do not sting.").span
    assert span is not None and span.page == 2 and span.line == 8
    assert span.to_dict()["page"] == 2
    assert Span.from_dict(span.to_dict()) == span
    plain = resolve_quote(Document(b"Drones do not sting.\n"), "Drones do not sting.").span
    assert plain is not None and plain.page is None
    assert "page" not in plain.to_dict()  # omitted, not null


@pytest.mark.parametrize("bad", [0, -1, "2", 2.0, True])
def test_a_page_that_is_not_a_positive_integer_is_refused(bad: object) -> None:
    span = resolve_quote(Document(PDF), "A queen lays eggs.").span
    assert span is not None
    with pytest.raises(ValueError, match="page"):
        Span.from_dict({**span.to_dict(), "page": bad})


def test_validation_recomputes_the_page() -> None:
    doc = Document(PDF)
    match = resolve_quote(doc, "Varroa mites spread in late summer.")
    assert match.span is not None
    record = {
        "quote": "Varroa mites spread in late summer.",
        "status": match.resolution.status,
        "resolution": match.resolution.to_dict(),
        "span": match.span.to_dict(),
    }
    assert check_receipt(doc, receipt_from_dict(record)) == []
    forged = {**record, "span": {**record["span"], "page": 3}}
    assert check_receipt(doc, receipt_from_dict(forged)) == ["page 3 should be 4"]
    # A page on a transcript without markers is forged too.
    plain = Document(b"Varroa mites spread in late summer.\n")
    moved = {**record, "span": {**resolve_quote(plain, record["quote"]).span.to_dict(),  # type: ignore[union-attr]
                                "page": 1}}  # fmt: skip
    assert check_receipt(plain, receipt_from_dict(moved)) == ["page 1 should be None"]


def test_chunks_carry_the_page_they_start_on() -> None:
    chunks = chunk_transcript("c" * 16, PDF.decode(), target_words=4, max_words=6)
    assert chunks[0].page == 1  # the title is folded into page 1's window
    assert chunks[-1].page == 4 and "Varroa" in chunks[-1].text
    assert all("page" in c.to_dict() for c in chunks)
    plain = chunk_transcript("c" * 16, "one two three\n")
    assert plain[0].page is None and "page" not in plain[0].to_dict()


def test_context_citation_names_the_page() -> None:
    entry = ContextEntry(
        kind="claim", content_id="c" * 16, title="Hive notes", path="library/pdfs/Hive notes",
        text="A queen lays eggs.", start_line=6, end_line=6,
        link="library/pdfs/Hive notes/transcript.md#L6", timestamp=None, score=1.0,
        evidence_id="e" * 16, page=2,
    )  # fmt: skip
    assert entry.citation() == (
        f"— Hive notes, p. 2, evidence {'e' * 16}, library/pdfs/Hive notes/transcript.md#L6"
    )
    assert entry.to_dict()["page"] == 2
    entry.page = None
    assert "p. " not in entry.citation() and "page" not in entry.to_dict()
