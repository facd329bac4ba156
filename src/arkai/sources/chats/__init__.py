"""AI-chat exports (DESIGN §6): ChatGPT, Claude and Gemini become one item per conversation.

Inputs: ChatGPT ``conversations.json`` (a list, or one conversation object), a Claude.ai export,
a Gemini Takeout "My Activity" JSON, or any of these inside a ``.zip`` export (read in memory).
Each conversation becomes an :class:`~arkai.sources.base.Acquired` with three files:

``conversation.yaml``
    the seed-001 normalized form: ``metadata`` (chat_id, platform, title, created, updated,
    message_count, branch) and ``messages`` (role, content, timestamp).
``transcript.md``
    ``# <title>``, then per message a header ``### <role> · <YYYY-MM-DD HH:MM:SS UTC>`` (no time
    when unknown), the content exactly as in the YAML, and a blank line — so every message's
    content occurs verbatim and claims can ground to it.
``source.json``
    the conversation's JSON as exported (canonical JSON; for Gemini, the day's records).

Redaction (``arkai.core.redact``) runs before any file is built — on each message, the title and
every string in ``source.json`` — when ``opts.redact`` is True, or when it is None and
``params.add.redact_chats`` is true (the default). ``meta["redactions"]`` counts what was
replaced in the messages and title (the copies in ``source.json`` are not counted twice).

Warnings: records that cannot become a conversation (no id, no messages, a broken time…) are
skipped, never fatal. :func:`parse_chat_export` and
:meth:`ChatExportSource.acquire_with_warnings` return ``(items, warnings)``;
:meth:`ChatExportSource.acquire` (the plain ``Source`` protocol) drops the warnings. Per-platform
rules are in the docstrings of ``chatgpt``, ``claude`` and ``gemini``.
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

from arkai.adapters.fs import read_input_file
from arkai.core.canonjson import kind_of
from arkai.errors import InvalidInputError, SourceFormatError
from arkai.sources.base import Acquired, AddOptions
from arkai.sources.chats.archive import detect_zip_file, read_chat_members
from arkai.sources.chats.chatgpt import parse_chatgpt
from arkai.sources.chats.claude import parse_claude
from arkai.sources.chats.common import (
    PLATFORMS,
    Conversation,
    Message,
    build_acquired,
    redaction_enabled,
)
from arkai.sources.chats.detect import (
    EMPTY_ZIP_MAGIC,
    ZIP_MAGIC,
    detect_chat_export,
    detect_value,
)
from arkai.sources.chats.gemini import html_to_text, parse_gemini

__all__ = [
    "PLATFORMS",
    "ChatExportSource",
    "Conversation",
    "Message",
    "detect_chat_export",
    "html_to_text",
    "parse_chat_export",
    "parse_conversations",
]

EXTENSIONS = (".json", ".zip")
ACCEPTED = (
    "accepted: a ChatGPT conversations.json (a list of objects with 'mapping' and "
    "'current_node', or one such object), a Claude.ai export (a list of objects with "
    "'chat_messages'), a Gemini Takeout My Activity JSON (a list of objects with 'header', "
    "'title', 'time'), or a .zip export holding one of these"
)


def decode_json(name: str, data: bytes) -> Any:
    """Parse UTF-8 JSON bytes (a UTF-8 BOM is allowed), naming ``name`` in every error."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        encoding: str | None = "UTF-32"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in data[:4]:
        encoding = "UTF-16"
    else:
        encoding = None
    if encoding:
        raise SourceFormatError(
            f"{name}: is {encoding} encoded; chat exports must be UTF-8 JSON",
            hint="re-save the file as UTF-8",
        )
    try:
        text = data.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceFormatError(
            f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "chat exports must be UTF-8 JSON"
        ) from None
    if not text.strip():
        raise SourceFormatError(f"{name}: file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceFormatError(
            f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise SourceFormatError(f"{name}: not valid JSON (nested too deeply)") from None


def parse_conversations(
    name: str, value: Any, *, platform: str | None = None, all_branches: bool = False
) -> tuple[list[Conversation], list[str]]:
    """Parsed export JSON → conversations (before redaction/rendering) and skip warnings.

    ``platform`` forces the parser; by default it is told from the JSON's shape. Raises
    SourceFormatError naming ``name`` for a shape no platform writes, or an empty list.
    """
    if isinstance(value, list) and not value:
        raise SourceFormatError(f"{name}: the export is an empty list; no conversations in it")
    chosen = platform or detect_value(value)
    if chosen is None or not isinstance(value, list | dict):
        raise SourceFormatError(
            f"{name}: not a chat export (top level is {kind_of(value)}); {ACCEPTED}"
        )
    if chosen == "chatgpt":
        return parse_chatgpt(name, value, all_branches=all_branches)
    if chosen == "claude":
        return parse_claude(name, value, all_branches=all_branches)
    if chosen == "gemini":
        return parse_gemini(name, value)
    raise InvalidInputError(
        f"{name}: unknown chat platform {chosen!r}; known: {', '.join(PLATFORMS)}"
    )


def parse_chat_export(
    name: str,
    data: bytes,
    opts: AddOptions,
    *,
    platform: str | None = None,
    max_bytes: int | None = None,
) -> tuple[list[Acquired], list[str]]:
    """A chat export's bytes (JSON or ZIP) → one item per conversation, and skip warnings.

    ``name`` starts every error and warning; ``max_bytes`` bounds what a ZIP member may inflate
    to (default: ``params.add.max_file_mb``). Items come in export order; a conversation seen
    twice (same canonical ref) is kept once.
    """
    limit = max_bytes if max_bytes is not None else opts.max_bytes
    if data.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC)):
        sources = [
            (f"{name}:{member}", blob)
            for member, blob in read_chat_members(name, data, max_bytes=limit)
        ]
    else:
        sources = [(name, data)]
    redact_on = redaction_enabled(opts)
    items: list[Acquired] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for label, blob in sources:
        value = decode_json(label, blob)
        try:
            convs, found = parse_conversations(
                label, value, platform=platform, all_branches=opts.all_branches
            )
            built = [build_acquired(conv, redact_on=redact_on) for conv in convs]
        except RecursionError:
            raise SourceFormatError(f"{label}: JSON nested too deeply to read") from None
        warnings.extend(found)
        for item in built:
            if item.canonical not in seen:
                seen.add(item.canonical)
                items.append(item)
    return items, warnings


class ChatExportSource:
    """Source kind ``chat``: local ChatGPT / Claude / Gemini exports (``.json`` or ``.zip``).

    ``acquire_with_warnings`` returns ``(items, warnings)`` (``arkai add`` reports each warning
    as a skipped part of the input); ``acquire`` returns the items only.
    """

    name = "chat"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        if path is None or path.suffix.lower() not in EXTENSIONS:
            return False
        if detect_chat_export(path.name, head) is not None:
            return True
        if head.startswith(ZIP_MAGIC) and path.is_file() and not path.is_symlink():
            return detect_zip_file(path) is not None
        return False

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        return self.acquire_with_warnings(ref, path, opts)[0]

    def acquire_with_warnings(
        self, ref: str, path: Path | None, opts: AddOptions
    ) -> tuple[list[Acquired], list[str]]:
        if path is None:
            raise InvalidInputError(
                f"{ref}: chat exports are local files (.json or .zip), not URLs"
            )
        data = read_input_file(path, max_bytes=opts.max_bytes)
        return parse_chat_export(ref, data, opts, max_bytes=opts.max_bytes)
