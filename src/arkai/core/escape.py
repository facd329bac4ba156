"""Text → HTML that neither the browser nor Markdown (nor a Markdown extension) interprets.

Every page of the site is Markdown whose body is raw HTML blocks (see ``docs/site.md``). All
text that comes from a transcript, a title, metadata or a model goes through
:func:`escape_text` before it is placed in that HTML:

- ``& < >`` become character references, so no tag or entity can be formed (text is only
  ever placed in element content; :func:`escape_attr` also escapes ``"`` for attributes);
- characters that Markdown or common extensions give meaning to inside a line (emphasis,
  code, links and images, tables, math, marks, attribute lists, Jinja/macros ``{{ }}``)
  become numeric character references too, so the text stays inert even where some
  extension does process it;
- line breaks become ``&#10;``, so every line of the generated Markdown starts with a tag
  and no line-start syntax (``--8<--``, fences, ``:::``, headings) can appear;
- control characters, lone surrogates and non-characters become U+FFFD.

A browser renders the references as the original characters (``textContent`` is unchanged),
and MkDocs' search indexer decodes them, so escaping costs nothing in fidelity.

URLs built from metadata go through :func:`safe_url`: only absolute ``http``/``https`` URLs
with a host are kept, and characters outside a conservative set are percent-encoded.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import unicodedata
from urllib.parse import quote, urlsplit

#: Characters that Markdown or a widely used extension may give meaning to, besides the
#: HTML-significant ones.
MARKDOWN_SIGNIFICANT = "`*_[]{}\\|~^=$"
_TABLE: dict[int, str] = {ord(c): f"&#{ord(c)};" for c in MARKDOWN_SIGNIFICANT}
_TABLE.update(
    {
        ord("&"): "&amp;",
        ord("<"): "&lt;",
        ord(">"): "&gt;",
        ord("\n"): "&#10;",
        ord("\r"): "",
    }
)
# C0 (but tab, LF and CR, handled above), DEL, C1, lone surrogates, U+FFFE/U+FFFF.
_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_SPACE = re.compile(r"\s+")
# Kept as is in URLs (RFC 3986 reserved and unreserved, and '%'); everything else is
# percent-encoded. No quote characters, braces, backslash, backtick, caret or pipe.
_URL_SAFE = "-._~:/?#[]@!$&()*+,;=%"
_SLUG = re.compile(r"[^a-z0-9]+")


def escape_text(text: str) -> str:
    """``text`` as inert HTML element content."""
    if _BAD.search(text):
        text = _BAD.sub("\ufffd", text)
    return text.translate(_TABLE)


def escape_attr(text: str) -> str:
    """``text`` for a double-quoted attribute value."""
    return escape_text(text).replace('"', "&quot;")


def escape_url(url: str) -> str:
    """A URL or relative link built by arkai, for an ``href`` attribute."""
    return url.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def one_line(text: str) -> str:
    """Whitespace runs collapsed to one space, NFC, stripped (titles, labels)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def safe_url(value: object) -> str | None:
    """``value`` when it is an absolute http(s) URL with a host, else None.

    Whitespace, control characters and credentials (``user@host``) are refused; characters
    outside RFC 3986's sets are percent-encoded so the result can never close an attribute
    or start a template.
    """
    if not isinstance(value, str):
        return None
    url = value.strip()
    if not url or len(url) > 4096 or any(ch.isspace() for ch in url) or _BAD.search(url):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host or "@" in parts.netloc:
        return None
    return quote(url, safe=_URL_SAFE)


def slugify(text: str, *, max_len: int = 48) -> str:
    """A file-name-safe slug plus 8 hex of the text's digest (distinct texts, distinct slugs)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = _SLUG.sub("-", ascii_text.lower()).strip("-")[:max_len].strip("-")
    tail = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug}-{tail}" if slug else tail


def css_token(text: str) -> str:
    """``text`` reduced to ``[a-z0-9-]`` (for class names built from known vocabularies)."""
    return _SLUG.sub("-", text.lower()).strip("-") or "other"


def yaml_string(text: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax) holding ``text``."""
    return json.dumps(_BAD.sub("\ufffd", text), ensure_ascii=False)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: str) -> str:
    """Plain text safe inside Markdown and HTML: entities for ``& < >``, backslashes before the
    punctuation that starts emphasis, code, links or table cells, whitespace collapsed (model
    and transcript text is never markup). For text that never starts a line."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(" ".join(text.split()), quote=False))


def md_code(text: str) -> str:
    """Inline code (no escapes apply inside: backticks become quotes)."""
    return "`" + " ".join(text.split()).replace("`", "'") + "`"
