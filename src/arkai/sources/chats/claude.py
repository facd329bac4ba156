"""Claude.ai export (``conversations.json``): a list of conversations with ``uuid``, ``name``,
``created_at``, ``updated_at`` and ``chat_messages``.

Which branch
    When every message carries ``parent_message_uuid`` and the links form a tree, the kept branch
    is the chain of parents ending at the newest message (``created_at``; the later one in the
    list on a tie), which is what claude.ai shows after a retry or an edit. Without those links
    (older exports) the messages are kept in list order. With ``all_branches``, every other
    leaf's chain becomes an extra conversation, branch ``branch-<leaf uuid>`` (same filter as
    ChatGPT: not empty, not a repeat, not only a prefix of another branch).

How a message reads
    * ``content`` blocks, when the message has any, in order, separated by a blank line:
      ``text`` kept; ``tool_use`` as one line ``[tool_use <name>] <input as JSON>`` (cut at
      200 characters with ``…``); ``tool_result`` its text (``[image]`` for images); ``image``
      as ``[image]``.
    * Otherwise (old-style messages) the ``text`` field.
    * Then each attachment as ``[attachment: <file_name>]`` followed by its
      ``extracted_content``, and each file not already listed as ``[file: <file_name>]``.
    * A message whose blocks are all tool results has the role ``tool``.

Which messages are skipped
    * ``thinking``/``redacted_thinking`` blocks (the model's private reasoning, not the reply);
    * senders other than ``human``/``assistant``;
    * messages left empty (blank text, no attachments).

Records without a ``uuid``, without a ``chat_messages`` list, or with no message kept are
skipped with a warning.
"""

from __future__ import annotations

import json
from typing import Any

from arkai.sources.chats.common import (
    Conversation,
    Message,
    chain_to,
    clean_text,
    iso_from_string,
    join_parts,
    parse_records,
    with_branches,
)

ROLES = {"human": "human", "assistant": "assistant"}
TOOL_INPUT_CHARS = 200
_KNOWN_BLOCKS = frozenset(
    {"text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image", "document"}
)


def parse_claude(
    name: str, value: Any, *, all_branches: bool = False
) -> tuple[list[Conversation], list[str]]:
    """Conversations (kept branch, plus extra branches when asked) and skip warnings."""

    def convert(record: dict[str, Any]) -> list[Conversation] | str:
        uuid = record.get("uuid")
        if not isinstance(uuid, str) or not uuid.strip():
            return "no conversation id ('uuid')"
        messages = record.get("chat_messages")
        if not isinstance(messages, list):
            return "no 'chat_messages' list"
        return _conversations(uuid.strip(), record, messages, all_branches=all_branches)

    return parse_records(name, value, "name", convert)


def _conversations(
    uuid: str, record: dict[str, Any], raw_messages: list[Any], *, all_branches: bool
) -> list[Conversation]:
    entries: dict[str, dict[str, Any]] = {}
    order: dict[str, int] = {}
    for i, m in enumerate(raw_messages):
        if not isinstance(m, dict):
            continue
        mid = m.get("uuid")
        key = mid if isinstance(mid, str) and mid and mid not in entries else f"#{i}"
        entries[key] = m
        order[key] = i

    parents: dict[str, str | None] = {}
    for key, m in entries.items():
        parent = m.get("parent_message_uuid")
        parents[key] = parent if isinstance(parent, str) and parent in entries else None
    linked = bool(entries) and all(
        isinstance(m.get("parent_message_uuid"), str) for m in entries.values()
    )
    linked = linked and any(p is not None for p in parents.values())

    def newest(keys: list[str]) -> list[str]:
        return sorted(
            keys, key=lambda k: (iso_from_string(entries[k].get("created_at")) or "", order[k])
        )

    leaves: list[str] = []
    if linked:
        has_child = {p for p in parents.values() if p is not None}
        leaves = newest([k for k in entries if k not in has_child])
        last = newest(list(entries))[-1]
        active = _render(entries, chain_to(parents, last))
    else:
        last = None
        active = _render(entries, list(entries))

    title = record.get("name")
    base = Conversation(
        "claude", uuid, title if isinstance(title, str) else "",
        iso_from_string(record.get("created_at")), iso_from_string(record.get("updated_at")),
        [], record,
    )  # fmt: skip
    others = None
    if linked and all_branches:
        others = [(leaf, _render(entries, chain_to(parents, leaf))) for leaf in leaves]
    return with_branches(base, active, others, last)


def _render(entries: dict[str, dict[str, Any]], keys: list[str]) -> list[Message]:
    return [m for m in (render_message(entries[key]) for key in keys) if m is not None]


def render_message(message: dict[str, Any]) -> Message | None:
    """One Claude message as kept, or None when the rules above skip it."""
    role = ROLES.get(str(message.get("sender")))
    if role is None:
        return None
    pieces: list[str] = []
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    kinds: set[str] = set()
    if any(b.get("type") in _KNOWN_BLOCKS for b in blocks):
        for block in blocks:
            text = _block_text(block)
            if text:
                pieces.append(text)
                kinds.add(str(block.get("type")))
    elif isinstance(message.get("text"), str):
        pieces.append(message["text"])
        kinds.add("text")
    if kinds == {"tool_result"}:
        role = "tool"

    named: set[str] = set()
    attachments = message.get("attachments")
    for att in attachments if isinstance(attachments, list) else []:
        if not isinstance(att, dict):
            continue
        fname = _file_name(att.get("file_name")) or "attachment"
        named.add(fname)
        extracted = att.get("extracted_content")
        body = clean_text(extracted) if isinstance(extracted, str) else ""
        pieces.append(f"[attachment: {fname}]" + (f"\n{body}" if body else ""))
    files = message.get("files")
    for item in files if isinstance(files, list) else []:
        fname = _file_name(item.get("file_name") if isinstance(item, dict) else item)
        if fname and fname not in named:
            named.add(fname)
            pieces.append(f"[file: {fname}]")

    text = join_parts(pieces)
    if not text:
        return None
    return Message(role, text, iso_from_string(message.get("created_at")))


def _file_name(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return clean_text(block["text"]) if isinstance(block.get("text"), str) else ""
    if kind == "tool_use":
        name = block.get("name") if isinstance(block.get("name"), str) else "tool"
        payload = json.dumps(block.get("input"), ensure_ascii=False, sort_keys=True)
        if len(payload) > TOOL_INPUT_CHARS:
            payload = payload[:TOOL_INPUT_CHARS] + "…"
        return f"[tool_use {' '.join(str(name).split())}] {payload}"
    if kind == "tool_result":
        return _result_text(block.get("content"))
    if kind == "image":
        return "[image]"
    return ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return clean_text(content)
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            if item.get("type") == "image":
                parts.append("[image]")
            elif isinstance(item.get("text"), str):
                parts.append(item["text"])
    return join_parts(parts)
