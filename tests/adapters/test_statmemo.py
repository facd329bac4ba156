"""StatMemo: values remembered with the stamps of their files, held as text
(arkai.adapters.itemcache)."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from pathlib import Path

from arkai.adapters.itemcache import SETTLED_NS, StatMemo, stamp
from arkai.core import canonjson


def _settled_file(path: Path, text: str) -> list[int] | None:
    path.write_text(text)
    old = time.time_ns() - 10 * SETTLED_NS
    os.utime(path, ns=(old, old))
    return stamp(path)


def test_saved_file_is_the_canonical_document_and_reads_back(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    sa, sb = _settled_file(a, "one"), _settled_file(b, "two")
    memo = StatMemo(tmp_path / "stamps.json", salt="s1 ünï")
    memo.put("zé/a", [sa, None], "sha256:aa")
    memo.put('b "q"', [sb], "sha256:bb")
    memo.save()
    text = (tmp_path / "stamps.json").read_text()
    doc = json.loads(text)
    assert text == canonjson.dumps_line(doc)  # the bytes canonjson gives the same document
    assert doc["entries"] == {'b "q"': [[sb], "sha256:bb"], "zé/a": [[sa, None], "sha256:aa"]}
    again = StatMemo(tmp_path / "stamps.json", salt="s1 ünï")
    assert again.get("zé/a", [sa, None]) == "sha256:aa"
    assert again.get('b "q"', [sb]) == "sha256:bb"
    assert again.get('b "q"', [stamp(a)]) is None  # another file's stamp
    assert StatMemo(tmp_path / "stamps.json", salt="other").get("zé/a", [sa, None]) is None
    b.write_text("changed!")
    assert again.get('b "q"', [stamp(b)]) is None
    # Only what a run used is written again.
    third = StatMemo(tmp_path / "stamps.json", salt="s1 ünï")
    assert third.get("zé/a", [sa, None]) == "sha256:aa"
    third.save()
    assert set(json.loads((tmp_path / "stamps.json").read_text())["entries"]) == {"zé/a"}


def test_a_file_recorded_within_a_tick_is_not_trusted(tmp_path: Path) -> None:
    f = tmp_path / "fresh.txt"
    f.write_text("new")
    memo = StatMemo(tmp_path / "stamps.json")
    memo.put("fresh", [stamp(f)], "sha256:ff")
    memo.save()  # saved within SETTLED_NS of the file's mtime: racy, dropped when read
    assert StatMemo(tmp_path / "stamps.json").get("fresh", [stamp(f)]) is None


def test_entries_are_held_as_text(tmp_path: Path) -> None:
    """An entry is its stamps' compact JSON and its value (the parsed lists were ≈ 1 KB)."""
    n = 5000
    old = time.time_ns() - 10 * SETTLED_NS
    entries = {f"{i:016x}": [[[9000 + i, old, 3_500_000 + i]] * 4 + [None], "sha256:" + "ab" * 32]
               for i in range(n)}  # fmt: skip
    path = tmp_path / "stamps.json"
    path.write_text(
        canonjson.dumps_line({"entries": entries, "salt": "", "saved_ns": time.time_ns()})
    )
    tracemalloc.start()
    try:
        memo = StatMemo(path)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(memo.known) == n
    assert memo.get("0000000000000007", entries["0000000000000007"][0]) == "sha256:" + "ab" * 32
    assert held / n < 500, held / n
