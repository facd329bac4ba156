"""Words → one arkai command: the pure pieces that every layer of ``arkai do`` shares (seed
000, "Intent Routing"): URLs and tags in the words, the phrase key of learned routes, and the
shell syntax that is always refused.
"""

from __future__ import annotations

import re

__all__ = [
    "URL",
    "find_urls",
    "normalise_phrase",
    "shell_syntax",
    "split_tags",
]

URL = re.compile(r"https?://[^\s<>\"']+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""
# "tag it ai", "tagged ai, ml", "with tags ai and ml", "tags: ai" — up to the end of the words.
_TAGS = re.compile(
    r"(?:,\s*|\s+|^)(?:and\s+)?(?:with\s+)?(?:the\s+)?tag(?:s|ged)?(?:\s+(?:it|them|this|as|with))?"
    r"\s*:?\s+(?P<tags>[\w#][\w\s,#/+.-]*?)\s*[.!]?$",
    re.IGNORECASE,
)
_TAG_SPLIT = re.compile(r"\s*(?:,|\band\b|\s)\s*", re.IGNORECASE)
# What a shell would read as control: command separators, pipes, substitution, redirection.
_SHELL = re.compile(r";|&&|\|\||\||`|\$\(|\$\{|(?:^|\s)(?:>>?|<|2>|&)(?:\s|$)|\brm\s+-[a-z]*[rf]")


def find_urls(words: str) -> list[str]:
    """The http(s) URLs in ``words``, trailing punctuation removed, in order, each once."""
    out: list[str] = []
    for m in URL.finditer(words):
        url = m.group(0).rstrip(_TRAILING)
        if url not in out:
            out.append(url)
    return out


def split_tags(words: str) -> tuple[str, list[str]]:
    """``words`` without a trailing tag phrase, and the tags it named (lower case, ``#``
    dropped, each once): ``"… tag it ai and ml"`` → ``("…", ["ai", "ml"])``."""
    m = _TAGS.search(words)
    if m is None:
        return words, []
    tags: list[str] = []
    for t in _TAG_SPLIT.split(m.group("tags")):
        t = t.strip().lstrip("#").rstrip(_TRAILING).lower()
        if t and t not in tags:
            tags.append(t)
    return words[: m.start()].rstrip(" ,"), tags


def normalise_phrase(words: str) -> str:
    """The key of a learned route: lower case, whitespace collapsed, outer punctuation
    stripped."""
    return " ".join(words.lower().split()).strip(" .!?")


def shell_syntax(text: str) -> str | None:
    """The first piece of shell syntax in ``text`` (``;``, ``&&``, ``|``, `` ` ``, ``$(``,
    a redirection, ``rm -rf``), or ``None``."""
    m = _SHELL.search(text)
    return m.group(0).strip() if m else None
