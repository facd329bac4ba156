"""``arkai diff`` and ``review.yaml`` writing as pure functions, on in-memory snapshots."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from arkai.adapters.gitrepo import CommitInfo, ItemRef, list_items
from arkai.cli.diffrender import Links, render, render_markdown
from arkai.core.escape import md_escape
from arkai.core.hashing import digest
from arkai.ops.diff import (
    ClaimState,
    diff_claims,
    diff_entities,
    diff_snapshots,
    parse_review,
    review_for,
)
from arkai.ops.review import entry_line, set_entry, yaml_scalar

CID = "0123456789abcdef"
ITEM = "transcripts/Talk <b>one (01234567)"


class Mem:
    """A snapshot held in a dict: path → bytes (the working-tree flavour: no folder IDs)."""

    def __init__(self, files: dict[str, bytes], label: str = "mem") -> None:
        self.files = files
        self._label = label

    @property
    def label(self) -> str:
        return self._label

    @property
    def commit(self) -> CommitInfo | None:
        return None

    def read(self, path: str) -> bytes | None:
        return self.files.get(path)

    def file_ids(self, folder: str) -> dict[str, str]:
        pre = folder + "/"
        return {
            p[len(pre) :]: hashlib.sha1(d).hexdigest()
            for p, d in self.files.items()
            if p.startswith(pre)
        }

    def folder_id(self, folder: str) -> str | None:
        return None

    def subfolders(self, folder: str) -> list[str]:
        pre = folder + "/"
        return sorted({p[len(pre) :].split("/")[0] for p in self.files if p.startswith(pre)})

    def find(self, folder: str, name: str) -> list[str]:
        return sorted(p for p in self.file_ids(folder) if p.rsplit("/", 1)[-1] == name)


def evidence(
    transcript: bytes, quote: str, claim: str | None = None, **extra: Any
) -> dict[str, Any]:
    start = transcript.index(quote.encode())
    end = start + len(quote.encode())
    qsha = digest(quote.encode())
    line = {
        "id": hashlib.sha256(f"{quote}{start}".encode()).hexdigest()[:16],
        "content_id": CID,
        "claim": claim or quote,
        "quote": quote,
        "quote_sha256": qsha,
        "status": "resolved",
        "resolution": {"method": "exact", "match_count": 1, "match_rank": 1, "reason": None},
        "span": {
            "artifact": "transcript.md",
            "utf8_byte_offset": [start, end],
            "slice_sha256": digest(transcript[start:end]),
            "line": transcript.count(b"\n", 0, start) + 1,
        },
        "confidence": 0.9,
        "extractor": "extract_claims",
        "ts": "2001-01-01T00:00:00Z",
    }
    line.update(extra)
    return line


def snapshot(
    transcript: bytes,
    lines: list[dict[str, Any]],
    entities: dict[str, int],
    review: str | None = None,
    extracted_transcript: bytes | None = None,
) -> Mem:
    lib, ext = f"library/{ITEM}", f"extracted/{ITEM}"
    ents = [
        {"name": n, "type": "person", "mentions": [{"quote": n}] * count}
        for n, count in entities.items()
    ]
    files = {
        f"{lib}/metadata.json": json.dumps({"id": CID, "title": "Talk <b>one"}).encode(),
        f"{lib}/transcript.md": transcript,
        f"{ext}/evidence.jsonl": "".join(json.dumps(x) + "\n" for x in lines).encode(),
        f"{ext}/entities.json": json.dumps({"entities": ents}).encode(),
        f"{ext}/extraction.json": json.dumps(
            {"transcript_digest": digest(extracted_transcript or transcript)}
        ).encode(),
    }
    if review is not None:
        files[f"{lib}/review.yaml"] = review.encode()
    return Mem(files)


T1 = b"Intro line.\nBees fly far. Hives <script>alert(1)</script> hum.\nThe end.\n"


def test_items_are_found_by_metadata() -> None:
    snap = snapshot(T1, [], {})
    assert list_items(snap) == {CID: ItemRef(CID, ITEM, {})}
    assert list_items(snap)[CID].title == "Talk <b>one"


def test_unchanged_snapshots_have_no_diff() -> None:
    a = snapshot(T1, [evidence(T1, "Bees fly far.")], {"Amara": 1})
    d = diff_snapshots(a, a, left_rev="A", right_rev="B")
    assert d.empty and d.unchanged == 1 and d.items == []
    assert "no changes" in render(d, "text")
    assert "No changes to the library." in render(d, "markdown")


def test_claims_added_removed_changed_and_entities() -> None:
    keep = evidence(T1, "Bees fly far.")
    gone = evidence(T1, "The end.")
    left = snapshot(T1, [keep, gone], {"Amara": 1, "Rui": 2})
    new = evidence(T1, "Intro line.")
    changed = {**keep, "status": "ambiguous", "verdict": {"verdict": "grounded"}}
    review = f"claims:\n  {keep['id'][:8]}: {{status: rejected, by: ana}}\n"
    right = snapshot(T1, [changed, new], {"Amara": 3, "Zoë": 1}, review=review)
    d = diff_snapshots(left, right, left_rev="A", right_rev="B")
    (item,) = d.items
    assert item.state == "changed"
    assert [c.id for c in item.claims.added] == [new["id"]]
    assert [c.id for c in item.claims.removed] == [gone["id"]]
    ((_a, b, ch),) = item.claims.changed
    assert b.id == keep["id"]
    assert ch["status"] == ["resolved", "ambiguous"]
    assert ch["verdict"] == [None, "grounded"]
    assert ch["review"] == [None, {"status": "rejected", "by": "ana"}]
    assert item.entities.added == [("Zoë", "person", 1)]
    assert item.entities.removed == [("Rui", "person", 2)]
    assert item.entities.changed == [("Amara", "person", 1, 3)]
    assert {f["path"] for f in item.files} == {"review.yaml", "evidence.jsonl", "entities.json"}
    counts = d.counts()
    assert counts["claims"] == {"added": 1, "removed": 1, "changed": 1, "moved": 0}
    assert counts["entities"] == {"added": 1, "removed": 1, "changed": 1}


def test_an_edited_transcript_makes_spans_stale_and_moves_claims() -> None:
    line = evidence(T1, "Bees fly far.")
    left = snapshot(T1, [line], {})
    t2 = b"New first line.\n" + T1
    # Not re-extracted: same evidence, edited transcript → stale.
    stale = snapshot(t2, [line], {}, extracted_transcript=T1)
    (item,) = diff_snapshots(left, stale, left_rev="A", right_rev="B").items
    ((_a, _b, ch),) = item.claims.changed
    assert ch["valid"] == [True, False]
    assert item.right is not None and item.right.counts()["stale"] == 1
    assert item.right.digest_ok is False
    # Re-extracted: same quote and claim under a new ID → moved.
    moved = snapshot(t2, [evidence(t2, "Bees fly far.")], {})
    (item,) = diff_snapshots(left, moved, left_rev="A", right_rev="B").items
    assert not item.claims.added and not item.claims.removed
    ((a, b, ch),) = item.claims.moved
    assert (a.line, b.line) == (2, 3) and ch == {}


def test_added_and_removed_items() -> None:
    snap = snapshot(T1, [evidence(T1, "The end.")], {"Amara": 1})
    empty = Mem({})
    added = diff_snapshots(empty, snap, left_rev="A", right_rev="B")
    assert [i.state for i in added.items] == ["added"]
    assert len(added.items[0].claims.added) == 1
    removed = diff_snapshots(snap, empty, left_rev="A", right_rev="B")
    assert [i.state for i in removed.items] == ["removed"]
    assert removed.counts()["entities"]["removed"] == 1


def test_markdown_escapes_and_links() -> None:
    quote = "Hives <script>alert(1)</script> hum."
    snap = snapshot(T1, [evidence(T1, quote, claim="Hives *hum* [x](javascript:y) | <script>")], {})
    d = diff_snapshots(Mem({}), snap, left_rev="A", right_rev="B")
    md = render_markdown(d, link_base="https://github.com/o/r/blob/{rev}/")
    assert "<script>" not in md
    assert "&lt;script&gt;" in md
    assert "\\*hum\\*" in md and "\\[x\\]" in md and "\\|" in md
    assert "<summary><b>Talk &lt;b&gt;one</b>" in md
    assert md.count("<details>") == md.count("</details>") == 1
    url = "https://github.com/o/r/blob/HEAD/library/transcripts/Talk%20%3Cb%3Eone%20%2801234567%29/transcript.md?plain=1#L2"
    assert f"[L2]({url})" in md
    # Counts come first.
    assert md.index("**Items** 1 added") < md.index("<details>")


def test_markdown_limit() -> None:
    lines = [evidence(T1, q) for q in ("Intro line.", "Bees fly far.", "The end.")]
    d = diff_snapshots(Mem({}), snapshot(T1, lines, {}), left_rev="A", right_rev="B")
    md = render_markdown(d, limit=2)
    assert md.count("- **+** `") == 2 and "… 1 more" in md
    assert "… 1 more" not in render_markdown(d, limit=0)


def test_links() -> None:
    links = Links("https://x/blob/{rev}/", "kb", "aaa", None)
    assert links("library/a b/transcript.md", 3, "left") == (
        "https://x/blob/aaa/kb/library/a%20b/transcript.md?plain=1#L3"
    )
    assert links("library/t.md", None, "right") == "https://x/blob/HEAD/kb/library/t.md"
    assert Links("", "kb", None, None)("library/t.md", 1, "left") == "library/t.md#L1"


def test_md_escape() -> None:
    assert md_escape("a  b\n c") == "a b c"
    assert md_escape("<&>") == "&lt;&amp;&gt;"
    assert md_escape("`x` _y_ ~z~") == "\\`x\\` \\_y\\_ \\~z\\~"


def test_diff_claims_pairs_moves_in_order() -> None:
    def c(eid: str, start: int, claim: str = "same") -> ClaimState:
        return ClaimState(
            eid,
            claim,
            "sha256:q",
            "extract_claims",
            "resolved",
            (start, start + 4),
            1,
            "transcript.md",
            True,
            None,
            None,
        )

    d = diff_claims({"a": c("a", 0), "b": c("b", 10)}, {"x": c("x", 5), "y": c("y", 15)})
    assert [(a.id, b.id) for a, b, _ in d.moved] == [("a", "x"), ("b", "y")]
    d = diff_claims({"a": c("a", 0)}, {"x": c("x", 5, "other")})
    assert [x.id for x in d.removed] == ["a"] and [x.id for x in d.added] == ["x"]


def test_diff_entities_orders_by_type_then_name() -> None:
    d = diff_entities({}, {("b", "person"): 1, ("A", "person"): 2, ("z", "concept"): 1})
    assert [(n, t) for n, t, _ in d.added] == [("z", "concept"), ("A", "person"), ("b", "person")]


def test_parse_review_is_lenient_and_prefixes_match() -> None:
    assert parse_review(b"claims: [") == {}
    assert parse_review(b"- a\n") == {}
    got = parse_review(b"claims:\n  abcdef12: rejected\n  bad: {status: maybe}\n")
    assert got == {"abcdef12": {"status": "rejected"}}
    assert review_for(got, "abcdef1234567890") == {"status": "rejected"}
    assert review_for({"abc": {"status": "accepted"}}, "abc1234567") is None


# -- review.yaml writing ----------------------------------------------------------------------


def test_entry_line_matches_the_documented_format() -> None:
    entry = {"status": "rejected", "note": "misquotes the speaker", "by": "ana", "at": "2026-11-22"}
    assert entry_line("75cb019d446cb067", entry) == (
        '  75cb019d446cb067: {status: rejected, note: "misquotes the speaker", by: ana, '
        "at: 2026-11-22}"
    )
    assert entry_line("9f150a5cbb6c4973", {"status": "accepted"}) == (
        "  9f150a5cbb6c4973: {status: accepted}"
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", "claims:\n  bbbb: {status: accepted}\n"),
        ("# mine\n", "# mine\nclaims:\n  bbbb: {status: accepted}\n"),
        ("claims: {}\n", "claims:\n  bbbb: {status: accepted}\n"),
        ("x: 1\n", "x: 1\nclaims:\n  bbbb: {status: accepted}\n"),
        (
            "claims:\n  aaaa: {status: rejected}  # why\n  cccc: rejected\n",
            "claims:\n  aaaa: {status: rejected}  # why\n  bbbb: {status: accepted}\n"
            "  cccc: rejected\n",
        ),
        (
            "claims:\n    bbbb:\n      status: rejected\n      note: |\n"
            "        two\n        lines\n    # end\n",
            "claims:\n    bbbb: {status: accepted}\n    # end\n",
        ),
        (
            "claims:\n  aaaa: accepted\n  bbbb: {status: rejected}\n  zzzz: accepted",
            "claims:\n  aaaa: accepted\n  bbbb: {status: accepted}\n  zzzz: accepted",
        ),
        (
            "claims:\n  aaaa: accepted\n  zzzz: accepted",
            "claims:\n  aaaa: accepted\n  bbbb: {status: accepted}\n  zzzz: accepted",
        ),
        (
            "claims:\n  aaaa: accepted\n",
            "claims:\n  aaaa: accepted\n  bbbb: {status: accepted}\n",
        ),
    ],
)
def test_set_entry_changes_only_its_line(before: str, after: str) -> None:
    assert set_entry(before, "bbbb", {"status": "accepted"}, set()) == after


def test_set_entry_drops_a_replaced_prefix_key() -> None:
    text = "claims:\n  bbbb1111: rejected\n  cccc: accepted\n"
    out = set_entry(text, "bbbb1111cccc2222", {"status": "accepted"}, {"bbbb1111"})
    assert out == "claims:\n  bbbb1111cccc2222: {status: accepted}\n  cccc: accepted\n"


@given(st.text(max_size=40))
def test_yaml_scalar_round_trips(value: str) -> None:
    loaded = yaml.safe_load("{k: " + yaml_scalar(value) + "}")["k"]
    assert (loaded.isoformat() if hasattr(loaded, "isoformat") else str(loaded)) == value


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=20))
def test_entry_line_round_trips(note: str, by: str) -> None:
    entry = {"status": "rejected", "note": note, "by": by, "at": "2026-11-22"}
    text = set_entry("claims:\n  aaaa: accepted\n", "ffff000011112222", entry, set())
    got = parse_review(text.encode())
    assert got["ffff000011112222"] == entry and got["aaaa"] == {"status": "accepted"}


def test_markdown_stops_adding_items_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    import arkai.cli.diffrender as diff_mod

    lines = [evidence(T1, "Bees fly far.")]
    files: dict[str, bytes] = {}
    for n in range(3):
        snap = snapshot(T1, lines, {})
        for path, data in snap.files.items():
            path = path.replace("(01234567)", f"(0000000{n})")
            if path.endswith("metadata.json"):
                data = json.dumps({"id": f"{n:016x}", "title": f"T{n}"}).encode()
            files[path] = data
    d = diff_snapshots(Mem({}), Mem(files), left_rev="A", right_rev="B")
    assert len(d.items) == 3
    monkeypatch.setattr(diff_mod, "MARKDOWN_MAX_CHARS", 200)
    md = render_markdown(d)
    assert md.count("<details>") == 1 and "… 2 more items not shown" in md
