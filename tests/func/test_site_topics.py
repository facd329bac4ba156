"""Topic pages on incremental builds (real ``mkdocs build --dirty``): a topic page is made
again only when what it shows changed — not when the chunk numbers in ``topics.json`` shift
(an item before them gained or lost a chunk) — only the chunks of the pages made again are
parsed, item pages are keyed without asking the summary store for every item's entities, and
the site equals a clean build's after every step; a forged page key or a missing page is not
trusted."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.adapters.chunkparts import ChunkParts, write_lines
from arkai.errors import ArkaiError, UnsafeFileError
from arkai.search.topics import iter_topics_json
from arkai.site import build as site_build
from arkai.site import indexes
from arkai.site.build import build_site, clean
from arkai.site.indexes import TopicEntry
from arkai.site.store import SummaryStore
from tests.conftest import Runner
from tests.func.test_site_build import item_dirs, make_repo
from tests.func.test_site_incremental import assert_as_clean_build, tree


def write_index(
    repo: Path,
    ids: list[str],
    texts: dict[tuple[str, int], str],
    pad: int,
    at: dict[tuple[str, int], int] | None = None,
    version: int = 2,
) -> None:
    """index/chunks/: ``pad`` chunks of another item first (they shift every position), then
    two chunks per item; topics.json: "alpha" on the first two items, "beta" on the last
    two, "gamma" on the third alone — each item's own chunk numbers, with catalog.json
    listing the items in the file's order (``version`` 1: positions in the file, as that
    version of topics.json held them)."""
    index = repo / "index"
    index.mkdir(exist_ok=True)
    rows: list[dict[str, Any]] = [
        {"content_id": ids[-1], "start_line": 1, "end_line": 1, "text": f"padding {n}"}
        for n in range(pad)
    ]
    where: dict[str, list[int]] = {}
    for cid in ids[:4]:
        for k in (0, 1):
            where.setdefault(cid, []).append(len(rows))
            text = texts.get((cid, k), f"words about alpha beta gamma in {cid} part {k}")
            line = (at or {}).get((cid, k), 1 + k)
            rows.append({"content_id": cid, "start_line": line, "end_line": line, "text": text})
    write_lines(index / "chunks", (json.dumps(r).encode() + b"\n" for r in rows))
    listed = [{"id": ids[-1], "chunks": pad}, *({"id": c, "chunks": 2} for c in ids[:4])]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": listed}))

    def entries(cids: list[str]) -> list[dict[str, Any]]:
        return [{"content_id": c, "relevance": "high",
                 "chunks": where[c] if version == 1 else [0, 1]} for c in cids]  # fmt: skip

    topics = {
        "alpha": {"items": entries(ids[:2])},
        "beta": {"items": entries(ids[2:4])},
        "gamma": {"items": entries(ids[2:3])},
    }
    (index / "topics.json").write_text(json.dumps({"version": version, "topics": topics,
                                                   "synonyms": {}}))  # fmt: skip


def topic_page(docs: Path, term: str) -> Path:
    return next((docs / "topics").glob(f"{term}-*.md"))


class Everyone(dict[str, str]):
    """Titles for a reader of the index alone: every item is known, titled by its ID."""

    def get(self, key: str, default: Any = None) -> str:  # type: ignore[override]
        return key


EVERYONE = Everyone()


def loaded_items(
    index: Path, titles: Mapping[str, str] = EVERYONE
) -> tuple[dict[str, list[TopicEntry]], dict[str, list[list[str]]]]:
    """``_load_topics`` seen whole: each topic's entries as its pages read them again, and
    each item's topics. Each topic's kept part is checked against its entries: its size, its
    distinct items, its first entries in page order and the digest of them all."""
    topics, per_item, again = site_build._load_topics(index, titles)
    items = {term: found for term, found in again(set(topics))}
    assert set(items) == set(topics)
    for term, topic in topics.items():
        order = indexes.topic_order(indexes.known_entries(items[term], titles), titles)
        assert topic.size == len(order) and topic.count == len({e.content_id for e in order})
        assert topic.top == order[: indexes.TOPIC_SAID_ITEMS]
        assert topic.listing == indexes.listing_digest(order, titles, {})
    pairs = {cid: [list(pair) for pair in site_build.item_topics(v)] for cid, v in per_item.items()}
    return {t: indexes.known_entries(i, titles) for t, i in items.items()}, pairs


def streamed(path: Path, offsets: Mapping[str, int] | None) -> Any:
    """What the line reader gives: the topics by term, synonyms and version (None: not the
    writer's layout)."""
    got: dict[str, list[TopicEntry]] = {}
    result = site_build._drain(
        site_build._each_topic(path, offsets), lambda term, items, _: got.__setitem__(term, items)
    )
    return None if result is None else (got, *result)


def test_topic_pages_follow_what_they_show_not_chunk_numbers(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, arkai)
    ids = sorted(item_dirs(repo))
    assert len(ids) >= 5
    write_index(repo, ids, {}, pad=0)
    assert build_site(repo).mkdocs == "full"
    docs, site, build = repo / ".site-build" / "docs", repo / "site", repo / ".site-build"
    pages = {t: topic_page(docs, t) for t in ("alpha", "beta", "gamma")}
    before = {t: (p.read_bytes(), p.stat().st_mtime_ns) for t, p in pages.items()}

    made: list[str] = []
    loaded: list[set[int]] = []
    entity_reads: list[str] = []
    real_page, real_load = indexes._topic_page, site_build._load_chunks
    real_keys = SummaryStore.item_entity_keys
    monkeypatch.setattr(indexes, "_topic_page", lambda lib, t, order, src: made.append(t.term)
                        or real_page(lib, t, order, src))  # fmt: skip
    monkeypatch.setattr(site_build, "_load_chunks", lambda index, wanted: loaded.append(
        set(wanted)) or real_load(index, wanted))  # fmt: skip
    monkeypatch.setattr(SummaryStore, "item_entity_keys", lambda self, cid: entity_reads.append(
        cid) or real_keys(self, cid))  # fmt: skip

    # Nothing changed: no topic page is made, no chunk parsed, no item's entities read.
    assert build_site(repo).mkdocs == "dirty"
    assert made == [] and loaded == [] and entity_reads == []

    # Three chunks inserted before all others: every chunk position shifts (and
    # every chunk number of a version 1 topics.json), what the pages show does not. None is
    # made again; each keeps its bytes and its time.
    write_index(repo, ids, {}, pad=3)
    build_site(repo)
    assert made == [] and loaded == []
    assert {t: (p.read_bytes(), p.stat().st_mtime_ns) for t, p in pages.items()} == before
    write_index(repo, ids, {}, pad=3, version=1)
    build_site(repo)
    assert made == [] and loaded == []
    assert {t: (p.read_bytes(), p.stat().st_mtime_ns) for t, p in pages.items()} == before

    # A line appended to the first item's transcript: its passages are where they were, so
    # no topic page is made again (only the item's own pages are).
    items = item_dirs(repo)
    transcript = items[ids[0]] / "transcript.md"
    transcript.write_bytes(transcript.read_bytes() + b"An appended closing line.\n")
    assert build_site(repo).items_regenerated == 1
    assert made == [] and loaded == []
    # A chunk of the second item one line past its transcript's end is not shown; once a line
    # is appended there it is: "alpha" is made again and shows it.
    lines = len((items[ids[1]] / "transcript.md").read_bytes().splitlines())
    late = {(ids[1], 1): lines + 1}
    write_index(repo, ids, {(ids[1], 1): "Zqxlate alpha words."}, pad=3, at=late)
    build_site(repo)
    assert made == ["alpha"]
    alpha_html = site / pages["alpha"].relative_to(docs).with_suffix("") / "index.html"
    assert "Zqxlate" not in alpha_html.read_text()
    made.clear()
    transcript = items[ids[1]] / "transcript.md"
    transcript.write_bytes(transcript.read_bytes() + b"Zqxlate alpha words.\n")
    build_site(repo)
    assert made == ["alpha"] and "Zqxlate" in alpha_html.read_text()
    made.clear()
    write_index(repo, ids, {}, pad=3)
    build_site(repo)
    assert made == ["alpha"]
    assert {t: p.read_bytes() for t, p in pages.items()} == {t: b for t, (b, _) in before.items()}
    made.clear()
    loaded.clear()
    alpha_time = pages["alpha"].stat().st_mtime_ns

    # One chunk of the third item says something new: the two topics that show it are made
    # again (only their chunks parsed), the other one is left alone.
    write_index(repo, ids, {(ids[2], 0): "Zqxtopic beta gamma is new here."}, pad=3)
    build_site(repo)
    assert sorted(made) == ["beta", "gamma"]
    assert len(loaded) == 1 and loaded[0] == {3 + 4, 3 + 5, 3 + 6, 3 + 7}
    assert pages["alpha"].stat().st_mtime_ns == alpha_time
    for term in ("beta", "gamma"):
        html = (site / pages[term].relative_to(docs).with_suffix("") / "index.html").read_text()
        assert "Zqxtopic" in html, term
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert any(d["title"] == "gamma" and d["location"].startswith("topics/") for d in
               index["docs"])  # fmt: skip

    # A forged key in the store (the page's row says another key) and a missing page are
    # not trusted: both pages are made again, with the bytes they had.
    made.clear()
    db = sqlite3.connect(build / "summaries.sqlite")
    with db:
        n = db.execute("UPDATE pages SET key = 'forged' WHERE src = ?",
                       (pages["alpha"].relative_to(docs).as_posix(),)).rowcount  # fmt: skip
    db.close()
    assert n == 1
    alpha, beta = pages["alpha"].read_bytes(), pages["beta"].read_bytes()
    pages["beta"].unlink()
    build_site(repo)
    assert sorted(made) == ["alpha", "beta"]
    assert pages["alpha"].read_bytes() == alpha and pages["beta"].read_bytes() == beta

    # Every step above equals a clean build of the same inputs, file for file.
    assert_as_clean_build(repo, docs, build, site, monkeypatch)


def test_item_pages_follow_entity_pages_when_entities_need_more_items(
    tmp_path: Path, arkai: Runner
) -> None:
    """``site.entity_min_items`` above 1: which of an item's entities have a page depends on
    other items, so the item page's key names them (read from the store) — an incremental
    build still equals a clean one after the threshold changes."""
    repo = make_repo(tmp_path, arkai)
    params = repo / "params.yaml"
    build_site(repo)
    obj = yaml.safe_load(params.read_text())
    obj.setdefault("site", {})["entity_min_items"] = 2
    params.write_text(yaml.safe_dump(obj))
    build_site(repo)
    docs, site = repo / ".site-build" / "docs", repo / "site"
    got_docs, got_site = tree(docs), tree(site)
    clean(repo)
    build_site(repo)
    assert tree(docs) == got_docs and tree(site) == got_site


def test_chunk_line_numbers_are_read_from_the_line_not_from_its_text() -> None:
    """A topic page's key reads a chunk's start and end line without parsing it: a text that
    quotes the field names is not taken for them, and a line without them gives None."""
    text = 'said "start_line": 99, then "end_line": 7}'
    line = json.dumps({"key": "k", "start_line": 3, "end_line": 5, "text": text}).encode()
    assert site_build._line_number(site_build._START_LINE, line) == 3
    assert site_build._line_number(site_build._END_LINE, line) == 5
    compact = json.dumps({"text": text, "start_line": 3}, separators=(",", ":")).encode()
    assert site_build._line_number(site_build._START_LINE, compact) == 3
    assert site_build._line_number(site_build._END_LINE, compact) is None
    assert site_build._line_number(site_build._START_LINE, b'{"start_line": null}') is None


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 1, "topics": {"a": {"items": [{"content_id": "x", "chunks": [1, 2, 3,'
        ' 4, 5, 6, 7, true, "8"]}]}, "b": {"items": []}}, "synonyms": {"a": ["aa"]}}',
        # A repeated term and a repeated "topics": the last of each, as json.loads sees them.
        '{"topics": {"a": {"items": [{"content_id": "x"}]}}, "topics": {"b": {"items": '
        '[{"content_id": "y", "relevance": "high", "chunks": [0]}]}, "b": {"items": '
        '[{"content_id": "z", "relevance": "odd"}]}}}',
        '{"topics": [1, 2], "synonyms": {}}',
        ' \n{ "synonyms" : {"a": ["b"]} ,\n "topics" : { "a" : {"items": [{"content_id": "q",'
        ' "chunks": [9]}, 5, {"content_id": 3}]} } }\n',
        "{}",
        # As the index stage writes it (compact entries, keys sorted: read without decoding),
        # an item the catalog does not list among them.
        '{"synonyms": {}, "topics": {\n"a": {"items":[{"chunks":[0,2],"condensed_chunks":[1],'
        '"content_id":"x","relevance":"high"},{"chunks":[],"content_id":"y","relevance":"low"},'
        '{"chunks":[1,2,3,4,5,6,7,8],"content_id":"q","relevance":"medium"},{"chunks":[3],'
        '"content_id":"gone","relevance":"low"}]},\n"b": {"items":[]}}, "version": 2}',
        # Entries the pattern does not take after one it does, in the same topic: an escaped
        # ID, an unknown relevance, a negative or zero-led number, another key, a space.
        *(
            '{"topics": {"a": {"items":[{"chunks":[1],"content_id":"x","relevance":"high"},'
            + entry
            + ']}}, "version": 2}'
            for entry in (
                '{"chunks":[2],"content_id":"\\u0079","relevance":"low"}',
                '{"chunks":[2],"content_id":"y","relevance":"odd"}',
                '{"chunks":[-1,2],"content_id":"y","relevance":"low"}',
                '{"chunks":[0,2,07],"content_id":"y","relevance":"low"}',
                '{"chunks":[2],"content_id":"y","relevance":"low","x":1}',
                '{"chunks": [2],"content_id":"y","relevance":"low"}',
                '{"content_id":"y","relevance":"low"}',
            )
        ),
    ],
)
def test_topics_are_read_one_topic_at_a_time_as_a_whole_parse_reads_them(
    tmp_path: Path, text: str
) -> None:
    """The streamed reader of topics.json gives what parsing the whole file gives."""
    index = tmp_path / "index"
    index.mkdir()
    (index / "topics.json").write_text(text)
    listed = [{"id": c, "chunks": 10} for c in ("x", "y", "z", "q")]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": listed}))
    offsets = {"x": 0, "y": 10, "z": 20, "q": 30}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:  # a zero-led number: the file is not JSON, and is named
        assert site_build._walk_topics(text, offsets) is None
        with pytest.raises(ArkaiError, match=r"topics\.json"):
            site_build._load_topics(index, EVERYONE)
        return
    raw = obj.get("topics") if isinstance(obj.get("topics"), dict) else {}
    for given in (None, offsets):
        walked = site_build._walk_topics(text, given)
        assert walked is not None
        assert walked == ({t: site_build._topic_items(e, given) for t, e in raw.items()},
                          obj.get("synonyms"), obj.get("version"))  # fmt: skip
    items, _ = loaded_items(index)
    # Version 1 holds positions; later ones the items' own numbers, placed by the catalog.
    want = site_build._walk_topics(text, None if obj.get("version") == 1 else offsets)
    assert want is not None
    assert items == {t: i for t, i in want[0].items() if i}


def test_topics_as_the_index_writes_them_are_read_without_decoding() -> None:
    """A topic in the index stage's form is read by the pattern (the same items as decoding
    it gives); one entry of another form in it and the topic is decoded instead."""
    text = ('{"items":[{"chunks":[4,9],"condensed_chunks":[],"content_id":"x","relevance":'
            '"medium"},{"chunks":[0],"content_id":"y","relevance":"high"}]} tail')  # fmt: skip
    got = site_build._scan_topic(text, 0, {"x": 10, "y": 0})
    assert got is not None
    assert got == (site_build._topic_items(json.loads(text[: got[1]]), {"x": 10, "y": 0}),
                   len(text) - len(" tail"))  # fmt: skip
    assert got[0][0] == TopicEntry("x", "medium", [14, 19], 2)
    assert got[0][0]._asdict() == {"content_id": "x", "relevance": "medium", "chunks": [14, 19],
                                   "passages": 2}  # fmt: skip
    assert site_build._scan_topic(text.replace('"y"', '"\\u0079"'), 0, {}) is None
    assert site_build._scan_topic('{"items":[]}', 0, None) == ([], 12)
    assert site_build._scan_topic('{"items": []}', 0, None) is None


def test_topic_chunks_become_positions_through_the_catalog(tmp_path: Path) -> None:
    """A version 2 topics.json names each item's own chunks; the site places them after the
    chunks of the items before it in catalog.json (the chunk lines' order), keeps the
    first :data:`indexes.CHUNK_LINKS` and counts them all; an item the catalog does not list
    (or lists after an item without a chunk count) is left out, and so is a negative number."""
    index = tmp_path / "index"
    index.mkdir()
    entries = [{"content_id": "a", "relevance": "high", "chunks": [0, 2]},
               {"content_id": "b", "relevance": "low", "chunks": [-1, 1, *range(2, 12)]},
               {"content_id": "c", "relevance": "medium", "chunks": [0]},
               {"content_id": "d", "relevance": "high", "chunks": [0]}]  # fmt: skip
    doc = {"version": 2, "topics": {"t": {"items": entries}}, "synonyms": {}}
    (index / "topics.json").write_text(json.dumps(doc))
    listed = [{"id": "a", "chunks": 3}, {"id": "b", "chunks": 12}, {"id": "x"}, {"id": "c"}]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": listed}))
    items, per_item = loaded_items(index)
    got = {i.content_id: (i.chunks, i.passages) for i in items["t"]}
    assert got == {"a": ([0, 2], 2),
                   "b": ([3 + c for c in range(1, 1 + indexes.CHUNK_LINKS)], 11)}  # fmt: skip
    assert set(per_item) == {"a", "b"}


def test_each_items_topics_are_its_best_by_relevance_then_term(tmp_path: Path) -> None:
    """Per item, the site lists its first :data:`site_build.MAX_TOPICS` topics by relevance,
    then term — what sorting every ``(relevance, term)`` pair gives — whether topics.json is
    in the index stage's form (read by the patterns) or another (decoded), with an item named
    twice under one term, terms out of order and more terms than are listed."""
    rng = random.Random(17)
    ids = [f"item-{n}" for n in range(6)]
    terms = [f"term {rng.randrange(10**6):06d}" for _ in range(60)]
    topics: dict[str, Any] = {}
    for term in terms:
        entries = [
            {"chunks": sorted(rng.sample(range(9), rng.randrange(4))), "content_id": cid,
             "relevance": rng.choice(["high", "medium", "low"])}
            for cid in rng.sample(ids, rng.randrange(1, 5))
        ]  # fmt: skip
        if rng.random() < 0.2:  # the same item again, perhaps of another relevance
            entries.append(dict(entries[0], relevance=rng.choice(["high", "low"])))
        topics[term] = {"items": entries}
    index = tmp_path / "index"
    index.mkdir()
    listed = [{"id": cid, "chunks": 9} for cid in ids]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": listed}))
    rank = {"high": 0, "medium": 1, "low": 2}
    want: dict[str, list[list[str]]] = {}
    pairs: dict[str, list[tuple[int, str]]] = {}
    for term, topic in topics.items():
        for e in topic["items"]:
            pairs.setdefault(e["content_id"], []).append((rank[e["relevance"]], term))
    for cid, found in pairs.items():
        want[cid] = [[t, r] for n, t in sorted(found)[: site_build.MAX_TOPICS]
                     for r in rank if rank[r] == n]  # fmt: skip
    assert any(len(found) > site_build.MAX_TOPICS for found in pairs.values())
    doc = {"version": 2, "topics": topics, "synonyms": {}}
    compact = "".join(b.decode() for b in iter_topics_json(doc))
    for text in (compact, json.dumps(doc, indent=1)):  # the index stage's form; another
        (index / "topics.json").write_text(text)
        loaded, per_item = loaded_items(index)
        assert per_item == want
        assert set(loaded) == set(topics)
        assert sum(map(len, loaded.values())) == sum(len(p) for p in pairs.values())


def _writer_doc(version: int = 2) -> dict[str, Any]:
    """A topics document as the index stage makes it: entries of every form it writes (one
    ID with a quote, escaped, so its topic is decoded rather than matched), terms that need
    escaping or are not ASCII, synonyms."""
    rng = random.Random(5)
    topics: dict[str, Any] = {}
    for n in range(40):
        entries = [
            {"chunks": sorted(rng.sample(range(9), rng.randrange(4))), "content_id": cid,
             "relevance": rng.choice(["high", "medium", "low"])}
            for cid in rng.sample(["x", "y", "z", "q", "gone"], rng.randrange(1, 4))
        ]  # fmt: skip
        if n % 7 == 0:
            entries[0]["condensed_chunks"] = [1, 2]
        if n % 11 == 0:
            entries[-1]["content_id"] = 'y"q'
        topics[f"term {n:02d}" + (' "quoted" café' if n % 9 == 0 else "")] = {"items": entries}
    return {"version": version, "topics": topics,
            "synonyms": {"term 01": ["term 02", "tèrm"], "term 03": []}}  # fmt: skip


OFFSETS = {"x": 0, "y": 10, "z": 20, "q": 30, 'y"q': 40}


def _expected_walk(text: str) -> Any:
    """What walking the whole text gives (the reference the line reader must equal)."""
    walked = site_build._walk_topics(text, OFFSETS)
    assert walked is not None
    return site_build._walk_topics(text, None) if walked[2] == 1 else walked


def _write(tmp_path: Path, text: str) -> Path:
    index = tmp_path / "index"
    index.mkdir(exist_ok=True)
    (index / "topics.json").write_bytes(text.encode("utf-8"))
    listed = [{"id": c, "chunks": 10} for c in OFFSETS]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": listed}))
    return index


@pytest.mark.parametrize("version", [2, 1])
def test_topics_as_the_index_writes_them_are_read_a_line_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """The index stage's layout (a topic per line) is read line by line, the file's text never
    whole in memory, and gives what walking the whole text gives (version 1: positions)."""
    doc = _writer_doc(version)
    text = b"".join(iter_topics_json(doc)).decode()
    assert '\\"q' in text and "café" in text  # an escaped ID, a term not in ASCII
    index = _write(tmp_path, text)
    want = _expected_walk(text)
    assert sum(len(t) for t in want[0].values()) > 40 and want[1] == doc["synonyms"]
    given = OFFSETS if version == 2 else None
    assert streamed(index / "topics.json", given) == want
    whole = site_build._load_topics(index, EVERYONE)[:2]

    def no_walk(*_: object, **__: object) -> None:
        raise AssertionError("the whole text was read")

    with monkeypatch.context() as m:
        m.setattr(site_build, "_walk_topics", no_walk)
        m.setattr(Path, "read_text", no_walk)
        m.setattr(Path, "read_bytes", no_walk)
        by_lines = site_build._load_topics(index, EVERYONE)[:2]
        items, _ = loaded_items(index)  # the pages' second read, by lines too
    assert by_lines == whole
    assert items == {t: i for t, i in want[0].items() if i}


def _variants() -> dict[str, str]:
    text = b"".join(iter_topics_json(_writer_doc())).decode()
    lines = text.splitlines(keepends=True)
    first = lines.index('  "topics": {\n') + 1  # the first topic line
    last = max(n for n, line in enumerate(lines) if line.startswith('    "term'))
    head, tail = lines[:first], lines[first:]

    def joined(*parts: list[str] | str) -> str:
        return "".join("".join(p) for p in parts)

    return {
        "crlf": text.replace("\n", "\r\n"),
        "no final newline": text[:-1],
        "a repeated term (the last is kept)": joined(
            lines[: first + 2], lines[first], lines[first + 2 :]
        ),
        "another spacing": text.replace('": {"items"', '":  {"items"', 1),
        "another indent": joined(head, "  ", tail),
        "another top-level key": text.replace('  "version"', '  "x": 1,\n  "version"'),
        "a second topics member": joined(
            lines[:-2], '  "topics": {\n', lines[first].replace(",\n", "\n"), "  },\n", lines[-2:]
        ),
        "terms out of order": joined(head, lines[first + 1], lines[first], lines[first + 2 :]),
        "an escaped term": text.replace('"term 05"', '"term 0\\u0035"'),
        "a trailing comma": joined(
            lines[:last], lines[last].replace("\n", ",\n"), lines[last + 1 :]
        ),
        "topics not an object": text.replace('  "topics": {\n', '  "topics": [{\n', 1),
        "a topic value not JSON": text.replace('"items":[', '"items":[,', 1),
    }


@pytest.mark.parametrize("name", list(_variants()))
def test_topics_laid_out_otherwise_are_walked_whole(tmp_path: Path, name: str) -> None:
    """A file that is not exactly the index stage's layout is not read by lines (the reader
    says so) and gives what a whole parse gives; one that is not JSON is named."""
    text = _variants()[name]
    index = _write(tmp_path, text)
    assert streamed(index / "topics.json", OFFSETS) is None
    try:
        json.loads(text)
    except json.JSONDecodeError:
        with pytest.raises(ArkaiError, match=r"topics\.json"):
            site_build._load_topics(index, EVERYONE)
        return
    want = _expected_walk(text)
    items, _ = loaded_items(index)
    assert items == {t: i for t, i in want[0].items() if i}


@pytest.mark.parametrize("name", ["topics.json", "related.jsonl", "chunks/parts.json",
                                  "chunks/part"])  # fmt: skip
def test_an_index_file_linked_elsewhere_is_refused(tmp_path: Path, name: str) -> None:
    """The site publishes what the index files hold: one that is a symbolic link (to a file
    outside the repo, in the index stage's own layout) is refused, naming it, as
    ``catalog.json`` is, never read through the link — the chunks' listing and a part alike."""
    doc = _writer_doc()
    index = _write(tmp_path, b"".join(iter_topics_json(doc)).decode())
    chunk = json.dumps({"content_id": "x", "start_line": 1, "end_line": 1, "text": "t"}) + "\n"
    write_lines(index / "chunks", [chunk.encode()])
    listing = ChunkParts.load(index / "chunks")
    assert listing is not None
    if name == "chunks/part":
        name = f"chunks/{listing.parts[0].name}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = elsewhere / Path(name).name
    related = json.dumps({"id": "x", "related": [["y", "related", 0.5]]}) + "\n"
    body = {"topics.json": (index / "topics.json").read_text(), "related.jsonl": related,
            "chunks/parts.json": (index / name).read_text() if name.startswith("chunks/") else "",
            }.get(name, chunk)  # fmt: skip
    outside.write_text(body)
    (index / name).unlink(missing_ok=True)
    (index / name).symlink_to(outside)
    with pytest.raises(UnsafeFileError, match=re.escape(Path(name).name) + ".*symbolic link"):
        if name == "topics.json":
            site_build._load_topics(index, EVERYONE)
        elif name == "related.jsonl":
            site_build._load_related(index, {"x": "X", "y": "Y"})
        else:
            site_build._chunk_digests(index, {0})
    assert outside.read_text() == body


def test_a_malformed_catalog_is_named(tmp_path: Path) -> None:
    """The catalog places each item's chunk numbers: one that is not JSON is an error naming
    it, not topic pages without passages."""
    index = tmp_path / "index"
    index.mkdir()
    (index / "topics.json").write_text(json.dumps({"version": 2, "topics": {}, "synonyms": {}}))
    (index / "catalog.json").write_text('{"items": [')
    with pytest.raises(ArkaiError, match=r"catalog\.json"):
        site_build._load_topics(index, EVERYONE)


def test_a_malformed_topics_file_is_named(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    for bad in ('{"topics": {"a": {"items": []}}} extra', '{"topics": {"a": }', "[1]"):
        (index / "topics.json").write_text(bad)
        assert site_build._walk_topics(bad, {}) is None
        with pytest.raises(ArkaiError, match=r"topics\.json"):
            site_build._load_topics(index, EVERYONE)
    assert site_build._load_topics(tmp_path / "nowhere", EVERYONE)[:2] == ({}, {})


def test_related_rows_that_are_damaged_are_left_out(tmp_path: Path) -> None:
    """``related.jsonl`` read for the item pages: a row whose target is not a known item's ID
    (a list, a number, nothing) or a line that is not an object is skipped, not fatal."""
    index = tmp_path / "index"
    index.mkdir()
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    rows = [
        {"id": a, "related": [[[b], "RELATED_TO"], [7, "CITES"], [], [b, "RELATED_TO"], [a, "x"]]},
        ["not", "an", "object"],
        {"id": c, "related": "many"},
        {"id": b, "related": [[c, "CITES", 2]]},
    ]
    (index / "related.jsonl").write_text(
        "\n".join(json.dumps(r) for r in rows) + "\n{torn", encoding="utf-8"
    )
    titles = {a: "A", b: "B", c: "C"}
    assert site_build._load_related(index, titles) == {
        a: [(b, "B", "RELATED_TO")],
        b: [(c, "C", "CITES")],
    }


def test_a_topic_key_moves_with_everything_its_page_shows() -> None:
    """``topic_key`` digests a compact encoding of the page's inputs: each one changed gives
    another key, the same inputs the same key (whether or not the items' heads are kept
    between topics), and a title or term holding what the encoding puts between fields does
    not make two different topics' keys equal."""
    from arkai.site.indexes import Library, make_topic, topic_key
    from arkai.site.links import Urls

    def key(
        titles: tuple[str, str] = ("One", "Two"),
        term: str = "alpha",
        synonyms: tuple[str, ...] = (),
        relevance: str = "high",
        passages: int = 2,
        chunks: tuple[int, ...] = (0, 1),
        lines: int = 10,
        digest: bytes = b"d" * 16,
        span: tuple[int, int] = (2, 4),
        directory_urls: bool = True,
        heads: dict[str, bytes] | None = None,
    ) -> str:
        summaries = [{"id": "a1", "title": titles[0], "lines": lines},
                     {"id": "b2", "title": titles[1], "lines": 10}]  # fmt: skip
        items = [TopicEntry("a1", relevance, list(chunks), passages),
                 TopicEntry("b2", "low", [5], 1)]  # fmt: skip
        lib = Library(summaries, "S", Urls(directory_urls))
        topic = make_topic(term, items, list(synonyms), lib.titles, heads)
        lib.topics = {term: topic}
        lib.chunk_digests = {0: (digest, *span), 1: (b"e" * 16, 3, 3), 5: (b"f" * 16, 1, 1)}
        return topic_key(lib, topic)

    base = key()
    assert key() == base and key(heads={}) == base
    changed = [
        key(titles=("One!", "Two")), key(term="beta"), key(synonyms=("al",)),
        key(relevance="medium"), key(passages=3), key(chunks=(0,)), key(chunks=(1, 0)),
        key(digest=b"x" * 16), key(span=(2, 11)), key(directory_urls=False),
        # The passage's line is past the item's end: shown, then not.
        key(lines=3),
    ]  # fmt: skip
    assert len({base, *changed}) == len(changed) + 1
    # Lines appended after every shown passage change nothing.
    assert key(lines=11) == base
    # A title that holds the next field's encoding is still another title.
    assert key(titles=("One", "Two")) != key(titles=("One3:b2", "Two"))
    assert key(titles=("ab", "c")) != key(titles=("a", "bc"))


def test_a_big_topic_is_paged_and_its_pages_follow_what_they_show(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic's first page shows its best items with their passages (by relevance, then
    the most passages) and lists the others compactly, :data:`TOPIC_PAGE_ITEMS` a page on
    pages 2, 3, …, so no page grows with the library; a listed item's chunks are not part of
    the pages' key, its relevance and passage count are; a topic that shrinks loses its
    extra pages; every step equals a clean build."""
    from tests.func.test_site_incremental import tree

    monkeypatch.setattr(indexes, "TOPIC_SAID_ITEMS", 1)
    monkeypatch.setattr(indexes, "TOPIC_PAGE_ITEMS", 2)
    repo = make_repo(tmp_path, arkai)
    ids = sorted(item_dirs(repo))[:5]
    assert len(ids) == 5
    write_index(repo, ids, {}, pad=0)
    index = repo / "index"

    def topics(entries: list[tuple[str, str, list[int]]]) -> None:
        doc = {
            "version": 2,
            "synonyms": {},
            "topics": {
                "alpha": {
                    "items": [
                        {"content_id": c, "relevance": r, "chunks": ch} for c, r, ch in entries
                    ]
                }
            },
        }
        (index / "topics.json").write_text(json.dumps(doc))  # fmt: skip

    # ids[:4] have chunks 0 and 1 (write_index); ids[4] has none of its own here.
    five = [(ids[0], "low", [0]), (ids[1], "high", [0]), (ids[2], "high", [0, 1]),
            (ids[3], "medium", [1]), (ids[4], "low", [])]  # fmt: skip
    topics(five)
    build_site(repo)
    docs, site = repo / ".site-build" / "docs", repo / "site"
    first = topic_page(docs, "alpha")
    second = first.with_suffix("") / "2.md"
    text, more = first.read_text(), second.read_text()
    # Best first: ids[2] (high, two passages) with its passages, then ids[1], ids[3] listed
    # on the first page, ids[0] and ids[4] (low) on the second.
    from arkai.site.html import esc

    # As the pages write them (one of the fixture's titles is hostile markup).
    titles = {c: esc(json.loads((d / "metadata.json").read_text())["title"])
              for c, d in item_dirs(repo).items()}  # fmt: skip
    assert text.count('class="ak-group"') == 1 and text.count('class="ak-said"') == 1
    order = [text.find(titles[c]) for c in (ids[2], ids[1], ids[3])]
    assert -1 not in order and order == sorted(order)
    assert titles[ids[0]] not in text and titles[ids[4]] not in text
    assert titles[ids[0]] in more and titles[ids[4]] in more and "ak-said" not in more
    assert "Pages:" in text and "Pages:" in more
    assert (site / "topics" / first.stem / "2" / "index.html").is_file()

    made: list[str] = []
    real_page = indexes._topic_page
    monkeypatch.setattr(indexes, "_topic_page", lambda lib, t, order, parts: made.append(
        t.term) or real_page(lib, t, order, parts))  # fmt: skip
    # A listed item's chunk says something new: not shown, so no page is made again.
    write_index(repo, ids, {(ids[3], 1): "Zqxlisted alpha words."}, pad=0)
    topics(five)
    build_site(repo)
    assert made == []
    # Its relevance changes: shown on the list, so the pages are made again.
    topics([*five[:3], (ids[3], "low", [1]), five[4]])
    build_site(repo)
    assert made == ["alpha"]
    # The topic shrinks to two items: one page, the second removed from the pages and site.
    topics(five[1:3])
    build_site(repo)
    assert not second.exists() and not (site / "topics" / first.stem / "2").exists()
    assert "Pages:" not in first.read_text()
    got = tree(docs), tree(site)
    clean(repo)
    build_site(repo)
    assert (tree(docs), tree(site)) == got


def test_a_listed_items_chunks_are_not_in_the_topic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the items shown with passages, a topic page lists an item's title, relevance and
    passage count only: its chunks' bytes do not move the key, those three do."""
    from arkai.site.indexes import Library, make_topic, topic_key
    from arkai.site.links import Urls

    monkeypatch.setattr(indexes, "TOPIC_SAID_ITEMS", 1)

    def key(listed: bytes = b"f" * 16, relevance: str = "low", passages: int = 1,
            title: str = "Two") -> str:  # fmt: skip
        summaries = [{"id": "a1", "title": "One", "lines": 10},
                     {"id": "b2", "title": title, "lines": 10}]  # fmt: skip
        items = [TopicEntry("a1", "high", [0], 1), TopicEntry("b2", relevance, [5], passages)]
        lib = Library(summaries, "S", Urls(True))
        topic = make_topic("t", items, [], lib.titles)
        lib.topics = {"t": topic}
        lib.chunk_digests = {0: (b"d" * 16, 2, 2), 5: (listed, 1, 1)}
        assert list(lib.topic_shown_chunks(lib.topics["t"])) == [0]
        return topic_key(lib, lib.topics["t"])

    base = key()
    assert key(listed=b"x" * 16) == base
    assert len({base, key(relevance="medium"), key(passages=2), key(title="Two!")}) == 4


def test_topic_pages_read_again_only_the_topics_they_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first read of topics.json each topic holds its first entries in page order
    and a digest of them all, not every entry; the pages that are made read their own
    topics' values again (no other topic's is read) and list every item. A topics.json that
    changed between the two reads — an entry's relevance, a topic gone — is an error naming
    it, not pages made from other entries than their keys were."""
    from arkai.site.indexes import Library, TopicsChanged, topic_pages
    from arkai.site.links import Urls

    ids = [f"x{n:02d}" for n in range(50)]

    def doc(relevance: str = "low", big: bool = True) -> dict[str, Any]:
        topics: dict[str, Any] = {
            "small": {"items": [{"chunks": [0], "content_id": "x00", "relevance": "high"}]},
            "zeta": {"items": [{"chunks": [1], "content_id": "x01", "relevance": "low"}]},
        }
        if big:
            entries = [{"chunks": [0, 1][: n % 3], "content_id": c,
                        "relevance": "high" if n % 3 else "medium"}
                       for n, c in enumerate(ids)]  # fmt: skip
            entries[7]["relevance"] = relevance
            topics["big"] = {"items": entries}
        return {"version": 2, "topics": topics, "synonyms": {}}

    def write(d: dict[str, Any]) -> None:
        (index / "topics.json").write_bytes(b"".join(iter_topics_json(d)))

    index = tmp_path / "index"
    index.mkdir()
    (index / "catalog.json").write_text(
        json.dumps({"version": 1, "items": [{"id": c, "chunks": 2} for c in ids]})
    )
    write(doc())
    summaries = [{"id": c, "title": f"Title {c}", "lines": 5} for c in ids]
    lib = Library(summaries, "S", Urls(True))
    lib.topics, _, lib.load_topic_items = site_build._load_topics(index, lib.titles)
    big = lib.topics["big"]
    assert big.size == 50 and big.count == 50 and len(big.top) == indexes.TOPIC_SAID_ITEMS

    reads: list[str] = []
    real = site_build._read_topic
    monkeypatch.setattr(site_build, "_read_topic", lambda text, at, offsets: reads.append(
        text[:12]) or real(text, at, offsets))  # fmt: skip
    assert [term for term, _ in lib.load_topic_items({"big"})] == ["big"]
    assert reads == ['    "big": {']

    made = {p: text for p, text, _ in topic_pages(lib) if text is not None}
    assert len(made) == 4  # the three topics' pages and the index
    big_page = next(text for p, text in made.items() if p.startswith("topics/big"))
    assert all(f"Title {c}" in big_page for c in ids)

    write(doc(relevance="high"))
    with pytest.raises(TopicsChanged, match=r"topics\.json.*'big' changed"):
        list(topic_pages(lib))
    write(doc(big=False))
    with pytest.raises(TopicsChanged, match=r"topics\.json.*gone.*big"):
        list(topic_pages(lib))


def test_the_catalog_is_read_cut_to_ids_and_chunk_counts(tmp_path: Path) -> None:
    """The site reads ``catalog.json`` only for each item's chunk count: every entry is cut to
    its ID and count as it is decoded (the whole entries were most of the topic step's peak),
    and the offsets are those of the whole entries."""
    from arkai.adapters.store import read_json
    from arkai.search.topics import chunk_offsets

    items = [
        {"id": f"c{i}", "chunks": i + 1, "title": "T" * 500, "tags": [{"x": 1}], "url": None}
        for i in range(5)
    ]
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"version": 3, "items": items}))
    cut = read_json(path, site_build._id_and_chunks)
    assert cut == {"version": 3, "items": [{"id": e["id"], "chunks": e["chunks"]} for e in items]}
    assert (
        chunk_offsets(cut["items"])
        == chunk_offsets(items)
        == {"c0": 0, "c1": 1, "c2": 3, "c3": 6, "c4": 10}
    )
