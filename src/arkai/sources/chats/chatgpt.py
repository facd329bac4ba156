"""ChatGPT ``conversations.json``: a list of conversations (or one conversation object), each
with a ``mapping`` tree of message nodes linked by ``parent``.

Which branch
    The active branch is the path from the root to ``current_node``, found by following
    ``parent`` links up from ``current_node`` (the branch the ChatGPT UI shows). Without a usable
    ``current_node``, the leaf whose message is newest is used. With ``all_branches``, every other
    leaf's root-to-leaf path becomes an extra conversation, branch ``branch-<leaf id>``, unless
    its kept messages are empty, repeat another branch, or are only a prefix of another branch
    (a regeneration that left nothing visible adds nothing).

Which messages are kept, and how they read
    * ``text``: the string parts, separated by a blank line.
    * ``multimodal_text``: string parts kept; an ``image_asset_pointer`` part becomes the line
      ``[image]``; an ``audio_transcription`` part keeps its text; other assets are dropped.
    * ``code``: a fenced code block (with the language when one is given).
    * ``execution_output``: a fenced block, as a ``tool`` message.
    * Any other content type from the user or the assistant keeps its string parts (or ``text``);
      from a tool it is dropped (browsing pages and widgets are noise).

Which messages are skipped
    * authors other than ``user``/``assistant``/``tool`` (``system`` prompts and the like);
    * messages marked ``metadata.is_visually_hidden_from_conversation`` (custom instructions,
      hidden scaffolding);
    * reasoning (``thoughts``, ``reasoning_recap``): the model's private scratch work, not part
      of the conversation as shown, and often long;
    * browsing internals (``tether_browsing_display``, ``tether_quote``, ``tether_browsing_code``,
      ``sonic_webpage``), memory/context blocks (``user_editable_context``,
      ``model_editable_context``) and ``system_error``;
    * messages left empty after all this (ChatGPT writes many empty placeholder nodes).

Records without an id (``conversation_id``/``id``), without a ``mapping`` object, or with no
message kept are skipped with a warning.
"""

from __future__ import annotations

import re
from typing import Any

from arkai.sources.chats.common import (
    Conversation,
    Message,
    chain_to,
    clean_text,
    fence,
    iso_from_epoch,
    iso_from_string,
    join_parts,
    parse_records,
    with_branches,
)

SKIPPED_TYPES = frozenset(
    {
        "thoughts",
        "reasoning_recap",
        "tether_browsing_display",
        "tether_browsing_code",
        "tether_quote",
        "sonic_webpage",
        "user_editable_context",
        "model_editable_context",
        "system_error",
    }
)
ROLES = {"user": "human", "assistant": "assistant", "tool": "tool"}
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.\-]{1,30}$")


def parse_chatgpt(
    name: str, value: Any, *, all_branches: bool = False
) -> tuple[list[Conversation], list[str]]:
    """Conversations (active branch, plus extra branches when asked) and skip warnings."""

    def convert(record: dict[str, Any]) -> list[Conversation] | str:
        cid = record.get("conversation_id") or record.get("id")
        if not isinstance(cid, str) or not cid.strip():
            return "no conversation id"
        mapping = record.get("mapping")
        if not isinstance(mapping, dict) or not mapping:
            return "no message tree ('mapping')"
        return _conversations(cid.strip(), record, mapping, all_branches=all_branches)

    return parse_records(name, value, "title", convert)


def _conversations(
    cid: str, record: dict[str, Any], mapping: dict[str, Any], *, all_branches: bool
) -> list[Conversation]:
    parents: dict[str, str | None] = {}
    for key, node in mapping.items():
        parent = node.get("parent") if isinstance(node, dict) else None
        parents[str(key)] = parent if isinstance(parent, str) and parent in mapping else None
    has_child = {p for p in parents.values() if p is not None}
    leaves = sorted((k for k in parents if k not in has_child), key=lambda k: _order(mapping, k))

    current = record.get("current_node")
    if not isinstance(current, str) or current not in parents:
        current = leaves[-1] if leaves else None
    if current is None:
        return []
    title = record.get("title") if isinstance(record.get("title"), str) else ""
    created, updated = (
        iso_from_epoch(record.get(key)) or iso_from_string(record.get(key))
        for key in ("create_time", "update_time")
    )
    base = Conversation("chatgpt", cid, str(title or ""), created, updated, [], record)
    others = None
    if all_branches:
        others = [(leaf, _messages(mapping, chain_to(parents, leaf))) for leaf in leaves]
    return with_branches(base, _messages(mapping, chain_to(parents, current)), others, current)


def _order(mapping: dict[str, Any], key: str) -> tuple[float, str]:
    node = mapping.get(key)
    message = node.get("message") if isinstance(node, dict) else None
    when = message.get("create_time") if isinstance(message, dict) else None
    if isinstance(when, bool) or not isinstance(when, int | float) or when != when:
        return (float("-inf"), key)
    return (float(when), key)


def _messages(mapping: dict[str, Any], path: list[str]) -> list[Message]:
    nodes = (mapping.get(key) for key in path)
    found = (render_message(n.get("message") if isinstance(n, dict) else None) for n in nodes)
    return [message for message in found if message is not None]


def render_message(message: Any) -> Message | None:
    """One ChatGPT message as kept, or None when the rules above skip it."""
    if not isinstance(message, dict):
        return None
    author = message.get("author")
    role = ROLES.get(str(author.get("role"))) if isinstance(author, dict) else None
    if role is None:
        return None
    meta = message.get("metadata")
    if isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"):
        return None
    content = message.get("content")
    if not isinstance(content, dict):
        return None
    ctype = content.get("content_type")
    if ctype in SKIPPED_TYPES:
        return None
    text: str
    if ctype in ("text", "multimodal_text"):
        text = _parts(content.get("parts"))
    elif ctype == "code":
        body = _text_field(content)
        language = content.get("language")
        if not isinstance(language, str) or not _LANGUAGE.match(language):
            language = ""
        text = fence(body, "" if language == "unknown" else language) if body else ""
    elif ctype == "execution_output":
        body = _text_field(content)
        text = fence(body) if body else ""
    elif role == "tool":
        return None
    else:
        text = _parts(content.get("parts"))
        text = text or _text_field(content)
    if not text:
        return None
    return Message(role, text, iso_from_epoch(message.get("create_time")))


def _text_field(content: dict[str, Any]) -> str:
    text = content.get("text")
    return clean_text(text) if isinstance(text, str) else ""


def _parts(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    kept: list[str] = []
    for part in parts:
        if isinstance(part, str):
            kept.append(part)
        elif isinstance(part, dict):
            kind = part.get("content_type")
            if kind == "image_asset_pointer":
                kept.append("[image]")
            elif isinstance(part.get("text"), str) and not str(kind).endswith("asset_pointer"):
                kept.append(part["text"])  # audio_transcription and other text-bearing parts
    return join_parts(kept)
