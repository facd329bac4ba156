"""When an item happened, read from its metadata: the one date that search filters, shards,
condensed outputs and memory episodes order and filter by."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from typing import Any

#: ``published`` (videos, episodes, documents), else ``created`` (a chat's start), else when the
#: item was added to the library.
DATE_KEYS = ("published", "created", "created_at")
_DATE_PREFIX = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?")


def item_date(meta: Mapping[str, Any]) -> str | None:
    """The first non-empty text of :data:`DATE_KEYS` in ``meta``, as written; None if none."""
    for key in DATE_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def item_day(meta: Mapping[str, Any]) -> date | None:
    """The first of :data:`DATE_KEYS` that starts with a valid ``YYYY[-MM[-DD]]`` date."""
    for key in DATE_KEYS:
        value = meta.get(key)
        m = _DATE_PREFIX.match(value) if isinstance(value, str) else None
        if m:
            try:
                return date(int(m[1]), int(m[2] or 1), int(m[3] or 1))
            except ValueError:
                continue
    return None
