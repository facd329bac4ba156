"""Gemini apps activity from Google Takeout ("My Activity" JSON): a list of records with
``header``, ``title`` (``Prompted …``), ``time`` and ``safeHtmlItem[].html`` (the reply).

Which records are kept
    * Only Gemini rows: ``header`` (or one of ``products``) mentions Gemini (``Gemini Apps``,
      the German ``Gemini-Apps``, …) or Bard, Gemini's former name. Rows of other products are
      skipped (one summary warning counts them).
    * Feedback rows (``Gave feedback: …``, ``Feedback …``) are skipped, as are rows that are
      neither a prompt (title prefix ``Prompted``/``Eingegebener Prompt:``) nor carry a reply.
    * A record whose ``time`` is missing or not ISO-8601 is skipped with its own warning.

How records become conversations
    Takeout has no conversation ids, so records are grouped by UTC day: one conversation per day,
    in time order, each record giving a ``human`` message (the prompt: the title without its
    localized ``Prompted`` prefix) and, when the record has a reply, an ``assistant`` message (its
    HTML as text: tags stripped, ``script``/``style`` dropped, paragraphs separated by a blank
    line, list items as ``- `` lines, ``<pre>`` as fenced code). The conversation id is the first
    16 hex of ``sha256(time + "\\n" + title)`` of the day's first record; the title is taken from
    the first prompt (exports have no titles).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from arkai.core.hashing import sha256_hex
from arkai.core.redact import redact
from arkai.sources.chats.common import (
    Conversation,
    Message,
    clean_text,
    fence,
    iso_from_string,
    join_parts,
)

_GEMINI = re.compile(r"gemini|bard", re.IGNORECASE)
_PROMPT_PREFIX = re.compile(r"^(?:Prompted|Eingegebener Prompt)\s*:?\s+")
_FEEDBACK = re.compile(r"^(?:Gave feedback|Feedback)\b", re.IGNORECASE)


def parse_gemini(name: str, value: Any) -> tuple[list[Conversation], list[str]]:
    """One conversation per UTC day of Gemini prompts, and skip warnings."""
    records = value if isinstance(value, list) else [value]
    warnings: list[str] = []
    skipped = 0
    kept: list[tuple[str, int, dict[str, Any], str, str]] = []
    for index, record in enumerate(records, start=1):
        if not isinstance(record, dict) or not is_gemini_record(record):
            skipped += 1
            continue
        title = record.get("title") if isinstance(record.get("title"), str) else ""
        prompt, is_prompt = prompt_text(str(title))
        reply = reply_text(record.get("safeHtmlItem"))
        if _FEEDBACK.match(str(title).strip()) or not (is_prompt or reply) or not (prompt or reply):
            skipped += 1
            continue
        when = iso_from_string(record.get("time"))
        if when is None:
            short = redact(" ".join(str(title).split())[:60])[0]
            warnings.append(
                f"{name}: activity record {index} ({short!r}): time {record.get('time')!r} "
                "is not an ISO-8601 timestamp; skipped"
            )
            continue
        kept.append((when, index, record, prompt, reply))
    if skipped:
        warnings.append(
            f"{name}: {skipped} activity record(s) that are not Gemini prompts "
            "(other products, feedback) skipped"
        )

    kept.sort(key=lambda r: (r[0], str(r[2].get("time")), r[1]))
    days: dict[str, list[tuple[str, int, dict[str, Any], str, str]]] = {}
    for row in kept:
        days.setdefault(row[0][:10], []).append(row)
    out: list[Conversation] = []
    for rows in days.values():
        first = rows[0][2]
        key = f"{first.get('time')}\n{first.get('title')}"
        messages: list[Message] = []
        for when, _, _, prompt, reply in rows:
            if prompt:
                messages.append(Message("human", prompt, when))
            if reply:
                messages.append(Message("assistant", reply, when))
        out.append(
            Conversation(
                platform="gemini",
                conversation_id=sha256_hex(key.encode("utf-8", "surrogatepass"))[:16],
                title="",
                created=rows[0][0],
                updated=rows[-1][0],
                messages=messages,
                raw=[row[2] for row in rows],
            )
        )
    return out, warnings


def is_gemini_record(record: dict[str, Any]) -> bool:
    """True for a Takeout activity row of the Gemini apps (or Bard)."""
    header = record.get("header")
    if isinstance(header, str) and _GEMINI.search(header):
        return True
    products = record.get("products")
    return isinstance(products, list) and any(
        isinstance(p, str) and _GEMINI.search(p) for p in products
    )


def prompt_text(title: str) -> tuple[str, bool]:
    """The prompt in a row title, and whether the title had a (localized) prompt prefix."""
    stripped = title.strip()
    match = _PROMPT_PREFIX.match(stripped)
    if match:
        return clean_text(stripped[match.end() :]), True
    return clean_text(stripped), False


def reply_text(items: Any) -> str:
    """The text of a record's ``safeHtmlItem`` list."""
    if not isinstance(items, list):
        return ""
    parts = [
        html_to_text(item["html"])
        for item in items
        if isinstance(item, dict) and isinstance(item.get("html"), str)
    ]
    return join_parts(parts)


_BLOCK_WORDS = (
    "p div section article header footer main aside nav h1 h2 h3 h4 h5 h6 table thead tbody "
    "tfoot blockquote figure figcaption dl details summary hr address"
)
_BLOCKS = frozenset(_BLOCK_WORDS.split())
_LISTS = frozenset({"ul", "ol"})
_SKIP = frozenset({"script", "style", "head", "title", "template", "noscript", "svg"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "source", "area", "col"})


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.buf = ""
        self.skip = 0
        self.pre: list[str] | None = None
        self.pre_depth = 0
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next number]

    # ---- helpers
    def flush(self) -> None:
        line = self.buf.rstrip()
        if line.strip():
            self.lines.append(line)
        self.buf = ""

    def paragraph(self) -> None:
        self.flush()
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    # ---- events
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
            return
        if self.skip:
            return
        if self.pre is not None:
            if tag == "pre":
                self.pre_depth += 1
            elif tag == "br":
                self.pre.append("\n")
            return
        if tag == "pre":
            self.paragraph()
            self.pre = []
            self.pre_depth = 1
        elif tag in _LISTS:
            if not self.lists:
                self.paragraph()
            else:
                self.flush()
            self.lists.append([1 if tag == "ol" else 0, 1])
        elif tag == "li":
            self.flush()
            indent = "  " * max(0, len(self.lists) - 1)
            if self.lists and self.lists[-1][0]:
                self.buf = f"{indent}{self.lists[-1][1]}. "
                self.lists[-1][1] += 1
            else:
                self.buf = f"{indent}- "
        elif tag in ("br", "tr"):
            self.flush()
        elif tag in ("td", "th"):
            if self.buf.strip():
                self.buf += " | "
        elif tag == "img":
            self.text("[image]")
        elif tag in _BLOCKS:
            self.paragraph()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if self.pre is not None:
            if tag == "pre":
                self.pre_depth -= 1
                if self.pre_depth <= 0:
                    body = clean_text("".join(self.pre))
                    self.pre = None
                    if body:
                        self.lines.extend(fence(body).split("\n"))
                    self.paragraph()
            return
        if tag in _LISTS:
            if self.lists:
                self.lists.pop()
            if not self.lists:
                self.paragraph()
            else:
                self.flush()
        elif tag in ("li", "tr"):
            self.flush()
        elif tag in _BLOCKS:
            self.paragraph()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.pre is not None:
            self.pre.append(data)
            return
        self.text(data)

    def text(self, data: str) -> None:
        chunk = re.sub(r"\s+", " ", data)
        if not self.buf.strip() or self.buf.endswith(" "):
            chunk = chunk.lstrip()
        self.buf += chunk

    def result(self) -> str:
        if self.pre is not None:
            self.lines.extend(self.pre)
            self.pre = None
        self.flush()
        return clean_text("\n".join(self.lines))


def html_to_text(markup: str) -> str:
    """Readable text of an HTML fragment (see the module docstring for the rules)."""
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    return parser.result()
