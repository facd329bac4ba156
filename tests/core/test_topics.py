"""The topic index: TF-IDF keyphrases with relevance, entity terms, synonyms, lookup, grep."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from arkai.core import canonjson
from arkai.errors import NotFoundError
from arkai.search.topics import (
    RELEVANCES,
    TopicInput,
    TopicSettings,
    build_topics,
    grep_library,
    load_synonyms,
    lookup_topic,
    merge_synonyms,
    phrases,
)

BEES = (
    "[00:00:01] Ana: Varroa mites are the main threat to the colony.\n"
    "[00:00:05] Ana: We count varroa mites every week, and varroa mites spread fast.\n"
    "[00:00:09] Ana: The varroa load decides whether a colony survives the winter.\n"
    "[00:00:12] Ana: Varroa, varroa, varroa: treat in August.\n"
    "[00:00:15] Ana: A beekeeper once mentioned a compiler in passing.\n"
)
BUILDS = (
    "Incremental builds hash every input. A build cache stores outputs by input hash.\n"
    "The build cache is shared; remote build cache hits make builds fast.\n"
    "Hermetic toolchains keep the build cache honest.\n"
)
OTHER = "Gardening notes: tomatoes need sun, basil needs water, and compost helps the soil.\n"


def inputs() -> list[TopicInput]:
    return [
        TopicInput("b" * 16, BEES, BEES.splitlines(), ["Ana", "Varroa", "August"]),
        TopicInput("c" * 16, BUILDS, BUILDS.splitlines(), ["Build Cache"]),
        TopicInput("d" * 16, OTHER, OTHER.splitlines(), []),
    ]


def test_phrases_stay_inside_clauses() -> None:
    got = phrases("The build cache, shared remote storage. Of the Bees")
    assert "build cache" in got and "shared remote storage" in got
    assert "cache shared" not in got  # a comma ends the run
    assert "the" not in got and "bees" in got


def test_relevance_and_chunks() -> None:
    idx = build_topics(inputs())
    bees = {t.term: t for t in idx.terms["b" * 16]}
    assert bees["varroa"].relevance == "high"
    assert bees["varroa"].source == "keyphrase"
    # Chunks are the numbers of the item's chunks that contain the term (stemmed).
    assert bees["varroa"].chunks == (0, 1, 2, 3)
    assert bees["varroa mites"].chunks == (0, 1)
    # A word said once ranks lower than the repeated one.
    assert bees["varroa"].score > max(t.score for t in bees.values() if t.term != "varroa")
    assert {t.relevance for t in bees.values()} <= {"high", "medium", "low"}
    assert sum(1 for t in bees.values() if t.relevance == "high") <= 5
    builds = {t.term: t for t in idx.terms["c" * 16]}
    assert builds["build cache"].relevance in ("high", "medium")
    assert "build" in builds
    # "builds" is an inflection of "build": only one of them is kept.
    assert not ("builds" in builds and builds["builds"].source == "keyphrase")
    # Entities are terms too, with their own relevance (speaker labels are not keyphrases).
    assert bees["ana"].source == "entity" and bees["ana"].chunks == (0, 1, 2, 3, 4)
    assert bees["august"].chunks == (3,)
    doc = idx.doc
    assert doc["version"] == 2
    entry = doc["topics"]["varroa"]["items"][0]
    assert entry == {"content_id": "b" * 16, "relevance": "high", "chunks": [0, 1, 2, 3]}


def test_thresholds_from_settings() -> None:
    strict = build_topics(inputs(), settings=TopicSettings(high_rank=1, medium_rank=2))
    rel = [t.relevance for t in strict.terms["b" * 16] if t.source == "keyphrase"]
    assert rel.count("high") == 1 and rel.count("medium") <= 1
    few = build_topics(inputs(), settings=TopicSettings(top_terms=3))
    assert sum(1 for t in few.terms["b" * 16] if t.source == "keyphrase") == 3


def test_deterministic_and_order_independent() -> None:
    a = canonjson.dumps(build_topics(inputs(), {"varroa": ["mite"]}).doc)
    b = canonjson.dumps(build_topics(inputs()[::-1], {"varroa": ["mite"]}).doc)
    assert a == b


def test_empty_library() -> None:
    doc = build_topics([]).doc
    assert doc == {"version": 2, "topics": {}, "synonyms": {}}
    assert build_topics([TopicInput("a" * 16, "", [])]).doc["topics"] == {}


def test_synonyms_merge_symmetric(tmp_path: Path) -> None:
    path = tmp_path / "synonyms.yaml"
    path.write_text("Varroa: [mite, Varroa destructor]\nmite: [parasite]\ncache: caching\n")
    raw = load_synonyms(path)
    merged = merge_synonyms(raw)
    assert merged["varroa"] == ["mite", "parasite", "varroa destructor"]
    assert merged["parasite"] == ["mite", "varroa", "varroa destructor"]
    assert merged["caching"] == ["cache"]
    assert load_synonyms(tmp_path / "missing.yaml") == {}
    (tmp_path / "bad.yaml").write_text("- a\n- b\n")
    with pytest.raises(Exception, match="mapping"):
        load_synonyms(tmp_path / "bad.yaml")


def write_index(tmp_path: Path) -> Path:
    folder = tmp_path / "index"
    folder.mkdir()
    doc = build_topics(inputs(), {"varroa": ["parasite"], "compost": ["humus"]}).doc
    (folder / "topics.json").write_text(json.dumps(doc))
    # The items in the chunk lines' order with their chunk counts (the topic entries' chunk
    # numbers are the items' own).
    catalog = {"version": 1, "items": [
        {"id": "b" * 16, "title": "Bees", "path": "library/x", "chunks": len(BEES.splitlines())},
        {"id": "c" * 16, "title": "Builds", "path": "library/y",
         "chunks": len(BUILDS.splitlines())},
        {"id": "d" * 16, "title": "Other", "path": "library/z", "chunks": 1},
    ]}  # fmt: skip
    (folder / "catalog.json").write_text(json.dumps(catalog))
    return folder


def test_lookup_exact_stem_and_synonym(tmp_path: Path) -> None:
    folder = write_index(tmp_path)
    hits = lookup_topic(folder, "Varroa")
    assert [h["content_id"] for h in hits] == ["b" * 16]
    assert hits[0]["via"] == "exact" and hits[0]["relevance"] == "high"
    assert hits[0]["title"] == "Bees" and hits[0]["path"] == "library/x"
    assert 0 in hits[0]["chunks"]
    # Stemming-insensitive: "mite" finds "mites"-bearing terms.
    stem = lookup_topic(folder, "Varroa Mite")
    assert stem and stem[0]["via"] == "stem" and "varroa mites" in stem[0]["terms"]
    # Synonyms (and their reverse) expand the query.
    syn = lookup_topic(folder, "parasites")
    assert syn and syn[0]["content_id"] == "b" * 16 and syn[0]["via"] == "synonym"
    humus = lookup_topic(folder, "humus")[0]
    assert humus["content_id"] == "d" * 16
    # Chunk positions: the item's own chunk numbers after the items before it.
    first = len(BEES.splitlines()) + len(BUILDS.splitlines())
    assert humus["chunks"] == [first]
    assert lookup_topic(folder, "quantum chromodynamics") == []
    assert lookup_topic(folder, "  ") == []


def test_lookup_reads_positions_of_a_version_1_file_as_they_are(tmp_path: Path) -> None:
    """A ``topics.json`` of version 1 (positions in the chunk lines) is read as it is; an
    item the catalog does not list has no positions in a version 2 file."""
    folder = write_index(tmp_path)
    doc = json.loads((folder / "topics.json").read_text())
    doc["version"] = 1
    for topic in doc["topics"].values():
        for e in topic["items"]:
            e["chunks"] = [100 + c for c in e["chunks"]]
    (folder / "topics.json").write_text(json.dumps(doc))
    assert lookup_topic(folder, "humus")[0]["chunks"] == [100]
    doc["version"] = 2
    (folder / "topics.json").write_text(json.dumps(doc))
    catalog = json.loads((folder / "catalog.json").read_text())
    del catalog["items"][2]
    (folder / "catalog.json").write_text(json.dumps(catalog))
    hit = lookup_topic(folder, "humus")[0]
    assert hit["content_id"] == "d" * 16 and hit["chunks"] == []


def test_chunk_offsets_stop_at_an_item_without_a_count() -> None:
    from arkai.search.topics import chunk_offsets

    items = [{"id": "a", "chunks": 3}, {"id": "b", "chunks": 0}, {"id": "c", "chunks": 2},
             {"id": "d", "chunks": "2"}, {"id": "e", "chunks": 1}]  # fmt: skip
    assert chunk_offsets(items) == {"a": 0, "b": 3, "c": 3}
    assert chunk_offsets([{"id": "a", "chunks": True}]) == {}
    assert chunk_offsets([{"id": "a", "chunks": -1}, {"id": "b", "chunks": 1}]) == {}


def test_lookup_without_index(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        lookup_topic(tmp_path, "x")


def test_grep_library(kr: Path) -> None:
    item = kr / "library" / "notes" / "Note (aaaa)"
    item.mkdir(parents=True)
    (item / "metadata.json").write_text(json.dumps({"id": "a" * 16, "title": "Note"}))
    (item / "transcript.md").write_text("# Note\nThe VARROA count.\nnothing\nvarroa again\n")
    hits = grep_library(kr, "Varroa", limit=10)
    assert hits == [
        {"content_id": "a" * 16, "line": 2, "text": "The VARROA count."},
        {"content_id": "a" * 16, "line": 4, "text": "varroa again"},
    ]
    assert len(grep_library(kr, "varroa", limit=1)) == 1
    assert grep_library(kr, "", limit=5) == []


def reference_scores(matrix: Any, vocab: Any, n: int) -> dict[str, float]:
    row = matrix.getrow(n)
    return {str(vocab[j]): float(v) for j, v in zip(row.indices, row.data, strict=True)}


def test_scores_are_scikit_learns_tfidf() -> None:
    """The scores from per-item counts and document frequencies are TfidfVectorizer's
    (smoothed IDF, raw counts, L2 norm) on the same analysed texts."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from arkai.search.topics import (
        TopicSettings,
        _analyze,
        _Scores,
        document_frequencies,
        item_terms,
    )

    items = sorted(inputs(), key=lambda it: it.content_id)
    stats = [item_terms(it.content_id, it.text, []) for it in items]
    n_items, df = document_frequencies(stats)
    vec = TfidfVectorizer(analyzer=_analyze)
    matrix = vec.fit_transform([it.text for it in items]).tocsr()
    vocab = vec.get_feature_names_out()
    idx = build_topics(items)
    checked = 0
    for n, it in enumerate(items):
        reference = reference_scores(matrix, vocab, n)
        scores = _Scores(stats[n].counts, df, n_items, TopicSettings(min_phrase_count=0))
        for term, score in scores.best_first(4):
            assert score == pytest.approx(reference.pop(term), rel=1e-12)
            checked += 1
        assert not reference  # every phrase scored
        for term in idx.terms[it.content_id]:
            if term.source == "keyphrase":
                assert term.score == round(reference_scores(matrix, vocab, n)[term.term], 6)
    assert checked >= 30


def test_stopwords_are_scikit_learns_list_without_importing_it() -> None:
    import subprocess
    import sys

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from arkai.search.topics import _sklearn_stop_words

    assert _sklearn_stop_words() == ENGLISH_STOP_WORDS
    code = "import sys; from arkai.search.topics import stopwords; stopwords(); "
    code += "assert 'sklearn' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_chunk_finder_equals_the_substring_search() -> None:
    """The word-map prefilter finds exactly the chunks the plain phrase search finds."""
    import random

    from arkai.search.topics import _ChunkFinder, _chunks_with

    rng = random.Random(7)
    words = ["hive", "queen", "brood", "frame", "mite", "honey", "bee"]
    chunk_keys = [
        (10 + n, " " + " ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) + " ")
        for n in range(40)
    ]
    find = _ChunkFinder(chunk_keys)
    keys = ["", "hive", "wax", "queen brood", "brood queen", "mite honey bee", "hive wax"]
    keys += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(200)]
    for key in keys:
        assert find(key) == _chunks_with(key, chunk_keys), key
    assert find("queen brood")  # the random chunks do hold some phrases


def test_topics_json_has_a_topic_per_line() -> None:
    """``iter_topics_json``: the document's JSON value, in pieces, the top level indented as
    ``canonjson.dumps`` does and each topic on one line of compact canonical JSON; any other
    shape is ``canonjson.dumps``'s bytes."""
    import json

    from arkai.search.topics import iter_topics_json

    def encoded(doc: dict[str, Any], batch: int = 2) -> bytes:
        return b"".join(iter_topics_json(doc, batch=batch))

    small = {"version": 1, "synonyms": {"a é": ["q"]}, "topics": {
        "b": {"items": [{"content_id": "x", "relevance": "high", "chunks": [2, 1]}]},
        "a é": {"items": []},
    }}  # fmt: skip
    assert encoded(small).decode() == (
        '{\n  "synonyms": {\n    "a é": [\n      "q"\n    ]\n  },\n  "topics": {\n'
        '    "a é": {"items":[]},\n'
        '    "b": {"items":[{"chunks":[2,1],"content_id":"x","relevance":"high"}]}\n'
        '  },\n  "version": 1\n}\n'
    )
    doc = build_topics(inputs(), {"varroa": ["mites", "Milben é"]}).doc
    assert len(doc["topics"]) > 4 and doc["synonyms"]
    data = encoded(doc)
    assert json.loads(data) == doc and encoded(doc, batch=1000) == data
    assert len(list(iter_topics_json(doc, batch=2))) > 3  # in pieces
    lines = data.decode().split("\n")
    first = lines.index('  "topics": {') + 1
    for line, term in zip(lines[first:], sorted(doc["topics"]), strict=False):
        assert json.loads("{" + line.removesuffix(",") + "}") == {term: doc["topics"][term]}
    assert lines[first + len(doc["topics"])] == "  },"
    odd: list[dict[str, Any]] = [
        {"version": 1, "topics": {}, "synonyms": {}},
        {"version": 1, "topics": {"a": {"items": []}}, "synonyms": {"q": []}},
        {"version": 1, "synonyms": {}, "topics": {
            'a"\\é\n\u2028': {"items": [{"chunks": [], "content_id": "x", "relevance": "low",
                                   "condensed_chunks": [1, 20]}]},
            "b": {"items": [{"chunks": [True, 2]}]},
            "c": {"x": 1},
            "d": {"items": [{"chunks": [1], "extra": {"k": 2.5}}]},
            "e": [1, None],
        }},
    ]  # fmt: skip
    for d in odd:
        assert json.loads(encoded(d)) == d, d
    other = {"other": 1, "topics": {"z": {"items": []}}}
    assert encoded(other) == canonjson.dumps(other).encode("utf-8")


def test_a_ranking_from_known_chunks_is_the_same() -> None:
    """``rank_item`` with the chunks an earlier ranking found (the index stage's cache) gives
    the ranking found without them; only stems not known are searched."""
    from arkai.search.topics import (
        _ChunkFinder,
        document_frequencies,
        item_terms,
        rank_item,
        stem_key,
    )

    items = inputs()
    stats = [item_terms(it.content_id, it.text, it.chunks, it.entities) for it in items]
    n, df = document_frequencies(stats)
    s = TopicSettings()
    searched: list[str] = []
    real = _ChunkFinder.__call__

    def spy(self: Any, key: str) -> tuple[int, ...]:
        searched.append(key)
        return real(self, key)

    for it in stats:
        fresh = rank_item(it, df, n, s)
        assert fresh and all(c < len(it.chunk_stems) for t in fresh for c in t.chunks)
        known = {stem_key(t.term): (t.chunks, t.condensed) for t in fresh}
        searched.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_ChunkFinder, "__call__", spy)
            assert rank_item(it, df, n, s, known) == fresh
            assert searched == []
            # A known entry is trusted (it is the item's own earlier finding) …
            first = fresh[0]
            other = {**known, stem_key(first.term): ((99,), ())}
            assert rank_item(it, df, n, s, other)[0].chunks == (99,)
            # … and a stem not known is searched.
            del known[stem_key(first.term)]
            assert rank_item(it, df, n, s, known) == fresh
            assert searched == [stem_key(first.term)]


def test_a_ranking_sorts_only_its_best_phrases_and_is_the_full_sorts() -> None:
    """``rank_item`` sorts the best phrases by a partial selection: the terms, ranks and
    relevances are the ones a full sort of every phrase gives — also for an entity ranked
    beyond the selection and for an item whose best phrases are mostly inflections of one
    another (the terms then come from past the selection)."""
    import random

    import arkai.search.topics as topics
    from arkai.search.topics import ItemTerms, rank_item

    rng = random.Random(7)
    words = [f"w{i:03d}" for i in range(400)]
    # 150 inflections of one stem score best: the 15 terms must come from further down.
    counts = {f"stem{'s' * (i % 2)}": 200 for i in range(2)}
    counts |= {f"{w} tail": 100 + rng.randrange(50) for w in words[:150]}
    counts |= {w: rng.randrange(1, 60) for w in words}
    df = {p: rng.randrange(1, 90) for p in counts}
    chunks = [" ".join(words[i : i + 40]) for i in range(0, 400, 40)]
    it = ItemTerms("c1", dict(sorted(counts.items())), chunks, ["W399", "W007", "Nobody Here"])
    s = TopicSettings()
    selected = rank_item(it, df, 100, s)
    full = topics._Scores.best_first
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topics._Scores, "best_first", lambda self, head: full(self, len(self) + 1))
        assert rank_item(it, df, 100, s) == selected
    assert len([t for t in selected if t.source == "keyphrase"]) == s.top_terms
    assert {t.term for t in selected if t.source == "entity"} >= {"w399", "nobody here"}
    # An entity's relevance follows its rank among all the phrases.
    ordered = list(topics._Scores(it.counts, df, 100, s).best_first(0))
    for name in ("w007", "w399"):
        rank = next(r for r, (t, _) in enumerate(ordered) if t == name)
        got = next(t for t in selected if t.term == name)
        assert got.relevance == topics._relevance(rank, ordered[rank][1], s)


def test_the_builder_writes_the_file_its_document_is() -> None:
    """``TopicBuilder.iter_json`` (the index stage's writer: the document never made whole,
    the items' terms not kept, each entry's text joined as it was made) gives the bytes of
    ``iter_topics_json`` over the document made plainly from the ranked terms — items with and
    without condensed chunks, synonyms, any batch size, an empty builder — and entries added
    from their kept text (:meth:`TopicBuilder.add_entries`) give the same file."""
    from arkai.search.topics import (
        TopicBuilder,
        document_frequencies,
        entry_json,
        item_terms,
        iter_topics_json,
    )

    items = [
        *inputs(),
        TopicInput("e" * 16, BEES + OTHER, [BEES, OTHER], ["Ana"],
                   [(1, "Varroa mites every week."), (2, "compost helps the soil")]),
    ]  # fmt: skip
    stats = [item_terms(it.content_id, it.text, it.chunks, it.entities, it.condensed)
             for it in items]  # fmt: skip
    n, df = document_frequencies(stats)

    def built(keep_terms: bool) -> TopicBuilder:
        b = TopicBuilder(n, df, {"varroa": ["mite"]}, keep_terms=keep_terms)
        for it in stats:
            b.add(it)
        return b

    full = built(True)
    # The document written plainly: each term's items sorted by (relevance, content ID).
    rank = {"high": 0, "medium": 1, "low": 2}
    plain: dict[str, list[dict[str, Any]]] = {}
    for it in stats:
        for t in full.terms[it.content_id]:
            e: dict[str, Any] = {"content_id": it.content_id, "relevance": t.relevance,
                                 "chunks": list(t.chunks)}  # fmt: skip
            if it.condensed:
                e["condensed_chunks"] = list(t.condensed)
            plain.setdefault(t.term, []).append(e)
    doc = {
        "version": 2,
        "topics": {
            t: {"items": sorted(es, key=lambda e: (rank[e["relevance"]], e["content_id"]))}
            for t, es in sorted(plain.items())
        },
        "synonyms": {"mite": ["varroa"], "varroa": ["mite"]},
    }
    assert full.result().doc == doc
    assert any("condensed_chunks" in e for t in doc["topics"].values() for e in t["items"])
    assert any("condensed_chunks" not in e for t in doc["topics"].values() for e in t["items"])
    want = b"".join(iter_topics_json(doc))
    lean = built(False)
    for batch in (1, 3, 2048):
        assert b"".join(lean.iter_json(batch=batch)) == want
    assert lean.terms == {} and lean.n_topics == len(doc["topics"])
    # Read back a topic at a time (a budget of one byte: every batch one topic), the same.
    from arkai.search import topics as topics_module

    old_budget = topics_module.TOPIC_BATCH_BYTES
    topics_module.TOPIC_BATCH_BYTES = 1
    try:
        assert b"".join(lean.iter_json(batch=2)) == want
    finally:
        topics_module.TOPIC_BATCH_BYTES = old_budget
    kept = TopicBuilder(n, df, {"varroa": ["mite"]}, keep_terms=False)
    for it in reversed(stats):  # any order
        ranked = full.terms[it.content_id]
        kept.add_entries(it.content_id, [(t.term, t.relevance,
                                          entry_json(it.content_id, t, bool(it.condensed)))
                                         for t in ranked])  # fmt: skip
    assert b"".join(kept.iter_json()) == want
    empty = TopicBuilder(0, {}, {"varroa": ["mite"]})
    assert b"".join(empty.iter_json()) == b"".join(iter_topics_json(empty.result().doc))
    for b in (full, lean, kept, empty):
        b.close()


def test_a_builders_entries_are_kept_in_a_file_and_read_back_in_order(tmp_path: Path) -> None:
    """The entries go to an unnamed file in the folder given (nothing left there), and come
    back under their terms sorted, each topic's by relevance, then content ID, then text —
    two entries of one item under one term (not what a ranking gives) included — whatever
    the order they were added in, and the budget of text read back at a time."""
    from arkai.search.topics import TopicBuilder

    entries = {
        "bbbb": [("mite", "low", '{"x":2}'), ("hive", "high", '{"x":1}')],
        "aaaa": [("mite", "low", '{"x":9}'), ("mite", "low", '{"x":3}'), ("zeta", "medium", "{}")],
        "cccc": [("hive", "high", '{"é":"ü"}'), ("hive", "medium", '{"x":0}')],
    }
    want = {
        "hive": ['{"x":1}', '{"é":"ü"}', '{"x":0}'],
        "mite": ['{"x":3}', '{"x":9}', '{"x":2}'],
        "zeta": ["{}"],
    }
    for budget in (1, 10, 1 << 20):
        for order in (["aaaa", "bbbb", "cccc"], ["cccc", "bbbb", "aaaa"]):
            with TopicBuilder(3, {}, folder=tmp_path / "tmp", keep_terms=False) as b:
                for cid in order:
                    b.add_entries(cid, entries[cid])
                got = list(b._entries.topics(budget))
                assert b.n_topics == 3
            assert [t for t, _ in got] == sorted(want)
            for term, text in got:
                assert text == '{"items":[' + ",".join(want[term]) + "]}"
    assert list((tmp_path / "tmp").iterdir()) == []


def _entry(cid: str, relevance: str, n: int) -> str:
    return canonjson.dumps_compact({"chunks": [n], "content_id": cid, "relevance": relevance})


def _kept_round(
    rng: Any, items: dict[str, list[tuple[str, str, str]]]
) -> dict[str, list[tuple[str, str, str]]]:
    """The items after one round of edits: some entries made again, some items gone, some
    new (each entry names its item, as the index stage's do)."""
    terms = ["hive", "mite", "varroa mite", "zeta", "queen", "brood", "é-term"]
    out = {cid: list(e) for cid, e in items.items() if rng.random() > 0.15}
    for cid in list(out):
        if rng.random() < 0.3:
            out[cid] = []
    for _ in range(rng.randrange(1, 4)):
        out[f"{rng.randrange(1 << 32):08x}"] = []
    for cid, entries in out.items():
        if not entries and rng.random() > 0.1:
            picked = rng.sample(terms, rng.randrange(1, len(terms)))
            out[cid] = [(t, rng.choice(["high", "medium", "low"]), _entry(cid, "low", i))
                        for i, t in enumerate(picked)]  # fmt: skip
    return out


def _add_round(
    rng: Any,
    got: Any,
    want: Any,
    items: dict[str, list[tuple[str, str, str]]],
    kept: Any,
    fresh: dict[str, str],
    tags: dict[str, str],
) -> set[str]:
    """One round's items added, in a random order, to ``want`` afresh and to ``got`` from the
    last build's kept entries where the item is unchanged (its tag); the terms of the items
    ``got`` was given afresh."""
    changed: set[str] = set()
    for cid in sorted(items, key=lambda c: rng.random()):
        want.add_entries(cid, items[cid])
        k = kept.match(cid, fresh[cid]) if kept is not None else None
        if kept is not None and k is not None and tags.get(cid) == fresh[cid]:
            got.add_kept(cid, kept, k)
        else:
            got.add_entries(cid, items[cid], (fresh[cid], None))
            changed |= {t for t, _, _ in items[cid]}
    return changed


def test_kept_entries_give_the_file_of_entries_given_afresh(tmp_path: Path) -> None:
    """Over rounds of edits — items kept, made again, removed, added, with no entries —
    a builder given each unchanged item's entries from the last build's record
    (:meth:`TopicBuilder.add_kept`) writes the bytes of one given every entry afresh, keeps
    each item's tag and payload, and its record serves the next round."""
    import random

    from arkai.search.topics import KeptEntries, TopicBuilder

    rng = random.Random(7)
    record = tmp_path / "kept.bin"
    items: dict[str, list[tuple[str, str, str]]] = {}
    tags: dict[str, str] = {}
    for round_ in range(12):
        items = _kept_round(rng, items) if round_ else _kept_round(rng, {"a": [], "b": []})
        fresh = {cid: str(entries) for cid, entries in items.items()}
        kept = KeptEntries.read(record)
        assert (kept is None) == (round_ == 0)
        taken = 0
        with (
            TopicBuilder(len(items), {}, keep_terms=False, folder=tmp_path / "tmp") as got,
            TopicBuilder(len(items), {}, keep_terms=False, folder=tmp_path / "tmp") as want,
        ):
            for cid in sorted(items, key=lambda c: rng.random()):
                want.add_entries(cid, items[cid])
                k = kept.match(cid, fresh[cid]) if kept is not None else None
                if kept is not None and k is not None and tags.get(cid) == fresh[cid]:
                    assert kept.payloads[k] == [cid, len(items[cid])]
                    got.add_kept(cid, kept, k)
                    taken += 1
                else:
                    got.add_entries(cid, items[cid], (fresh[cid], [cid, len(items[cid])]))
            assert b"".join(got.iter_json()) == b"".join(want.iter_json())
            assert got.n_topics == want.n_topics
            got.keep(record)
        if kept is not None:
            kept.close()
        tags = fresh
        assert round_ == 0 or taken > 0
    assert list((tmp_path / "tmp").iterdir()) == []


def test_lines_copied_from_the_last_file_give_the_file_made_afresh(tmp_path: Path) -> None:
    """Over rounds of edits (items kept, made again, removed, added, left with no entries, a
    synonym), a builder that copies from the last ``topics.json`` the line of every topic no
    changed item is in (:meth:`TopicBuilder.lines_from`) writes the bytes of one given every
    entry afresh; lines are copied in every round after the first, and those of topics a
    changed item is in are not."""
    import hashlib
    import random

    from arkai.search.topics import KeptEntries, TopicBuilder, WrittenTopics

    rng = random.Random(11)
    record, path = tmp_path / "kept.bin", tmp_path / "topics.json"
    items: dict[str, list[tuple[str, str, str]]] = {}
    old_items: dict[str, list[tuple[str, str, str]]] = {}
    tags: dict[str, str] = {}
    copied_rounds = spliced_rounds = 0
    for round_ in range(14):
        items = _kept_round(rng, items) if round_ else _kept_round(rng, {"a": [], "b": []})
        fresh = {cid: str(entries) for cid, entries in items.items()}
        kept = KeptEntries.read(record)
        synonyms = {"hive": ["colony"]} if round_ % 5 == 4 else {}
        with (
            TopicBuilder(len(items), {}, synonyms, keep_terms=False) as got,
            TopicBuilder(len(items), {}, synonyms, keep_terms=False) as want,
        ):
            changed = _add_round(rng, got, want, items, kept, fresh, tags)
            for cid, entries in old_items.items():
                if tags.get(cid) != fresh.get(cid):
                    changed |= {t for t, _, _ in entries}
            expected = b"".join(want.iter_json())
            lines = None
            made = WrittenTopics()
            if kept is not None:
                with open(path, "rb") as fh:
                    sha = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
                    lines = got.lines_from(kept, fh, sha)
                    data = b"".join(got.iter_json(batch=3, lines=lines, written=made))
            else:
                data = b"".join(got.iter_json(batch=3, written=made))
            assert data == expected, round_
            if lines is not None:
                assert not set(lines.spans) & changed  # a changed item's topics are made
                copied_rounds += lines.copied > 0
                spliced_rounds += lines.spliced > 0
            # What is kept of the file: its digest and each line's place, the term's line.
            assert made.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
            for term, (a, b) in made.lines.items():
                opening = b"    " + json.dumps(term, ensure_ascii=False).encode() + b": {"
                assert data[a:b].startswith(opening)
                assert data[b : b + 2] in (b",\n", b"\n ")
            path.write_bytes(data)
            got.keep(record, made)
        if kept is not None:
            kept.close()
        tags, old_items = fresh, items
    assert copied_rounds >= 4  # (seeded: 5 of 13; most rounds change most of the 7 terms)
    assert spliced_rounds >= 4  # (the changed ones patched)


@pytest.mark.parametrize("seed", range(6))
def test_lines_patched_from_the_last_file_give_the_file_made_afresh(
    tmp_path: Path, seed: int
) -> None:
    """The lines of the topics a changed item is in are patched from the last file's (the
    changed items' entries cut out, their new ones put in: :class:`_Splice`) — over rounds of
    a library of 40 items where a few items change, go or come each round, entries at every
    relevance, content IDs of every kind (sorted as strings, escaped in JSON), and now and
    then two entries of one item under one term at one relevance (such a topic is made
    afresh) — and the file is the bytes of one made from every entry afresh."""
    import hashlib
    import random

    from arkai.search.topics import KeptEntries, TopicBuilder, WrittenTopics

    rng = random.Random(seed)
    terms = [f"term {n:02d}" for n in range(30)] + ["é-term", "zz"]
    odd = ['a"quote', "back\\slash", "ünï", "Zed", "0", "~tilde", "日本"]

    def entries(cid: str) -> list[tuple[str, str, str]]:
        out = []
        for n, t in enumerate(rng.sample(terms, rng.randrange(1, 12))):
            rel = rng.choice(RELEVANCES)
            out.append((t, rel, _entry(cid, rel, n)))
            if rng.random() < 0.03:  # a second entry of the item under the term
                other = rel if rng.random() < 0.5 else rng.choice(RELEVANCES)
                out.append((t, other, _entry(cid, other, 100 + n)))
        return out

    def new_cid() -> str:
        return rng.choice([f"{rng.randrange(1 << 64):016x}", rng.choice(odd) + str(rng.random())])

    items = {new_cid(): [] for _ in range(40)}
    items = {cid: entries(cid) for cid in items}
    record, path = tmp_path / "kept.bin", tmp_path / "topics.json"
    tags: dict[str, str] = {}
    spliced = 0
    for round_ in range(10):
        if round_:
            for cid in rng.sample(sorted(items), rng.randrange(1, 4)):
                items[cid] = entries(cid)  # made again
            for cid in rng.sample(sorted(items), rng.randrange(0, 2)):
                del items[cid]
            for _ in range(rng.randrange(0, 2)):
                cid = new_cid()
                items[cid] = entries(cid)
        fresh = {cid: str(e) for cid, e in items.items()}
        kept = KeptEntries.read(record)
        with (
            TopicBuilder(len(items), {}, keep_terms=False) as got,
            TopicBuilder(len(items), {}, keep_terms=False) as want,
        ):
            _add_round(rng, got, want, items, kept, fresh, tags)
            expected = b"".join(want.iter_json())
            made = WrittenTopics()
            if kept is not None:
                with open(path, "rb") as fh:
                    sha = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
                    lines = got.lines_from(kept, fh, sha)
                    assert lines is not None
                    data = b"".join(got.iter_json(batch=5, lines=lines, written=made))
                    spliced += lines.spliced
                    assert lines.spliced > 0, round_
            else:
                data = b"".join(got.iter_json(batch=5, written=made))
            assert data == expected, round_
            path.write_bytes(data)
            got.keep(record, made)
        if kept is not None:
            kept.close()
        tags = fresh
    assert spliced > 20


def test_lines_are_not_copied_from_a_file_that_is_not_the_kept_one(tmp_path: Path) -> None:
    """No line is copied when the file's digest is not the one kept with the entries (edited,
    replaced), when the record was kept without a file, or with one of another form; a kept
    place that does not hold the term's line is made from the entries instead."""
    import hashlib

    from arkai.search.topics import KeptEntries, TopicBuilder, WrittenTopics

    record, path = tmp_path / "kept.bin", tmp_path / "topics.json"

    def build(kept: KeptEntries | None, *, cid_changed: str = "cccc") -> TopicBuilder:
        b = TopicBuilder(3, {}, keep_terms=False)
        for cid, terms in (("aaaa", ["hive", "mite"]), ("bbbb", ["hive", "zeta"]),
                           ("cccc", ["queen"])):  # fmt: skip
            entries = [(t, "high", _entry(cid, "high", n)) for n, t in enumerate(terms)]
            k = kept.match(cid, "t") if kept is not None else None
            if kept is not None and k is not None and cid != cid_changed:
                b.add_kept(cid, kept, k)
            else:
                b.add_entries(cid, entries, ("t", None))
        return b

    made = WrittenTopics()
    with build(None) as b:
        data = b"".join(b.iter_json(written=made))
        b.keep(record, made)
    path.write_bytes(data)
    sha = "sha256:" + hashlib.sha256(data).hexdigest()
    kept = KeptEntries.read(record)
    assert kept is not None and kept.file is not None and kept.file[0] == sha
    with build(kept) as b, open(path, "rb") as fh:
        lines = b.lines_from(kept, fh, sha)
        assert lines is not None and set(lines.spans) == {"hive", "mite", "zeta"}
        assert b"".join(b.iter_json(lines=lines)) == data and lines.copied == 3
    with build(kept) as b, open(path, "rb") as fh:
        assert b.lines_from(kept, fh, "sha256:" + "0" * 64) is None  # another file
    # A place that holds another term's line (a forged record): that topic is made afresh.
    kept.file = (sha, {**kept.file[1], "hive": kept.file[1]["mite"]})
    with build(kept) as b, open(path, "rb") as fh:
        lines = b.lines_from(kept, fh, sha)
        assert lines is not None
        assert b"".join(b.iter_json(lines=lines)) == data and lines.copied == 2
    kept.close()
    # Kept without the file, or with one of another form: nothing is copied.
    with build(None) as b:
        b.keep(record)
    kept = KeptEntries.read(record)
    assert kept is not None and kept.file is None
    kept.close()
    from arkai.search.topics import _writer_code, _written_file

    code = _writer_code()
    bad_forms = [
        None, [], {"sha256": 1, "lines": [], "code": code},
        {"sha256": "s", "lines": [["a", 5, 5]], "code": code},
        {"sha256": "s", "lines": [["a", 1, 5], ["a", 6, 9]], "code": code},
        {"sha256": "s", "lines": [["a", -1, 5]], "code": code},
        {"sha256": "s", "lines": {}, "code": code},
        {"sha256": "s", "lines": [["a", 1, 5]]},  # no code: an earlier writer's
        {"sha256": "s", "lines": [["a", 1, 5]], "code": "sha256:" + "0" * 64},  # other code
    ]  # fmt: skip
    for bad in bad_forms:
        assert _written_file(bad) is None, bad
    good = {"sha256": "s", "lines": [["a", 1, 5]], "code": code}
    assert _written_file(good) == ("s", {"a": (1, 5)})


def test_a_line_that_cannot_be_patched_is_made_afresh(tmp_path: Path) -> None:
    """A kept place of a changed topic that is not its line — another term's, or the term's
    line and the next (it opens as the term's and closes as a line does, but is not of the
    lengths the record gives) — is not patched: that topic is made from its entries."""
    import hashlib

    from arkai.search.topics import KeptEntries, TopicBuilder, WrittenTopics

    record, path = tmp_path / "kept.bin", tmp_path / "topics.json"
    library = {"aaaa": ["hive", "mite"], "bbbb": ["hive", "mite", "zeta"], "cccc": ["mite"]}

    def build(kept: KeptEntries | None, changed: str = "") -> TopicBuilder:
        b = TopicBuilder(3, {}, keep_terms=False)
        for cid, terms in library.items():
            rel = "low" if cid == changed else "high"
            k = kept.match(cid, "t") if kept is not None else None
            if kept is not None and k is not None and cid != changed:
                b.add_kept(cid, kept, k)
            else:
                b.add_entries(cid, [(t, rel, _entry(cid, rel, n)) for n, t in enumerate(terms)],
                              ("t", None))  # fmt: skip
        return b

    made = WrittenTopics()
    with build(None) as b:
        path.write_bytes(b"".join(b.iter_json(written=made)))
        b.keep(record, made)
    sha = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    with build(None, "aaaa") as b:
        want = b"".join(b.iter_json())
    spans = made.lines
    forged = {
        "hive": spans["mite"],  # another term's line
        "mite": spans["mite"],
        "zeta": spans["zeta"],
    }
    kept = KeptEntries.read(record)
    assert kept is not None and kept.file is not None
    for name, file in (
        ("as written", dict(spans)),
        ("another term's line", forged),
        ("the term's line and the next", {**spans, "hive": (spans["hive"][0], spans["mite"][1])}),
    ):
        kept.file = (sha, file)
        with build(kept, "aaaa") as b, open(path, "rb") as fh:
            lines = b.lines_from(kept, fh, sha)
            assert lines is not None and set(lines.old) == {"hive", "mite"}
            assert b"".join(b.iter_json(lines=lines)) == want, name
            assert lines.spliced == (2 if name == "as written" else 1), name
            assert lines.copied == 1  # zeta: no changed item in it
    kept.close()


def test_an_item_given_twice_is_not_kept(tmp_path: Path) -> None:
    """An item whose entries came in two calls has no one span: the record leaves it out."""
    from arkai.search.topics import KeptEntries, TopicBuilder

    with TopicBuilder(2, {}, keep_terms=False) as b:
        b.add_entries("aaaa", [("hive", "high", _entry("aaaa", "high", 0))], ("t", None))
        b.add_entries("bbbb", [("hive", "low", _entry("bbbb", "low", 0))], ("t", None))
        b.add_entries("aaaa", [("mite", "low", _entry("aaaa", "low", 1))], ("t", None))
        b.keep(tmp_path / "kept.bin")
    kept = KeptEntries.read(tmp_path / "kept.bin")
    assert kept is not None
    assert kept.match("aaaa", "t") is None and kept.match("bbbb", "t") is not None
    assert kept.match("bbbb", "other tag") is None
    kept.close()
    # Nor is the file made from them: the next build could not tell that item's topics from
    # the others' (it would copy lines its changed entries are in).
    from arkai.search.topics import WrittenTopics

    with TopicBuilder(2, {}, keep_terms=False) as b:
        b.add_entries("aaaa", [("hive", "high", _entry("aaaa", "high", 0))], ("t", None))
        b.add_entries("aaaa", [("mite", "low", _entry("aaaa", "low", 1))], ("t", None))
        made = WrittenTopics()
        b"".join(b.iter_json(written=made))
        assert set(made.lines) == {"hive", "mite"}
        b.keep(tmp_path / "kept.bin", made)
    kept = KeptEntries.read(tmp_path / "kept.bin")
    assert kept is not None and kept.file is None
    kept.close()


def _kept_record(tmp_path: Path) -> Path:
    from arkai.search.topics import TopicBuilder

    with TopicBuilder(2, {}, keep_terms=False) as b:
        b.add_entries("aaaa", [("hive", "high", _entry("aaaa", "high", 0)),
                               ("mite", "low", _entry("aaaa", "low", 2))], ("ta", 1))  # fmt: skip
        b.add_entries("bbbb", [("hive", "low", _entry("bbbb", "low", 5))], ("tb", 2))
        b.keep(tmp_path / "kept.bin")
    return tmp_path / "kept.bin"


def test_a_damaged_or_forged_record_of_kept_entries_is_not_used(tmp_path: Path) -> None:
    """A byte changed anywhere, the record cut short or grown, another format, or — with
    its digest sealed again — a term, relevance, place or item span out of range, or an
    item twice: not read (the stage ranks from its other caches)."""
    from arkai.adapters.itemcache import read_checked, write_checked
    from arkai.search.topics import KeptEntries

    path = _kept_record(tmp_path)
    good = path.read_bytes()
    kept = KeptEntries.read(path)
    assert kept is not None and kept.match("aaaa", "ta") == 0
    kept.close()
    for damaged in (good[:-1], good + b"x", good[:-3] + b"X" + good[-2:],
                    good[:80] + bytes([good[80] ^ 1]) + good[81:]):  # fmt: skip
        path.write_bytes(damaged)
        assert KeptEntries.read(path) is None
    path.write_bytes(good)
    body = read_checked(path)
    assert body is not None
    head_line, rest = body.split(b"\n", 1)
    head = json.loads(head_line)
    m = head["entries"]

    def forged(change: Any, arrays: bytes = rest) -> bool:
        """Whether the record, changed and sealed again, is read."""
        doc = json.loads(head_line)
        change(doc)
        write_checked(path, json.dumps(doc).encode() + b"\n" + arrays)
        got = KeptEntries.read(path)
        if got is not None:
            got.close()
        return got is not None

    assert forged(lambda d: None)  # (sealed again as it was: read)
    assert not forged(lambda d: d.update(format=2))
    assert not forged(lambda d: d.update(terms=d["terms"][:1]))  # a term id past the list
    assert not forged(lambda d: d["items"][0].__setitem__(4, m + 1))
    assert not forged(lambda d: d["items"][0].__setitem__(3, 3))  # first after its end
    assert not forged(lambda d: d["items"].append(d["items"][0]))  # an item twice
    assert not forged(lambda d: d.update(size=d["size"] - 1))
    # The relevance of the first entry (after the 4-byte term ids) out of range.
    rank_at = 4 * m
    assert not forged(lambda d: None, rest[:rank_at] + b"\x07" + rest[rank_at + 1 :])
    # A place past the text: the last entry's (the int64 places come after the lengths).
    at_end = 4 * m + m + 4 * m + 8 * m
    last = rest[at_end - 8 : at_end]
    big = (int.from_bytes(last, "little") + 1000).to_bytes(8, "little")
    assert not forged(lambda d: None, rest[: at_end - 8] + big + rest[at_end:])


def test_kept_entries_that_name_another_item_are_refused(tmp_path: Path) -> None:
    """A record sealed again with one item's span pointing at another's entries: copying
    them raises :class:`KeptEntriesError` (they would go into ``topics.json`` unread)."""
    from arkai.adapters.itemcache import read_checked, write_checked
    from arkai.search.topics import KeptEntries, KeptEntriesError, TopicBuilder

    path = _kept_record(tmp_path)
    body = read_checked(path)
    assert body is not None
    head_line, rest = body.split(b"\n", 1)
    doc = json.loads(head_line)
    (a, b) = doc["items"]
    a[3:5], b[3:5] = b[3:5], a[3:5]
    write_checked(path, json.dumps(doc).encode() + b"\n" + rest)
    kept = KeptEntries.read(path)
    assert kept is not None
    with TopicBuilder(2, {}, keep_terms=False) as builder:
        k = kept.match("bbbb", "tb")
        assert k is not None
        builder.add_kept("bbbb", kept, k)
        with pytest.raises(KeptEntriesError, match="bbbb"):
            builder.take_kept()
    kept.close()


def test_an_items_entries_do_not_depend_on_the_items_before_it() -> None:
    """Chunk numbers are the item's own: an item with more chunks before another (in the
    file's order) leaves the other's entries as they were — the index stage keeps them as
    text."""
    a = TopicInput("a" * 16, BUILDS, BUILDS.splitlines())
    b = TopicInput("b" * 16, BEES, BEES.splitlines(), ["Varroa"])
    longer = TopicInput("a" * 16, BUILDS + BUILDS, (BUILDS + BUILDS).splitlines())

    def entries(items: list[TopicInput]) -> list[Any]:
        doc = build_topics(items).doc
        return [(t, e) for t, v in doc["topics"].items() for e in v["items"]
                if e["content_id"] == "b" * 16]  # fmt: skip

    assert entries([a, b]) == entries([longer, b]) != []


def _plain_ranking(it: Any, df: dict[str, int], n: int, s: TopicSettings) -> list[Any]:
    """The ranking written plainly, one float at a time and one full sort: what
    ``rank_item``'s arrays and partial selection must give, bit for bit."""
    import math

    from arkai.search.topics import RELEVANCES, Term, _as_phrase, _relevance, normalize_term
    from arkai.search.topics import _chunks_with as find
    from arkai.search.topics import stem_key as key_of

    raw = {t: float(c) * (math.log((1 + n) / (1 + df[t])) + 1.0) for t, c in it.counts.items()}
    norm = math.sqrt(math.fsum(v * v for v in raw.values()))
    pairs = {t: v / norm for t, v in raw.items()
             if " " not in t or it.counts[t] >= s.min_phrase_count}  # fmt: skip
    ordered = sorted(pairs.items(), key=lambda p: (-p[1], p[0]))
    chunk_keys = [(i, f" {k} ") for i, k in enumerate(it.chunk_stems)]
    terms: dict[str, Any] = {}
    chosen: list[list[str]] = []
    for rank, (term, score) in enumerate(ordered):
        words, key = term.split(), key_of(term)
        inside = any(len(words) < len(big) and any(big[i : i + len(words)] == words
                     for i in range(len(big))) for big in chosen)  # fmt: skip
        if len(chosen) == s.top_terms or not key or key in {key_of(" ".join(c)) for c in chosen}:
            continue
        if inside:
            continue
        chosen.append(words)
        relevance = _relevance(rank, score, s)
        terms[term] = Term(term, round(score, 6), relevance, find(key, chunk_keys), "keyphrase")
    rank_of = {t: r for r, (t, _) in enumerate(ordered)}
    for name in sorted({normalize_term(e) for e in it.entities} - {""}):
        if name in terms:
            continue
        phrase = _as_phrase(name)
        rank = rank_of[phrase] if rank_of.get(phrase, 1 << 30) < 64 else len(pairs) + 10
        score = pairs.get(phrase, 0.0)
        terms[name] = Term(name, round(score, 6), _relevance(rank, score, s),
                           find(key_of(name), chunk_keys), "entity")  # fmt: skip
    return sorted(terms.values(), key=lambda t: (RELEVANCES.index(t.relevance), -t.score, t.term))


def test_a_ranking_is_the_plain_computation_bit_for_bit() -> None:
    """``rank_item`` (scores as arrays, the best phrases picked by a partition) gives exactly
    the plainly written ranking — the same score bits, terms, relevances and chunks — on
    random items built to have ties at the selection's edge, short phrases not ranked,
    phrases inside chosen phrases, and entities in and out of the vocabulary; with the
    frequencies passed as an array (as the index stage does) or looked up."""
    import math
    import random

    import numpy as np

    from arkai.search.topics import ItemTerms, _Scores, rank_item, rounded_count

    rng = random.Random(11)
    vocab = [f"w{i:03d}" for i in range(300)]
    s = TopicSettings(top_terms=12, min_phrase_count=2, frequency_bits=0)
    # The default rounding (frequency_bits 5) ranks as the plain computation over the rounded
    # counts does.
    s5 = dataclasses.replace(s, frequency_bits=5)
    checked = 0
    for round_ in range(40):
        counts: dict[str, int] = {}
        for _ in range(rng.randrange(0, 220)):
            size = rng.choice((1, 1, 2, 3))
            counts[" ".join(rng.sample(vocab, size))] = rng.choice((1, 1, 2, 3, 5, 8))
        chosen = rng.sample(sorted(counts), min(len(counts), 3))
        for phrase in chosen:  # the words of a phrase, scoring just below it
            for word in phrase.split():
                counts[word] = counts[phrase]
        # In the terms record's (sorted) order, or any other: the ranking is the same.
        order = sorted(counts.items())
        counts = dict(order if round_ % 2 else rng.sample(order, len(order)))
        # Few distinct frequencies: many equal scores, ties at the 64th place.
        df = {p: rng.choice((1, 2, 3, 40)) for p in counts}
        entities = [w.upper() for w in rng.sample(vocab, 3)] + ["Nobody Here", " ", "W001 Of"]
        chunks = [" ".join(rng.sample(vocab, 30)) for _ in range(6)]
        it = ItemTerms(f"c{round_}", counts, chunks, entities)
        n = 50 + round_
        want = _plain_ranking(it, df, n, s)
        assert rank_item(it, df, n, s) == want
        array = np.array([df[p] for p in counts], dtype=np.int64)
        assert rank_item(it, df, n, s, frequencies=array) == want
        rounded_df = {p: rounded_count(d, 5) for p, d in df.items()}
        assert rank_item(it, df, n, s5) == _plain_ranking(it, rounded_df, rounded_count(n, 5), s)
        assert rank_item(it, df, n, s5, frequencies=array) == rank_item(it, df, n, s5)
        # Every score has the plain computation's bits, in the plain order.
        raw = {t: float(c) * (math.log((1 + n) / (1 + df[t])) + 1.0) for t, c in counts.items()}
        norm = math.sqrt(math.fsum(v * v for v in raw.values()))
        pairs = sorted(((t, v / norm) for t, v in raw.items() if " " not in t or counts[t] > 1),
                       key=lambda p: (-p[1], p[0]))  # fmt: skip
        assert list(_Scores(counts, df, n, s).best_first(64)) == pairs
        checked += len(want)
    assert checked > 300


def test_rounded_counts_keep_their_leading_bits() -> None:
    """The IDF's counts rounded down to ``bits`` significant bits: exact below ``2 ** bits``,
    at most a ``2 ** -(bits - 1)`` part lower above, a fixed point of itself, never above
    the count, in order; 0 bits keeps every count."""
    import random

    import numpy as np

    from arkai.search.topics import rounded, rounded_count

    assert [rounded_count(n, 5) for n in (0, 1, 31, 32, 33, 99, 100, 1000, 10_001)] == [
        0, 1, 31, 32, 32, 96, 100, 992, 9728,
    ]  # fmt: skip
    assert rounded_count(10_001, 0) == 10_001
    rng = random.Random(3)
    values = np.array(sorted(rng.randrange(0, 2**40) for _ in range(5000)), dtype=np.int64)
    for bits in (1, 3, 5, 8):
        got = rounded(values, bits)
        assert (got <= values).all() and (np.diff(got) >= 0).all()
        assert (rounded(got, bits) == got).all()
        small = values < 2**bits
        assert (got[small] == values[small]).all()
        big = ~small
        assert (values[big] - got[big] <= values[big] >> (bits - 1)).all()
        assert all(bin(int(v)).rstrip("0").count("1") <= bits for v in got[big][:200])


def test_rounded_frequencies_only_move_scores_above_the_exact_range() -> None:
    """With ``frequency_bits`` the scores are TF-IDF over the rounded counts: the same as
    exact ones while every count is below ``2 ** frequency_bits``, those of the rounded counts
    above."""
    from arkai.search.topics import TopicSettings, _Scores, rounded_count

    counts = {"hive": 3, "queen bee": 2, "varroa": 1}
    df = {"hive": 40, "queen bee": 7, "varroa": 1000}
    exact = _Scores(counts, df, 5000, TopicSettings(frequency_bits=0))
    same = _Scores(counts, {k: min(v, 31) for k, v in df.items()}, 31, TopicSettings())
    assert (
        same.scores.tolist()
        == _Scores(
            counts, {k: min(v, 31) for k, v in df.items()}, 31, TopicSettings(frequency_bits=0)
        ).scores.tolist()
    )
    rounded5 = _Scores(counts, df, 5000, TopicSettings(frequency_bits=5))
    by_hand = _Scores(
        counts, {k: rounded_count(v, 5) for k, v in df.items()}, rounded_count(5000, 5),
        TopicSettings(frequency_bits=0),
    )  # fmt: skip
    assert rounded5.scores.tolist() == by_hand.scores.tolist()
    assert rounded5.scores.tolist() != exact.scores.tolist()
    for phrase in counts:
        assert rounded5.score(phrase) == by_hand.score(phrase)
