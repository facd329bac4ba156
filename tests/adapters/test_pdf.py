"""PdfSource: text layer per page, page markers, metadata title, and clear errors.

The PDFs are written here by hand (:func:`make_pdf`), so the tests control every character.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from arkai.adapters.params import DEFAULTS
from arkai.core.hashing import digest, sha256_hex
from arkai.errors import SourceFormatError
from arkai.sources.article import ArticleSource
from arkai.sources.base import AddOptions
from arkai.sources.pdf import PdfSource, page_lines
from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pdf"


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in WinAnsiEncoding, with the characters that need it escaped."""
    out = bytearray(b"(")
    for byte in text.encode("cp1252"):
        if byte in b"()\\":
            out += b"\\" + bytes([byte])
        elif byte < 32 or byte > 126:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b")")


def make_pdf(
    pages: list[list[str]], *, title: str | None = None, shapes_only: bool = False
) -> bytes:
    """A minimal valid PDF: one Helvetica text line per entry of each page, top to bottom.

    ``shapes_only`` draws a rectangle instead of text on every page (a "scan" without a text
    layer).
    """
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    page_refs = []
    pages_num = len(objects) + 1 + 2 * len(pages)  # the page tree comes after pages + contents
    for lines in pages:
        if shapes_only:
            ops = b"0.5 g 72 600 200 100 re f"
        else:
            ops = b"BT /F1 12 Tf 72 720 Td 16 TL"
            for line in lines:
                ops += b" " + _pdf_string(line) + b" Tj T*"
            ops += b" ET"
        contents = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(ops), ops))
        page_refs.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
                % (pages_num, font, contents)
            )
        )
    kids = b" ".join(b"%d 0 R" % n for n in page_refs)
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(pages))) == pages_num
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_num
    info = add(b"<< /Title %s /Author (Test Author) >>" % _pdf_string(title)) if title else None

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    trailer = b"/Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n<< %s >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, xref)
    return bytes(out)


PAGES = [
    ["Bees and the hive", "Honey bees keep about 20,000 workers.", "A queen lays the eggs."],
    ["Second page: wax (and comb).", "Caf\u00e9 owners sell the honey \u2014 at a price."],
]


def _opts(**kw: object) -> AddOptions:
    return AddOptions(params={"add": dict(DEFAULTS["add"])}, now="2024-01-01T00:00:00Z", **kw)  # type: ignore[arg-type]


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_helper_makes_a_pdf_pypdf_reads() -> None:
    reader = PdfReader(io.BytesIO(make_pdf(PAGES, title="T")))
    assert len(reader.pages) == 2
    assert "Honey bees keep about 20,000 workers." in reader.pages[0].extract_text()


def test_pages_become_markers_and_lines(tmp_path: Path) -> None:
    data = make_pdf(PAGES, title="The Beekeeper's Notes")
    path = _write(tmp_path, "notes.pdf", data)
    (item,) = PdfSource().acquire(str(path), path, _opts())
    text = item.files["transcript.md"].decode("utf-8")
    assert text == (
        "# The Beekeeper's Notes\n\n"
        "[p. 1]\nBees and the hive\nHoney bees keep about 20,000 workers.\n"
        "A queen lays the eggs.\n\n"
        "[p. 2]\nSecond page: wax (and comb).\nCaf\u00e9 owners sell the honey \u2014 at a price.\n"
    )
    assert item.files["source.pdf"] == data
    assert item.canonical == f"file:sha256:{sha256_hex(data)}"
    assert item.source_id == sha256_hex(data)[:8]
    assert item.content_type == "pdfs"
    assert item.source_format == "pdf"
    assert item.content_hash == digest(item.files["transcript.md"])
    assert item.title == "The Beekeeper's Notes"
    assert item.meta["pages"] == 2
    assert item.meta["author"] == "Test Author"
    assert item.meta["word_count"] == 29
    assert item.url is None


def test_title_falls_back_to_the_file_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "annual_report-2023.pdf", make_pdf(PAGES))
    (item,) = PdfSource().acquire(str(path), path, _opts())
    assert item.title == "Annual report 2023"
    assert item.files["transcript.md"].startswith(b"# Annual report 2023\n\n[p. 1]\n")


def test_title_override_and_type(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.pdf", make_pdf(PAGES, title="Inner"))
    (item,) = PdfSource().acquire(str(path), path, _opts(title="Mine", content_type="papers"))
    assert (item.title, item.content_type) == ("Mine", "papers")
    assert item.files["transcript.md"].startswith(b"# Inner\n")


def test_empty_page_keeps_its_marker(tmp_path: Path) -> None:
    path = _write(tmp_path, "gap.pdf", make_pdf([["one line of text here"], [], ["third page"]]))
    (item,) = PdfSource().acquire(str(path), path, _opts())
    assert item.files["transcript.md"].decode() == (
        "# Gap\n\n[p. 1]\none line of text here\n\n[p. 2]\n\n[p. 3]\nthird page\n"
    )


def test_lines_are_kept_as_they_are() -> None:
    assert page_lines("  a  hyphen-\nated   word \r\n\n\tnext\rlast ") == [
        "a hyphen-",
        "ated word",
        "next",
        "last",
    ]


def test_match() -> None:
    src = PdfSource()
    assert src.match("x.pdf", Path("x.pdf"), b"")
    assert src.match("X.PDF", Path("X.PDF"), b"")
    assert src.match("paper", Path("paper"), b"%PDF-1.7\n...")
    assert not src.match("page.html", Path("page.html"), b"<!doctype html>")
    assert src.match("https://example.org/papers/a.pdf", None, b"")
    assert src.match("https://example.org/papers/A.PDF?download=1", None, b"")
    assert not src.match("https://example.org/papers/a.html", None, b"")
    assert not src.match("ftp://example.org/a.pdf", None, b"")


def test_scanned_pdf_has_no_text_layer(tmp_path: Path) -> None:
    path = _write(tmp_path, "scan.pdf", make_pdf([[], []], shapes_only=True))
    with pytest.raises(SourceFormatError, match=r"scan\.pdf: no text layer; OCR is not supported"):
        PdfSource().acquire(str(path), path, _opts())


def test_truncated_pdf_names_the_file(tmp_path: Path) -> None:
    data = make_pdf(PAGES)
    path = _write(tmp_path, "broken.pdf", data[: len(data) // 3])
    with pytest.raises(SourceFormatError, match=r"broken\.pdf: "):
        PdfSource().acquire(str(path), path, _opts())


def test_garbage_with_pdf_suffix(tmp_path: Path) -> None:
    path = _write(tmp_path, "fake.pdf", b"this is not a pdf at all")
    with pytest.raises(SourceFormatError, match=r"fake\.pdf: not a PDF"):
        PdfSource().acquire(str(path), path, _opts())


def _encrypt(data: bytes, user: str, owner: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user, owner_password=owner, algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def test_password_protected_pdf(tmp_path: Path) -> None:
    path = _write(tmp_path, "secret.pdf", _encrypt(make_pdf(PAGES), "s3cret", "owner"))
    with pytest.raises(SourceFormatError, match=r"secret\.pdf: encrypted PDF; it needs a password"):
        PdfSource().acquire(str(path), path, _opts())


def test_encrypted_with_empty_user_password_opens(tmp_path: Path) -> None:
    path = _write(tmp_path, "locked.pdf", _encrypt(make_pdf(PAGES, title="Open"), "", "owner"))
    (item,) = PdfSource().acquire(str(path), path, _opts())
    assert b"[p. 2]\nSecond page: wax (and comb).\n" in item.files["transcript.md"]


def test_fixture_file_is_found_by_header(tmp_path: Path) -> None:
    path = FIXTURES / "two_pages.pdf"
    head = path.read_bytes()[:65536]
    assert PdfSource().match(str(path), path, head)
    (item,) = PdfSource().acquire(str(path), path, _opts())
    assert item.title == "Two pages"
    assert item.files["transcript.md"].count(b"[p. ") == 2


def test_pdf_url(http_server: LocalHTTPServer) -> None:
    data = make_pdf(PAGES, title="Served")
    http_server.route("/docs/paper.pdf", body=data, content_type="application/pdf")
    http_server.redirect("/latest.pdf", "/docs/paper.pdf?utm_source=feed")
    url = http_server.url("/latest.pdf")
    assert PdfSource().match(url, None, b"")
    (item,) = PdfSource().acquire(url, None, _opts())
    assert item.files["source.pdf"] == data
    assert item.meta["fetched_url"] == http_server.url("/docs/paper.pdf?utm_source=feed")
    assert item.canonical == http_server.url("/docs/paper.pdf")
    assert item.url == item.canonical


def test_pdf_served_without_pdf_suffix_goes_through_article(http_server: LocalHTTPServer) -> None:
    http_server.route("/download", body=make_pdf(PAGES), content_type="application/pdf")
    (item,) = ArticleSource().acquire(http_server.url("/download"), None, _opts())
    assert item.content_type == "pdfs"
    assert item.files["transcript.md"].startswith(b"# Download\n\n[p. 1]\n")


def test_pdf_url_that_is_html(http_server: LocalHTTPServer) -> None:
    http_server.route("/a.pdf", body=b"<html><body>moved</body></html>", content_type="text/html")
    with pytest.raises(SourceFormatError, match=r"/a\.pdf: content type text/html is not a PDF"):
        PdfSource().acquire(http_server.url("/a.pdf"), None, _opts())


def test_a_pdf_whose_text_held_secrets_is_not_stored_when_redacting(tmp_path: Path) -> None:
    """A PDF cannot be redacted in place: with --redact, its original bytes are withheld when
    its text held a secret, and only the redacted transcript is written."""
    from arkai.cli import main
    from arkai.ops.init import init_repo

    card = "4111 1111 1111 1111"
    path = tmp_path / "statement.pdf"
    path.write_bytes(make_pdf([["Monthly statement", f"Card {card} was charged."]]))
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    assert main(["--repo", str(repo), "add", "-q", "--redact", str(path)]) == 0
    (folder,) = (repo / "library" / "pdfs").iterdir()
    names = {p.name for p in folder.iterdir()}
    assert "source.pdf" not in names and "source.withheld.txt" in names
    for f in folder.iterdir():
        assert b"4111" not in f.read_bytes(), f.name
    # Without --redact (or with nothing to redact) the original is kept as given.
    clean = tmp_path / "clean.pdf"
    clean.write_bytes(make_pdf([["Nothing secret here."]]))
    assert main(["--repo", str(repo), "add", "-q", "--redact", str(clean)]) == 0
    kept = [f for f in (repo / "library" / "pdfs").iterdir() if (f / "source.pdf").is_file()]
    assert len(kept) == 1 and (kept[0] / "source.pdf").read_bytes() == clean.read_bytes()
