"""The one token counter arkai uses (context packs, condense chunks, shards, answers).

A stated rule, not a model's tokenizer, so it needs nothing downloaded and gives the same
number everywhere: one token per four characters of text, rounded up. For English prose this
is close to what BPE tokenizers of current LLMs count (within about ±15 %), and it errs on the
side of more tokens for code and URLs.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def count_tokens(text: str) -> int:
    """Tokens in ``text`` by the rule above (``""`` → 0)."""
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    """Tokens of a text of ``chars`` characters (for callers that add lengths up)."""
    return math.ceil(chars / CHARS_PER_TOKEN)
