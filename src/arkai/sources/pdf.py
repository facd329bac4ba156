"""PDF documents (a local file or an http(s) URL) → a ``pdfs`` item, via pypdf's text layer.

``transcript.md`` is ``# Title`` (the PDF's ``/Title``, else the file name), a blank line, then
per page a marker line ``[p. N]`` followed by the page's text lines, one transcript line per
extracted line: whitespace collapsed, empty lines dropped, nothing else changed (no de-hyphenation
or re-flowing, so a quote maps to the lines it came from). A blank line separates pages; a page
without text keeps its marker, so page numbers stay those of the PDF.

A PDF that needs a password, one without any text (a scan: OCR is not supported) and one pypdf
cannot read are :class:`SourceFormatError` naming the file or URL. ``source.pdf`` keeps the
bytes verbatim; identity follows the article rules (final URL, else ``file:sha256:<hex>``).
"""

from __future__ import annotations

import io
import logging
import re
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from arkai.adapters.fs import read_input_file
from arkai.adapters.http import fetch
from arkai.core.grammar import format_page_marker
from arkai.core.hashing import digest, sha256_hex
from arkai.errors import SourceFormatError
from arkai.formats.cue import clean_text
from arkai.sources.article import canonical_url, fetch_options
from arkai.sources.base import Acquired, AddOptions
from arkai.sources.route import is_url

CONTENT_TYPE = "pdfs"
PDF_MAGIC = b"%PDF-"
ACCEPT = "application/pdf,*/*;q=0.5"
_PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
# Producers that put the conversion tool, not the document's title, into /Title.
_TITLE_JUNK_RE = re.compile(r"^(?:microsoft (?:word|powerpoint|excel) - |untitled\b)", re.I)

logging.getLogger("pypdf").setLevel(logging.ERROR)


def looks_like_pdf(head: bytes) -> bool:
    """True when the PDF header appears in the first KiB (where readers look for it)."""
    return PDF_MAGIC in head[:1024]


def _title_from_name(name: str) -> str:
    stem = PurePosixPath(name).stem if name else ""
    text = re.sub(r"[_\-\s]+", " ", unquote(stem)).strip()
    return text[:1].upper() + text[1:] if text else "Untitled"


def _meta_text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return clean_text(value) or None


def _info(reader: PdfReader) -> dict[str, Any]:
    """Title, author and creation date from the document information, where readable."""
    try:
        info = reader.metadata
    except (PyPdfError, ValueError, TypeError, KeyError):
        info = None
    if info is None:
        return {}
    out: dict[str, Any] = {}
    try:
        title = _meta_text(info.title)
        if title and not _TITLE_JUNK_RE.match(title):
            out["title"] = title
        elif title:
            rest = _TITLE_JUNK_RE.sub("", title).strip()
            if rest:
                out["title"] = rest
        out["author"] = _meta_text(info.author)
    except (PyPdfError, ValueError, TypeError, KeyError):
        pass
    try:
        created = info.creation_date
    except (PyPdfError, ValueError, TypeError, KeyError):
        created = None
    if isinstance(created, datetime):
        out["published"] = created.date().isoformat()
    return out


def _open(ref: str, data: bytes) -> PdfReader:
    if not looks_like_pdf(data[:1024]):
        raise SourceFormatError(f"{ref}: not a PDF (no %PDF- header)")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                unlocked = reader.decrypt("")
            except (PyPdfError, NotImplementedError, ValueError) as exc:
                raise SourceFormatError(
                    f"{ref}: encrypted PDF that cannot be opened ({exc})"
                ) from None
            if not unlocked:
                raise SourceFormatError(
                    f"{ref}: encrypted PDF; it needs a password",
                    hint="save an unprotected copy and add that",
                )
        _ = len(reader.pages)
    except SourceFormatError:
        raise
    except Exception as exc:  # pypdf raises many kinds on broken files
        raise SourceFormatError(
            f"{ref}: not a readable PDF ({type(exc).__name__}: {exc})"
        ) from None
    return reader


def page_lines(text: str) -> list[str]:
    """A page's extracted text as transcript lines (whitespace collapsed, empty lines dropped)."""
    lines = (clean_text(line) for line in re.split(r"\r\n|\r|\n", text))
    return [line for line in lines if line]


def render_pdf(title: str, pages: list[list[str]]) -> str:
    """``transcript.md`` text for ``pages`` (each a list of lines)."""
    blocks = [f"# {clean_text(title) or 'Untitled'}"]
    for n, lines in enumerate(pages, start=1):
        blocks.append("\n".join([format_page_marker(n), *lines]))
    return "\n\n".join(blocks) + "\n"


def build_pdf(ref: str, data: bytes, *, url: str | None, opts: AddOptions) -> Acquired:
    """The item for PDF bytes ``data`` (``url`` = the final fetched URL, None for a file)."""
    reader = _open(ref, data)
    pages: list[list[str]] = []
    unreadable: list[int] = []
    for n, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception:  # one broken page must not lose the whole document
            text = ""
            unreadable.append(n)
        pages.append(page_lines(text))
    words = sum(len(line.split()) for lines in pages for line in lines)
    if not words:
        raise SourceFormatError(
            f"{ref}: no text layer; OCR is not supported",
            hint="the PDF is probably scanned images; run OCR on it first (e.g. ocrmypdf)",
        )
    info = _info(reader)
    name = urlsplit(url).path if url else ref
    title = str(info.get("title") or _title_from_name(name))
    transcript = render_pdf(title, pages).encode("utf-8")
    canonical = canonical_url(url) if url else f"file:sha256:{sha256_hex(data)}"
    meta: dict[str, Any] = {
        "author": info.get("author"),
        "published": info.get("published"),
        "pages": len(pages),
        "word_count": words,
        "fetched_url": url,
    }
    if unreadable:
        meta["unreadable_pages"] = unreadable
    return Acquired(
        canonical=canonical,
        source_id=sha256_hex(data)[:8],
        title=opts.title or title,
        content_type=opts.content_type or CONTENT_TYPE,
        files={"source.pdf": data, "transcript.md": transcript},
        url=canonical if url else None,
        meta=meta,
        timed=False,
        source_format="pdf",
        content_hash=digest(transcript),
    )


class PdfSource:
    """PDF files (by ``.pdf`` suffix or ``%PDF-`` header) and http(s) URLs ending ``.pdf``."""

    name = "pdf"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        if path is None:
            return is_url(ref) and urlsplit(ref).path.lower().endswith(".pdf")
        return path.suffix.lower() == ".pdf" or looks_like_pdf(head)

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        timeout, max_bytes = fetch_options(opts)
        if path is not None:
            data = read_input_file(path, max_bytes=max_bytes)
            return [build_pdf(str(path), data, url=None, opts=opts)]
        resp = fetch(ref, timeout=timeout, max_bytes=max_bytes, accept=ACCEPT)
        if resp.content_type not in _PDF_TYPES and not looks_like_pdf(resp.data[:1024]):
            raise SourceFormatError(f"{ref}: content type {resp.content_type} is not a PDF")
        return [build_pdf(ref, resp.data, url=resp.url, opts=opts)]
