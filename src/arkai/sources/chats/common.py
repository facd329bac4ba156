"""What every chat platform shares: the normalized conversation, timestamps, text cleaning,
redaction, and the three files an item gets (``conversation.yaml``, ``transcript.md``,
``source.json``).

Each platform parser turns its export into :class:`Conversation` objects; :func:`build_acquired`
turns one into an :class:`~arkai.sources.base.Acquired`. Redaction runs first, on every message,
the title and every string inside the raw JSON, so no file ever holds an unredacted value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from arkai.core import canonjson
from arkai.core.grammar import format_chat_header
from arkai.core.hashing import digest, sha256_hex
from arkai.core.redact import redact, redact_json, redact_many, scrub
from arkai.formats.cue import fix_surrogates, fix_surrogates_in
from arkai.model.record import AsDict
from arkai.sources.base import Acquired, AddOptions

PLATFORMS = ("chatgpt", "claude", "gemini")
ROLES = ("human", "assistant", "system", "tool")
TITLE_FALLBACK_CHARS = 60
MAX_SOURCE_ID = 36
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
_URLS = {
    "chatgpt": "https://chatgpt.com/c/{id}",
    "claude": "https://claude.ai/chat/{id}",
}
_EPOCH_MIN = 0.0
_EPOCH_MAX = 253402300799.0  # 9999-12-31T23:59:59Z


@dataclass
class Message(AsDict):
    """One kept message in the seed-001 normalized shape."""

    role: str
    """``human`` | ``assistant`` | ``system`` | ``tool``."""
    content: str
    timestamp: str | None = None
    """ISO-8601 UTC (``2026-01-01T10:00:00Z``) or None when the export has none."""


@dataclass
class Conversation:
    """One conversation (or one extra branch of it), before redaction and rendering."""

    platform: str
    conversation_id: str
    title: str
    """As exported; may be empty (then the first human message names it)."""
    created: str | None
    updated: str | None
    messages: list[Message]
    raw: Any
    """The conversation's JSON as exported (written as ``source.json``)."""
    branch: str = "active"
    """``active`` (the branch the export marks as current, or the only one) or
    ``branch-<leaf id>`` for an extra branch (``all_branches``)."""
    leaf: str | None = None
    """The leaf message/node id of an extra branch."""


# --------------------------------------------------------------------------- timestamps


def iso_from_epoch(value: Any) -> str | None:
    """Seconds since the epoch (int/float) → ``YYYY-MM-DDTHH:MM:SSZ``; anything else → None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    if not math.isfinite(seconds) or not _EPOCH_MIN <= seconds <= _EPOCH_MAX:
        return None
    moment = datetime.fromtimestamp(math.floor(seconds), tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_from_string(value: Any) -> str | None:
    """An ISO-8601 string (``Z`` or offset; naive = UTC) → UTC ``YYYY-MM-DDTHH:MM:SSZ``."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except (OverflowError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def human_time(iso: str | None) -> str | None:
    """``2026-01-01T10:00:00Z`` → ``2026-01-01 10:00:00 UTC`` (for transcript headers)."""
    if not iso:
        return None
    return f"{iso[:10]} {iso[11:19]} UTC"


# --------------------------------------------------------------------------- text


def clean_text(value: str) -> str:
    """Message text as kept: valid UTF-8 (lone surrogates → U+FFFD), ``\\n`` line ends, no
    trailing blanks on any line, no leading/trailing blank lines; otherwise untouched."""
    text = drop_private_use(fix_surrogates(value))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines).rstrip()


# ChatGPT wraps its citation markers in private-use characters: U+E200 "cite" U+E202
# "turn0search3" U+E201 (and similar entities); they mean nothing outside ChatGPT's app.
_PUA_ENTITY = re.compile("[ \t]?\ue200[^\ue200\ue201\n]{0,200}\ue201")
_PUA = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


def drop_private_use(text: str) -> str:
    """Text without private-use code points (shown as boxes everywhere but the app that
    made them): ChatGPT's bracketed citation markers go whole, any other such character
    goes alone."""
    if not _PUA.search(text):
        return text
    return _PUA.sub("", _PUA_ENTITY.sub("", text))


def fence(body: str, language: str = "") -> str:
    """``body`` as a fenced code block whose fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{body}\n{ticks}"


def join_parts(parts: list[str]) -> str:
    """Non-empty parts, each cleaned, separated by a blank line."""
    kept = [p for p in (clean_text(x) for x in parts) if p]
    return "\n\n".join(kept)


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --------------------------------------------------------------------------- branches


def chain_to(parents: dict[str, str | None], node: str) -> list[str]:
    """Node ids from the root down to ``node`` following parent links (cycle-safe)."""
    chain: list[str] = []
    seen: set[str] = set()
    cur: str | None = node
    while cur is not None and cur in parents and cur not in seen:
        seen.add(cur)
        chain.append(cur)
        cur = parents[cur]
    chain.reverse()
    return chain


def extra_branches(
    active: list[Message], candidates: list[tuple[str, list[Message]]]
) -> list[tuple[str, list[Message]]]:
    """The candidate branches (leaf id, messages) worth an item of their own: not empty, not
    equal to another, and not a prefix of the active branch or of another candidate (a branch
    cut short before its reply adds nothing). Order is kept; the first of equals wins."""
    kept: list[tuple[str, list[Message]]] = []
    for i, (leaf, messages) in enumerate(candidates):
        if not messages or messages == active[: len(messages)]:
            continue
        if any(messages == other[: len(messages)] for _, other in kept):
            continue
        longer = any(
            j != i and len(other) > len(messages) and other[: len(messages)] == messages
            for j, (_, other) in enumerate(candidates)
        )
        if not longer:
            kept.append((leaf, messages))
    return kept


def with_branches(
    base: Conversation,
    active: list[Message],
    others: list[tuple[str, list[Message]]] | None,
    current: str | None,
) -> list[Conversation]:
    """``base`` with the active branch's messages (when there are any), then each of
    ``others`` (leaf id, messages; None unless all branches were asked for) worth an item of
    its own (:func:`extra_branches`) except the leaf ``current``, as ``branch-<leaf>``."""
    out = [replace(base, messages=active)] if active else []
    for leaf, messages in extra_branches(active, others or []):
        if leaf != current:
            out.append(replace(base, messages=messages, branch=f"branch-{leaf}", leaf=leaf))
    return out


def parse_records(
    name: str,
    value: Any,
    title_key: str,
    convert: Callable[[dict[str, Any]], list[Conversation] | str],
) -> tuple[list[Conversation], list[str]]:
    """Each record of an export (a list, or one record) → its conversations, and warnings:
    a record that is not an object, that ``convert`` rejects (it returns why) or that keeps no
    message is skipped with a warning naming it (its number and title)."""
    out: list[Conversation] = []
    warnings: list[str] = []
    for index, record in enumerate(value if isinstance(value, list) else [value], start=1):
        label = f"{name}: conversation {index}{title_label(record, title_key)}"
        found = convert(record) if isinstance(record, dict) else "not a JSON object"
        if isinstance(found, str) or not found:
            warnings.append(f"{label}: {found or 'no visible messages'}; skipped")
        else:
            out.extend(found)
    return out, warnings


# --------------------------------------------------------------------------- redaction


def redaction_enabled(opts: AddOptions) -> bool:
    """``opts.redact`` when set, else ``params.add.redact_chats`` (default True)."""
    if opts.redact is not None:
        return bool(opts.redact)
    add = opts.params.get("add") if isinstance(opts.params, dict) else None
    return bool(add.get("redact_chats", True)) if isinstance(add, dict) else True


# --------------------------------------------------------------------------- rendering


# conversation.yaml is written by hand, not by PyYAML's emitter: its pure-Python emitter is
# ~20x slower than everything else on a large export, and libyaml's escapes emoji and folds
# differently, so output would depend on how PyYAML was built. The schema is tiny and fixed:
# strings are double-quoted (escapes as YAML defines them), or, when they span lines and every
# character may stand raw, ``|-`` literal blocks that read like the transcript.
_YAML_ESCAPE = re.compile(
    '[\\\\"\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]'
)
_YAML_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}
_BLOCK_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]|[ \t]$|[ \t]\n",
)


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    named = _YAML_NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def yaml_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (one line)."""
    return '"' + _YAML_ESCAPE.sub(_escape_char, text) + '"'


def _yaml_value(value: Any, indent: int) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if (
        "\n" in text
        and not text.startswith((" ", "\t", "\n"))
        and not text.endswith("\n")
        and not _BLOCK_UNSAFE.search(text)
    ):
        pad = " " * indent
        return "|-\n" + "\n".join(pad + line if line else "" for line in text.split("\n"))
    return yaml_quoted(text)


def render_yaml(metadata: dict[str, Any], messages: list[Message]) -> str:
    """``conversation.yaml`` in the seed-001 "Stage 2: Normalize" format (``yaml.safe_load``
    gives back exactly ``{"metadata": metadata, "messages": [...]}``)."""
    out = ["metadata:"]
    out += [f"  {key}: {_yaml_value(value, 4)}" for key, value in metadata.items()]
    if not messages:
        out.append("messages: []")
    else:
        out.append("messages:")
        for m in messages:
            out.append(f"- role: {_yaml_value(m.role, 4)}")
            out.append(f"  content: {_yaml_value(m.content, 4)}")
            out.append(f"  timestamp: {_yaml_value(m.timestamp, 4)}")
    return "\n".join(out) + "\n"


def render_transcript(title: str, messages: list[Message]) -> str:
    """``# <title>``, then per message ``### <role> · <time> UTC``, its content, a blank line."""
    blocks = [f"# {one_line(title)}\n"]
    for m in messages:
        when = human_time(m.timestamp)
        header = format_chat_header(m.role, when)
        blocks.append(f"{header}\n{m.content}\n")
    return "\n".join(blocks)


def source_id_for(
    conversation_id: str, leaf: str | None = None, *, shown: str | None = None
) -> str:
    """Folder-name suffix: the conversation id (first 36 characters); ids with unsafe
    characters, and extra branches, get a readable prefix (from ``shown``, the redacted id,
    when given) plus 8 hex of a digest of the id."""
    shown = conversation_id if shown is None else shown
    if leaf is None and shown == conversation_id and _SAFE_ID.match(conversation_id):
        return conversation_id[:MAX_SOURCE_ID]
    safe = re.sub(r"[^A-Za-z0-9_\-]+", "_", shown).strip("_-") or "chat"
    key = conversation_id if leaf is None else f"{conversation_id}#{leaf}"
    return f"{safe[: MAX_SOURCE_ID - 9]}-{sha256_hex(key.encode('utf-8'))[:8]}"


def messages_hash(messages: list[Message]) -> str:
    """``sha256:`` of the canonical JSON of the normalized messages."""
    return digest(canonjson.dumps([m.to_dict() for m in messages]).encode("utf-8"))


def build_acquired(conv: Conversation, *, redact_on: bool) -> Acquired:
    """Redact (when on), render and package one conversation."""
    messages = [Message(m.role, fix_surrogates(m.content), m.timestamp) for m in conv.messages]
    title = one_line(drop_private_use(fix_surrogates(conv.title)))
    raw = fix_surrogates_in(conv.raw)
    counts: dict[str, int] = {}
    cid = shown_cid = conv.conversation_id
    if redact_on:
        shown_cid = scrub(cid)
        cleaned, counts = redact_many([m.content for m in messages] + [title])
        for m, content in zip(messages, cleaned, strict=False):
            m.content = content
        title = cleaned[-1]
        raw = redact_json(raw)
    if not title:
        first = next((m.content for m in messages if m.role == "human"), "")
        title = one_line(first)[:TITLE_FALLBACK_CHARS].rstrip() or "Untitled conversation"
    if conv.leaf is not None:
        title = f"{title} (branch {conv.leaf[:8]})"

    canonical = f"{conv.platform}:{cid}"
    if conv.leaf is not None:
        canonical += f"#branch-{conv.leaf}"
    created = conv.created
    if created is None:
        created = next((m.timestamp for m in messages if m.timestamp), None)
    updated = conv.updated
    if updated is None:
        updated = next((m.timestamp for m in reversed(messages) if m.timestamp), None)
    folder = f"chats/{conv.platform}/{created[:4]}/{created[5:7]}" if created else None

    metadata = {
        "chat_id": shown_cid,
        "platform": conv.platform,
        "title": title,
        "created": created,
        "updated": updated,
        "message_count": len(messages),
        "branch": conv.branch,
    }
    files = {
        "conversation.yaml": render_yaml(metadata, messages).encode("utf-8"),
        "transcript.md": render_transcript(title, messages).encode("utf-8"),
        "source.json": canonjson.dumps(raw).encode("utf-8"),
    }
    url_form = _URLS.get(conv.platform)
    meta: dict[str, Any] = {
        "platform": conv.platform,
        "conversation_id": shown_cid,
        "created": created,
        "updated": updated,
        "message_count": len(messages),
        "branch": conv.branch,
        "redactions": counts,
    }
    return Acquired(
        canonical=canonical,
        source_id=source_id_for(cid, conv.leaf, shown=shown_cid),
        title=title,
        content_type=folder or f"chats/{conv.platform}/undated",
        files=files,
        url=url_form.format(id=quote(shown_cid, safe="-_.")) if url_form else None,
        meta=meta,
        timed=False,
        source_format=conv.platform,
        content_hash=messages_hash(messages),
    )


def title_label(record: Any, key: str) -> str:
    """`` ('Short title')`` for warnings about a record (redacted, 60 characters), or ``""``."""
    title = record.get(key) if isinstance(record, dict) else None
    if not isinstance(title, str) or not title.strip():
        return ""
    short = redact(" ".join(title.split())[:60])[0]
    return f" ({short!r})"
