"""CITES counts kept incrementally (arkai.search.citecache): always what searching every
transcript for every needle gives (arkai.search.graph.find_cites), whatever was added, removed,
retitled or edited and whatever was done to the file; and a transcript is read only when it
changed or a needle text it was not searched for appeared."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from arkai.adapters.itemcache import write_checked
from arkai.core import canonjson
from arkai.search.citecache import FILE, CiteUpdate, update_cites
from arkai.search.graph import Needle, cite_needles, find_cites, node_id

WORDS = ["bees", "hives", "wax", "city", "roof", "Lisbon", "garden", "varroa", "honey", "the"]


@dataclass
class Lib:
    rng: random.Random
    items: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)
    """content ID → (title, URL, transcript)."""
    reads: list[str] = field(default_factory=list)
    n: int = 0

    def title(self) -> str:
        # Titles that contain one another ("Honey city" in "Honey city roof") and short ones
        # (under MIN_TITLE_CHARS: never a needle).
        return " ".join(self.rng.sample(WORDS, self.rng.randint(1, 3))).capitalize()

    def text(self) -> str:
        others = [t for t, _, _ in self.items.values()] + [
            u for _, u, _ in self.items.values() if u
        ]
        picks = self.rng.sample(others, min(len(others), self.rng.randint(0, 4)))
        words = self.rng.choices(WORDS, k=30)
        return " ".join(words + picks * self.rng.randint(1, 2)) + f" x{self.rng.random()}"

    def add(self) -> None:
        cid = f"{self.n:016x}"
        self.n += 1
        url = f"https://example.org/{self.n}" if self.rng.random() < 0.4 else None
        self.items[cid] = (self.title(), url, self.text())

    def rows(self) -> list[tuple[str, str, Callable[[], str]]]:
        def reader(cid: str) -> Callable[[], str]:
            def read() -> str:
                self.reads.append(cid)
                return self.items[cid][2]

            return read

        return [
            (cid, hashlib.sha256(text.encode()).hexdigest(), reader(cid))
            for cid, (_, _, text) in sorted(self.items.items())
        ]

    def needles(self) -> list[Needle]:
        return cite_needles((cid, t, u) for cid, (t, u, _) in sorted(self.items.items()))

    def reference(self) -> dict[str, dict[str, int]]:
        needles = self.needles()
        return {
            node_id("content", cid): find_cites(cid, text, needles)
            for cid, (_, _, text) in self.items.items()
        }


def run(lib: Lib, root: Path, *, full: bool = False) -> CiteUpdate:
    lib.reads.clear()
    up = update_cites(root, lib.rows(), lib.needles(), full=full)
    assert up.cites == lib.reference()
    return up


@pytest.mark.parametrize("seed", range(3))
def test_random_rounds_equal_a_search_of_everything(tmp_path: Path, seed: int) -> None:
    lib = Lib(random.Random(seed))
    for _ in range(25):
        lib.add()
    up = run(lib, tmp_path)
    assert up.searched == 25 and not up.rejected
    assert any(up.cites.values())  # some items do cite others
    up = run(lib, tmp_path)  # nothing changed: no transcript read
    assert (up.searched, up.searched_new, lib.reads) == (0, 0, [])
    for round_ in range(40):
        what = round_ % 5
        cids = sorted(lib.items)
        if what == 0:  # one added: its own search, and the others' for its title/URL only
            lib.add()
        elif what == 1:  # one removed: nothing to read
            del lib.items[lib.rng.choice(cids)]
        elif what == 2:  # one retitled
            cid = lib.rng.choice(cids)
            _, url, text = lib.items[cid]
            lib.items[cid] = (lib.title(), url, text)
        elif what == 3:  # one transcript edited
            cid = lib.rng.choice(cids)
            title, url, _ = lib.items[cid]
            lib.items[cid] = (title, url, lib.text())
        before = set(lib.items)
        up = run(lib, tmp_path)
        assert set(lib.reads) <= before
        if what == 0:  # the added item is searched for every text, the others for its own
            assert up.searched == 1 and up.searched_new <= len(before) - 1
        if what == 2:  # every item for the new title only (when it is a needle)
            assert up.searched == 0
        if what == 1:
            assert up.searched == 0 and lib.reads == []
        if what == 3:
            assert up.searched == 1 and up.searched_new == 0 and len(lib.reads) == 1
        if what == 4:  # nothing changed
            assert (up.searched, up.searched_new, lib.reads) == (0, 0, [])
    # A full run ignores the file and gives the same counts.
    up = run(lib, tmp_path, full=True)
    assert up.searched == len(lib.items)


def test_a_text_that_goes_and_comes_back_is_searched_again(tmp_path: Path) -> None:
    lib = Lib(random.Random(4))
    for _ in range(6):
        lib.add()
    first = sorted(lib.items)[0]
    lib.items[first] = ("Honey garden roof", None, "nothing here")
    second = sorted(lib.items)[1]
    lib.items[second] = (
        "Plain other title",
        None,
        "we read Honey garden roof twice: Honey garden roof",
    )
    run(lib, tmp_path)
    lib.items[first] = ("Another name entirely", None, "nothing here")
    run(lib, tmp_path)
    # Meanwhile the transcript that cited it changed to cite it three times; its key changed,
    # so it is searched afresh — and an unchanged one that cited it still counts it when the
    # title comes back.
    third = sorted(lib.items)[2]
    lib.items[third] = ("Third one here", None, "Honey garden roof")
    run(lib, tmp_path)
    lib.items[first] = ("Honey garden roof", None, "nothing here")
    up = run(lib, tmp_path)
    assert up.cites[node_id("content", second)] == {node_id("content", first): 2}
    assert up.cites[node_id("content", third)] == {node_id("content", first): 1}


def _write(path: Path, body: dict[str, object]) -> None:
    """The file with this body and a header that matches it (a forgery the checks beyond
    the digest must catch)."""
    write_checked(path, canonjson.dumps_line(body).encode("utf-8"))


def _damage(path: Path, how: str) -> None:
    head, body = path.read_bytes().split(b"\n", 1)
    data = json.loads(body)
    if how == "garbage":
        path.write_bytes(b"\x00\xffnot json")
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "not-an-object":
        _write(path, [1, 2])  # type: ignore[arg-type]
    elif how == "old-version":
        _write(path, data | {"version": 0})
    elif how == "a-count-edited":  # a number changed, the header left as it was
        item = next(e for e in data["items"].values() if e["found"])
        text = next(iter(item["found"]))
        item["found"][text] += 1
        path.write_bytes(head + b"\n" + canonjson.dumps_line(data).encode("utf-8"))
    elif how == "text-from-the-future":  # a text's version later than the file's
        t = next(iter(data["texts"]))
        data["texts"][t] = data["at"] + 5
        _write(path, data)
    elif how == "item-from-the-future":  # an item claims to be searched through texts to come
        for e in data["items"].values():
            e["at"] = data["at"] + 5
        _write(path, data)
    elif how == "forged-counts":  # counts that are not counts
        for e in data["items"].values():
            e["found"] = {"Honey": "many"}
        _write(path, data)
    elif how == "wrong-key":  # an entry made from other inputs
        for e in data["items"].values():
            e["key"] = "0" * 64
        _write(path, data)
    else:  # pragma: no cover
        raise AssertionError(how)


DAMAGE = {  # → (file rejected, items searched afresh)
    "garbage": (True, 12),
    "truncated": (True, 12),
    "not-an-object": (True, 12),
    "old-version": (True, 12),
    "a-count-edited": (True, 12),
    "text-from-the-future": (True, 12),
    "item-from-the-future": (False, 12),
    "forged-counts": (False, 12),
    "wrong-key": (False, 12),
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_file_is_searched_afresh_never_trusted(tmp_path: Path, how: str) -> None:
    lib = Lib(random.Random(7))
    for _ in range(12):
        lib.add()
    run(lib, tmp_path)
    _damage(tmp_path / FILE, how)
    lib.add()  # and a needle text appears meanwhile
    up = run(lib, tmp_path)
    rejected, searched = DAMAGE[how]
    assert up.rejected is rejected
    assert up.searched >= searched
    up = run(lib, tmp_path)  # written back whole: the next run reads nothing
    assert (up.searched, up.searched_new, up.rejected) == (0, 0, False)
