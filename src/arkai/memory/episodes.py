"""Episodes: every dated statement the library holds, in the order the replay reads them.

Extracted claims of every item (notes written with ``arkai remember`` are items too), each with
its evidence ID so a belief can show the byte-exact quotes behind it; only claims whose quote
resolved exactly count, and a claim a person rejected in review never does. Imported beliefs
(``memory/imported.jsonl``) are episodes too. The order is (date, item, position, id); an
item's date is its ``published`` date, else its ``created`` date, else when it was added.
"""

from __future__ import annotations

from collections.abc import Iterable

from arkai.adapters.layout import EVIDENCE, Item
from arkai.adapters.review import apply_review, load_item_review
from arkai.adapters.store import read_evidence
from arkai.core.itemdate import item_date
from arkai.model.belief import Episode


def item_episodes(item: Item) -> list[Episode]:
    """The episodes of one item: its exact, not-rejected claims."""
    lines = apply_review(read_evidence(item.extracted / EVIDENCE), load_item_review(item))
    day = (item_date(item.metadata) or "0000-00-00")[:10]
    out = []
    for line in lines:
        if not line.verified or line.rejected or line.span is None or not line.claim.strip():
            continue
        out.append(
            Episode(
                id=line.id,
                statement=line.claim.strip(),
                date=day,
                item=item.id,
                position=line.span.start,
                quote=line.quote,
            )
        )
    return out


def ordered(episodes: Iterable[Episode]) -> list[Episode]:
    """Time order: (date, item, position, id), duplicates of one ID dropped."""
    seen: dict[str, Episode] = {}
    for ep in episodes:
        seen.setdefault(ep.id, ep)
    return sorted(seen.values(), key=lambda e: (e.date, e.item or "", e.position, e.id))
