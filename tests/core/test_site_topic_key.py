"""A topic page's key (site/indexes.py ``topic_key``) is put together from parts, with each
chunk's key written once per build; it must stay the digest of the whole key's compact JSON,
so the pages a site made before keep their keys (and are not rendered again)."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from arkai.site import indexes
from arkai.site.indexes import CHUNK_LINKS, SNIPPET_CHARS, SNIPPETS, Library, Topic, topic_key
from arkai.site.links import Urls


def reference(lib: Library, t: Topic) -> str:
    """The key as the whole object's JSON, the way it was first defined."""
    obj = [
        t.term,
        t.synonyms,
        [
            [e["content_id"], e["relevance"], indexes._passages(e), lib.title(e["content_id"]),
             [indexes._chunk_fields(lib, e["content_id"], p) for p in e["chunks"][:CHUNK_LINKS]]]
            for e in t.items
        ],
        lib.urls.directory_urls,
        [CHUNK_LINKS, SNIPPETS, SNIPPET_CHARS],
    ]  # fmt: skip
    return hashlib.sha256(json.dumps(obj, separators=(",", ":")).encode()).hexdigest()


def test_topic_keys_are_the_digest_of_the_whole_key() -> None:
    rng = random.Random(4)
    titles = ["Hive notes", "Ünïcode “quotes” \\ back", 'Say "hi"', "Emoji 🐝", "\u2028 sep"]
    summaries = [
        {"id": f"c{i}", "title": titles[i % len(titles)], "lines": rng.choice([3, 40, None])}
        for i in range(12)
    ]
    topics: dict[str, Topic] = {}
    for n, term in enumerate(["varroa", "queen bee", "brood ü", 'odd "term"', "empty syn"]):
        items: list[dict[str, Any]] = []
        for s in rng.sample(summaries, 5):
            entry: dict[str, Any] = {
                "content_id": s["id"],
                "relevance": rng.choice(["high", "medium", "low"]),
                "chunks": rng.sample(range(40), rng.randint(0, 5)),
            }
            if n % 2:
                entry["passages"] = rng.randint(1, 9)
            items.append(entry)
        topics[term] = Topic(term, items, ["syn é", "x"] if n % 2 else [])
    for directory_urls in (True, False):
        lib = Library(summaries=[dict(s) for s in summaries], site_name="t",
                      urls=Urls(directory_urls), topics=dict(topics))  # fmt: skip
        lib.chunk_digests = {
            p: (hashlib.blake2b(str(p).encode(), digest_size=16).digest(),
                rng.choice([None, 1, 2, 30, 50]), rng.choice([None, 2, 45]))
            for p in range(0, 40, 2)
        }  # fmt: skip
        for t in lib.topics.values():
            assert topic_key(lib, t) == reference(lib, t)
            assert topic_key(lib, t) == reference(lib, t)  # asked again: from the memo
