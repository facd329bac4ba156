"""The site's summary store (``arkai.site.store``): what the library-wide pages ask of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arkai.site.store import SummaryStore, stats_key


def summary(evidence: list[str], marked: list[str]) -> dict[str, Any]:
    return {"evidence": evidence, "marked": marked, "entities": [], "issues": [], "id": "x"}


def test_claim_owners_name_the_first_item_and_claim_of_each_id(tmp_path: Path) -> None:
    """An evidence ID held by several items (a copied claim) is owned by the least content id,
    at its first place there; marked says whether that claim's quote has a valid span. IDs
    no item holds are left out, and only the IDs asked for are answered."""
    with SummaryStore(tmp_path, {"v": 1}) as store:
        store.put("b-item", {}, summary(["e1", "e2", "e3"], ["e1", "e3"]))
        store.put("a-item", {}, summary(["e9", "e2", "e2"], ["e9"]))
        store.put("c-item", {}, summary(["e1", "e4"], []))
        assert store.claim_owners(["e1", "e2", "e3", "e4", "e5"]) == {
            "e1": ("b-item", True),
            "e2": ("a-item", False),
            "e3": ("b-item", True),
            "e4": ("c-item", False),
        }
        assert store.claim_owners(["e9"]) == {"e9": ("a-item", True)}
        assert store.claim_owners([]) == {}
        store.remove("b-item")
        assert store.claim_owners(["e1", "e3"]) == {"e1": ("c-item", False)}


def test_stored_records_share_their_keys(tmp_path: Path) -> None:
    """The slim summaries and cache entries read back hold one copy of each key for all items
    (``json.loads`` makes its own per call: more than half of a slim record's memory, which
    the site holds for every item), and read back equal to what was stored."""
    with SummaryStore(tmp_path, {"v": 1}) as store:
        for cid in ("a-item", "b-item"):
            store.put(cid, {"digest": f"d-{cid}", "stats": [[1, 2]]},
                      {**summary(["e1"], []), "id": cid, "title": f"T {cid}",
                       "created_at_somewhere_long": "2026"})  # fmt: skip
        got = list(store.entries())
    assert [g[0] for g in got] == ["a-item", "b-item"]
    (_, entry_a, slim_a), (_, entry_b, slim_b) = got
    assert {k: slim_a[k] for k in ("id", "title", "created_at_somewhere_long", "entity_count")} \
        == {"id": "a-item", "title": "T a-item", "created_at_somewhere_long": "2026",
            "entity_count": 0}  # fmt: skip
    assert entry_a == {"digest": "d-a-item", "stats": stats_key([[1, 2]])}
    for a, b in ((slim_a, slim_b), (entry_a, entry_b)):
        assert list(a) == list(b)
        assert all(x is y for x, y in zip(a, b, strict=True))
