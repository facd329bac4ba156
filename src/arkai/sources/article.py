"""Web articles: an HTML page (a URL or a saved ``.html`` file) → an ``articles`` item.

The page bytes are kept verbatim as ``source.html``; they are decoded only to extract the
article. Extraction is trafilatura's, with comments left out and tables kept. The settings were
chosen on the article-extraction benchmark pages in the shared data (``bench/articles.py``):

* ``favor_precision`` first. On those pages it never lost article text and it drops what the
  balanced mode keeps around a short body (on the WSJ paywall stub the balanced mode adds the
  headline and the standfirst to the 92-word teaser).
* The balanced mode as a safety net: when the precision pass keeps less than
  :data:`PRECISION_MIN_SHARE` of the balanced pass's words, precision most likely cut real
  content (precision also skips trafilatura's own rescue passes for pages with little text),
  so the balanced text is used instead.

``transcript.md`` is ``# Title``, a blank line, then one line per paragraph with a blank line
between paragraphs. Section headings are written ``## Heading``, list items ``- item`` and table
rows as their cells joined by `` | ``. Line breaks inside a paragraph become spaces, and the
headline repeated among the first paragraphs (:data:`HEADLINE_OVERLAP` of its distinct words
shared with the title) is dropped: the transcript already opens with the title.

Identity: the canonical URL is the page's own ``<link rel="canonical">`` when it is an http(s)
URL (not just the site root), else the fetched URL after redirects, in both cases cleaned by
:func:`canonical_url`. A local file without such a link gets ``file:sha256:<hex of its bytes>``.
The folder suffix (``source_id``) is the first 8 hex of the SHA-256 of the page bytes.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote_plus, urljoin, urlsplit, urlunsplit

import trafilatura
from lxml import etree
from lxml import html as lxml_html

from arkai.adapters.fs import read_input_file
from arkai.adapters.http import fetch
from arkai.adapters.params import positive_number
from arkai.core.hashing import digest, sha256_hex
from arkai.errors import SourceFormatError
from arkai.formats.cue import clean_text
from arkai.sources.base import Acquired, AddOptions
from arkai.sources.route import is_url

CONTENT_TYPE = "articles"
MIN_ARTICLE_WORDS = 25
"""Fewer words of main text than this and the page is not an article (login page, stub)."""
PRECISION_MIN_SHARE = 0.5
"""Below this share of the balanced pass's words, the precision pass is not trusted."""
HEADLINE_WINDOW = 3
"""A headline repeated in the body is looked for among this many leading paragraphs."""
HEADLINE_OVERLAP = 0.8
"""Share of distinct words a leading paragraph must share with the title to count as it."""
DEFAULT_TIMEOUT_S = 20.0
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_GENERIC_TYPES = frozenset({"text/plain", "application/octet-stream"})
"""Types (or a missing header, which reads as ``text/plain``) for which the body is sniffed."""
ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"
FOCUS_MODES = ("auto", "precision", "balanced", "recall")

TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "mc_cid", "mc_eid", "ref", "ref_src", "igshid", "si"}
)
"""Query parameters that say how someone arrived, not what they asked for (plus ``utm_*``)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Characters left alone when percent-encoding a path or a query: URL syntax and ``%`` itself.
_URL_SAFE = "/%:@!$&'()*+,;=-._~?"
_HEAD_RE = re.compile(
    rb"^(?:\s|<\?xml[^>]*>|<!--.*?-->)*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL
)
_META_CHARSET_RE = re.compile(
    rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.IGNORECASE
)
_WORD_RE = re.compile(r"\W+")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")
# WHATWG: these labels mean windows-1252 in a browser.
_CHARSET_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}
# trafilatura's output tree: elements that hold paragraphs of their own.
_BLOCK_TAGS = frozenset(
    {"p", "head", "list", "item", "quote", "table", "row", "cell", "code", "div", "main", "doc"}
)


# --------------------------------------------------------------------------------------------
# URLs


def _is_tracking(key: str) -> bool:
    key = key.lower()
    return key.startswith("utm_") or key in TRACKING_PARAMS


def _ascii_host(host: str) -> str:
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def canonical_url(url: str) -> str:
    """``url`` in one form per page.

    Scheme and host lower-case (an international host in its ``xn--`` form), default port,
    user info and fragment dropped, an empty path written ``/``, characters outside URL syntax
    percent-encoded as UTF-8 (existing ``%XX`` escapes are kept as written), tracking
    parameters (``utm_*``, :data:`TRACKING_PARAMS`) removed and the remaining query
    parameters sorted.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = _ascii_host((parts.hostname or "").rstrip("."))
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    pieces = [quote(p, safe=_URL_SAFE) for p in parts.query.split("&") if p]
    kept = sorted(p for p in pieces if not _is_tracking(unquote_plus(p.split("=", 1)[0])))
    path = quote(parts.path, safe=_URL_SAFE) or "/"
    return urlunsplit((scheme, netloc, path, "&".join(kept), ""))


def _declared_canonical(tree: Any, base: str | None) -> str | None:
    """The page's ``<link rel="canonical">`` as an absolute http(s) URL, if it names one.

    A canonical that is only the site root while the page itself has a deeper path is a common
    template mistake (every article "is" the home page) and is ignored.
    """
    if tree is None:
        return None
    for link in tree.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        href = (link.get("href") or "").strip()
        if "canonical" not in rel or not href:
            continue
        absolute = urljoin(base, href) if base else href
        if not is_url(absolute):
            return None
        if urlsplit(absolute).path in ("", "/") and base and urlsplit(base).path not in ("", "/"):
            return None
        return absolute
    return None


# --------------------------------------------------------------------------------------------
# Decoding


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().lower()
    label = _CHARSET_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def decode_html(data: bytes, charset: str | None = None) -> str:
    """The page as text, for extraction only (the stored source keeps the bytes).

    Order: a byte-order mark, the HTTP ``charset``, a ``<meta>`` charset in the first 4 KiB,
    then UTF-8. Undecodable bytes become U+FFFD.
    """
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    m = _META_CHARSET_RE.search(data[:4096])
    codec = _codec(charset) or _codec(m.group(1).decode("ascii") if m else None) or "utf-8"
    return data.decode(codec, errors="replace")


def looks_like_html(head: bytes) -> bool:
    """True when the file opens (after a BOM, an XML declaration or comments) like HTML."""
    return _HEAD_RE.match(head.removeprefix(codecs.BOM_UTF8)[:4096]) is not None


# --------------------------------------------------------------------------------------------
# Extraction


@dataclass
class Article:
    """What extraction found in one page."""

    title: str | None
    author: str | None
    published: str | None
    """ISO date (``YYYY-MM-DD``) when the page gives one."""
    site: str | None
    paragraphs: list[str] = field(default_factory=list)
    canonical: str | None = None
    """The page's declared canonical URL (absolute, not yet cleaned), if any."""
    focus: str = "precision"
    """Which trafilatura mode produced ``paragraphs``."""

    @property
    def word_count(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)

    @property
    def text(self) -> str:
        """Paragraphs joined by newlines (for scoring)."""
        return "\n".join(self.paragraphs)


def _inline_text(elem: Any) -> str:
    """Text of an element whose children are all inline; ``<lb/>`` becomes a space."""
    out = [elem.text or ""]
    for child in elem:
        if not isinstance(child.tag, str):
            out.append(child.tail or "")
            continue
        out.append(" " if child.tag == "lb" else _inline_text(child))
        out.append(child.tail or "")
    return "".join(out)


def _blocks(elem: Any, kind: str = "p") -> Iterator[tuple[str, str]]:
    """(kind, text) for each paragraph inside ``elem``, in document order."""
    tag = elem.tag
    if tag == "table":
        for row in elem.iter("row"):
            cells = [clean_text(_inline_text(c)) for c in row if c.tag == "cell"]
            cells = [c for c in cells if c]
            if cells:
                yield "row", " | ".join(cells)
        return
    if tag in ("head", "item"):
        kind = tag
    if not any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS for c in elem):
        yield kind, _inline_text(elem)
        return
    buffer = [elem.text or ""]
    for child in elem:
        if isinstance(child.tag, str) and child.tag in _BLOCK_TAGS:
            yield kind, "".join(buffer)
            buffer = []
            yield from _blocks(child, "p" if child.tag == "list" else kind)
        elif isinstance(child.tag, str):
            buffer.append(" " if child.tag == "lb" else _inline_text(child))
        buffer.append(child.tail or "")
    yield kind, "".join(buffer)


_PREFIX = {"head": "## ", "item": "- "}


def _word_set(text: str) -> set[str]:
    return {w for w in _WORD_RE.split(text.casefold()) if w}


def _repeats_title(text: str, title: str) -> bool:
    """True when ``text`` is the headline again (give or take a word: "Opinion | …")."""
    a, b = _word_set(text), _word_set(title)
    return bool(a and b) and len(a & b) >= HEADLINE_OVERLAP * max(len(a), len(b))


def _paragraphs(body: Any, title: str | None) -> list[str]:
    out: list[str] = []
    dropped = not title
    for kind, raw in _blocks(body, "p"):
        text = clean_text(raw)
        if not text:
            continue
        if not dropped and len(out) < HEADLINE_WINDOW and title and _repeats_title(text, title):
            dropped = True  # the headline again: the transcript already opens with the title
            continue
        out.append(_PREFIX.get(kind, "") + text)
    return out


def _run(html: str, url: str | None, focus: str, metadata: bool) -> Any:
    try:
        return trafilatura.bare_extraction(
            html,
            url=url,
            favor_precision=focus == "precision",
            favor_recall=focus == "recall",
            include_comments=False,
            include_tables=True,
            with_metadata=metadata,
        )
    except (ValueError, TypeError, etree.LxmlError):
        return None


def _words(doc: Any) -> int:
    return len((getattr(doc, "text", None) or "").split()) if doc is not None else 0


def extract_article(html: str, url: str | None = None, *, focus: str = "auto") -> Article:
    """Extract the article in ``html`` (already decoded). ``focus`` is ``auto`` (the module's
    precision-with-safety-net rule) or one trafilatura mode, for benchmarking."""
    if focus not in FOCUS_MODES:
        raise ValueError(f"unknown focus {focus!r}")
    first = "precision" if focus == "auto" else focus
    doc = _run(html, url, first, metadata=True)
    used = first
    if focus == "auto":
        balanced = _run(html, url, "balanced", metadata=False)
        if _words(balanced) and _words(doc) < PRECISION_MIN_SHARE * _words(balanced):
            if doc is None:
                doc = _run(html, url, "balanced", metadata=True)
            else:
                doc.body = balanced.body
            used = "balanced"
    tree = _parse_tree(html)
    if doc is None:
        return Article(None, None, None, None, [], _declared_canonical(tree, url), used)
    title = clean_text(doc.title or "") or None
    published = doc.date if isinstance(doc.date, str) and _DATE_RE.match(doc.date) else None
    body = doc.body if doc.body is not None else etree.Element("body")
    return Article(
        title=title,
        author=clean_text(doc.author or "") or None,
        published=published[:10] if published else None,
        site=clean_text(doc.sitename or doc.hostname or "") or None,
        paragraphs=_paragraphs(body, title),
        canonical=_declared_canonical(tree, url),
        focus=used,
    )


def _parse_tree(html: str) -> Any:
    """The page as an lxml tree (for ``<link>`` elements); a parser per call: lxml parsers
    must not be shared between threads."""
    parser = lxml_html.HTMLParser(encoding="utf-8")
    try:
        return lxml_html.document_fromstring(html.encode("utf-8"), parser=parser)
    except (ValueError, etree.LxmlError):
        return None


def render_article(title: str, paragraphs: list[str]) -> str:
    """``transcript.md`` text: ``# Title``, a blank line, paragraphs separated by blank lines."""
    return "\n\n".join([f"# {clean_text(title) or 'Untitled'}", *paragraphs]) + "\n"


# --------------------------------------------------------------------------------------------
# The source kind


def _title_from_name(name: str) -> str:
    stem = PurePosixPath(name).stem if name else ""
    text = re.sub(r"[_\-\s]+", " ", unquote_plus(stem)).strip()
    return text[:1].upper() + text[1:] if text else "Untitled"


def fetch_options(opts: AddOptions) -> tuple[float, int]:
    """(timeout in seconds, size cap in bytes) for a fetch, from ``params.yaml``'s ``add``."""
    add = opts.params.get("add")
    return positive_number(add, "add.timeout_s", DEFAULT_TIMEOUT_S), opts.max_bytes


def build_article(
    ref: str, data: bytes, *, url: str | None, charset: str | None, opts: AddOptions
) -> Acquired:
    """The item for page bytes ``data`` (``url`` = the final fetched URL, None for a file)."""
    article = extract_article(decode_html(data, charset), url)
    if article.word_count < MIN_ARTICLE_WORDS:
        raise SourceFormatError(
            f"{ref}: no article text found",
            hint=f"fewer than {MIN_ARTICLE_WORDS} words of main text; "
            "a login page, a paywall or a page built by scripts?",
        )
    declared = article.canonical
    if declared is not None:
        canonical = canonical_url(declared)
    elif url is not None:
        canonical = canonical_url(url)
    else:
        canonical = f"file:sha256:{sha256_hex(data)}"
    name = urlsplit(url).path if url else ref
    title = article.title or _title_from_name(name)
    transcript = render_article(title, article.paragraphs).encode("utf-8")
    return Acquired(
        canonical=canonical,
        source_id=sha256_hex(data)[:8],
        title=opts.title or title,
        content_type=opts.content_type or CONTENT_TYPE,
        files={"source.html": data, "transcript.md": transcript},
        url=canonical if canonical.startswith(("http://", "https://")) else None,
        meta={
            "author": article.author,
            "published": article.published,
            "site": article.site,
            "word_count": article.word_count,
            "fetched_url": url,
        },
        timed=False,
        source_format="html",
        content_hash=digest(transcript),
    )


class ArticleSource:
    """Web pages: any http(s) URL, and local ``.html``/``.htm`` files (or HTML by content)."""

    name = "article"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        if path is None:
            return is_url(ref)
        if path.suffix.lower() in (".html", ".htm", ".xhtml"):
            return True
        return looks_like_html(head)

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        timeout, max_bytes = fetch_options(opts)
        if path is not None:
            data = read_input_file(path, max_bytes=max_bytes)
            return [build_article(str(path), data, url=None, charset=None, opts=opts)]
        resp = fetch(ref, timeout=timeout, max_bytes=max_bytes, accept=ACCEPT)
        if resp.content_type == "application/pdf":
            from arkai.sources.pdf import build_pdf

            return [build_pdf(ref, resp.data, url=resp.url, opts=opts)]
        sniffed = resp.content_type in _GENERIC_TYPES and looks_like_html(resp.data[:4096])
        if resp.content_type not in HTML_TYPES and not sniffed:
            raise SourceFormatError(
                f"{ref}: content type {resp.content_type} is not HTML; not an article"
            )
        return [build_article(ref, resp.data, url=resp.url, charset=resp.charset, opts=opts)]
