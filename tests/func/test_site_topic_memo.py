"""The site's memo of ``topics.json`` (arkai.site.topicmemo): a topic whose line did not change
is taken from what the last read made of it — and the topics and every item's first topics
are those a read without a memo gives, whatever changed: topics, entries, titles, the
catalog's chunk counts, the memo itself."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from arkai.search.topics import iter_topics_json
from arkai.site import build as site_build
from arkai.site import topicmemo

TERMS = [f"term {n:02d}" for n in range(40)] + ["café", 'quote " term']


def random_doc(rng: random.Random, ids: list[str]) -> dict[str, Any]:
    topics: dict[str, Any] = {}
    for term in rng.sample(TERMS, 30):
        entries = []
        for cid in rng.sample(ids, rng.randrange(1, len(ids))):
            chunks = sorted(rng.sample(range(9), rng.randrange(0, 9)))
            entries.append({"chunks": chunks, "content_id": cid,
                            "relevance": rng.choice(["high", "medium", "low"])})  # fmt: skip
        if rng.random() < 0.1:
            entries.append(dict(entries[0], relevance="low"))  # one item twice
        entries.sort(key=lambda e: (["high", "medium", "low"].index(str(e["relevance"])),
                                    str(e["content_id"])))  # fmt: skip
        topics[term] = {"items": entries}
    return {"synonyms": {"term 01": ["term 02"]}, "topics": topics, "version": 2}


def write(index: Path, doc: dict[str, Any], counts: dict[str, int]) -> None:
    index.mkdir(exist_ok=True)
    (index / "topics.json").write_bytes(b"".join(iter_topics_json(doc)))
    listed = [{"id": cid, "chunks": n} for cid, n in counts.items()]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": listed}))


def naive_per_item(doc: dict[str, Any], titles: dict[str, str], placed: set[str], cap: int) -> Any:
    """Every item's first ``cap`` terms of each relevance in term order, then its first
    ``cap`` of those, by definition."""
    ranked: dict[str, list[list[str]]] = {}
    for term in sorted(doc["topics"]):
        for e in doc["topics"][term]["items"]:
            cid = e["content_id"]
            if cid in placed and titles.get(cid) is not None:
                lists = ranked.setdefault(cid, [[], [], []])
                terms = lists[["high", "medium", "low"].index(e["relevance"])]
                if len(terms) < cap:
                    terms.append(term)
    out = {}
    for cid, lists in ranked.items():
        left, cut = cap, []
        for terms in lists:
            cut.append(tuple(terms[:left]))
            left -= len(cut[-1])
        out[cid] = tuple(cut)
    return out


def naming(index: Path, doc: dict[str, Any], cids: set[str]) -> set[str]:
    """The topics whose entries name one of ``cids``, and those whose line holds an escape."""
    lines = (index / "topics.json").read_text(encoding="utf-8").splitlines()
    escaped = {t for t in doc["topics"] if any(json.dumps(t) in ln and "\\" in ln for ln in lines)}
    return escaped | {
        term for term, value in doc["topics"].items()
        if any(e["content_id"] in cids for e in value["items"])
    }  # fmt: skip


def test_a_memo_gives_what_a_read_without_it_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_build, "MAX_TOPICS", 3)  # the cut bites
    rng = random.Random(4)
    ids = [f"{n:016x}" for n in range(12)]
    titles = {cid: f"Talk {rng.randrange(5)}" for cid in ids[:-1]}  # the last: gone
    counts = {cid: 9 for cid in ids[1:]}  # the first: not in the catalog
    index, memo = tmp_path / "index", tmp_path / "memo.bin"
    doc = random_doc(rng, ids)
    write(index, doc, counts)
    parsed: list[str] = []
    topic_line = site_build._topic_line

    def counted(line: str, offsets: Any) -> Any:
        got = topic_line(line, offsets)
        if got is not None:
            parsed.append(got[0])
        return got

    monkeypatch.setattr(site_build, "_topic_line", counted)

    def check(expect_parsed: set[str] | None) -> None:
        parsed.clear()
        plain = site_build._load_topics(index, titles)[:2]
        assert len(parsed) == len(doc["topics"])
        assert plain[1] == naive_per_item(doc, titles, set(counts), 3)
        parsed.clear()
        with_memo = site_build._load_topics(index, titles, memo)[:2]
        assert with_memo == plain
        if expect_parsed is not None:
            assert set(parsed) == expect_parsed
        assert memo.is_file()

    check(set(doc["topics"]))  # nothing kept yet
    check(set())  # every topic from the memo
    for _ in range(6):
        # Some topics' entries changed, one gone, one new; the catalog's counts moved
        # (every later item's chunk positions shift: the memo keeps the items' own numbers).
        changed = set(rng.sample(sorted(doc["topics"]), 3))
        fresh = random_doc(rng, ids)["topics"]
        for term in changed:
            doc["topics"][term] = next(iter(fresh.values()))
        gone = rng.choice(sorted(set(doc["topics"]) - changed))
        del doc["topics"][gone]
        new = next((t for t in TERMS if t not in doc["topics"]), None)
        if new is not None:
            doc["topics"][new] = fresh[next(iter(fresh))]
            changed.add(new)
        counts[rng.choice(sorted(counts))] = rng.randrange(1, 12)
        write(index, doc, counts)
        check(changed)
    # A title changed: the topics whose lines name the item are read again (and a line with
    # an escape, which could spell its ID); every other is kept.
    titles[ids[3]] = "Another title"
    check(naming(index, doc, {ids[3]}))
    check(set())
    # An item the catalog places now: likewise.
    counts[ids[0]] = 4
    write(index, doc, counts)
    check(naming(index, doc, {ids[0]}))
    check(set())
    # A talk added (the lines of its topics change: it is in them) and one removed whose lines
    # did not (an index older than the library): only the topics naming either are read.
    added = f"{99:016x}"
    titles[added], counts[added] = "A new talk", 5
    for term in rng.sample(sorted(doc["topics"]), 4):
        doc["topics"][term]["items"].append(
            {"chunks": [0, 2], "content_id": added, "relevance": "low"}
        )
    del titles[ids[5]]
    write(index, doc, counts)
    check(naming(index, doc, {added, ids[5]}))
    check(set())
    # More items changed than the memo follows: every topic read again.
    monkeypatch.setattr(topicmemo, "MAX_CHANGED", 1)
    titles[ids[6]], titles[ids[7]] = "Retitled", "Retitled too"
    check(set(doc["topics"]))
    check(set())
    # A damaged memo: not used.
    data = bytearray(memo.read_bytes())
    data[len(data) // 2] ^= 1
    memo.write_bytes(bytes(data))
    check(set(doc["topics"]))
    check(set())
    # Another layout (walked whole): the memo is neither used nor written.
    before = memo.read_bytes()
    text = (index / "topics.json").read_text().replace('  "topics": {\n', '  "topics":  {\n')
    (index / "topics.json").write_text(text)
    parsed.clear()
    assert (
        site_build._load_topics(index, titles, memo)[:2]
        == site_build._load_topics(index, titles)[:2]
    )
    assert parsed == [] and memo.read_bytes() == before
