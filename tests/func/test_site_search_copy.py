"""The site's search index takes each unchanged page's entries from the last index, runs of
pages that lay one after another copied as one read: always the bytes, and the places, of an
index made from every page's entries file."""

from __future__ import annotations

import io
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from arkai.site import hooks
from arkai.site.search import ALL, NO_TRANSCRIPT_TEXT


@dataclass(frozen=True)
class Page:
    url: str
    src_uri: str


def _dump(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _rows(rng: random.Random, n: int) -> list[list[object]]:
    if rng.random() < 0.25:
        return []  # a page with no entries
    boost: list[object] = [2.0]
    return [[f"a{k}" if k else "", f"Title {n} «{k}»", f"text {rng.random()} é",
             *(boost if k == 0 else [])] for k in range(rng.randint(1, 3))]  # fmt: skip


class Counting(io.BytesIO):
    reads = 0

    def read(self, size: int | None = -1, /) -> bytes:
        Counting.reads += 1
        return super().read(size)


def _index(
    pages: list[Page], rows_dir: Path, scope: str, old: bytes | None, reuse: dict[str, str]
) -> tuple[bytes, dict[str, str]]:
    ours, stamps = [], []
    for p in pages:
        if (st := hooks._regular_stat(f"{rows_dir}/{p.src_uri}.json")) is not None:
            ours.append(p)
            stamps.extend(st)
    out, ranges = io.BytesIO(), {}
    out.write(b'{"docs":[{"location":""}')  # Material's entries before arkai's
    prior = Counting(old) if old is not None else None
    hooks._page_entries(out, prior, False, ours, stamps, reuse, ranges, str(rows_dir), scope,
                        _dump)  # fmt: skip
    return out.getvalue(), ranges


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("scope", [ALL, NO_TRANSCRIPT_TEXT])
def test_copied_runs_give_the_index_of_every_entries_file(
    tmp_path: Path, seed: int, scope: str
) -> None:
    rng = random.Random(seed)
    rows_dir = tmp_path / "search"
    (rows_dir / "items").mkdir(parents=True)
    (rows_dir / "transcripts").mkdir()
    pages: list[Page] = []
    clock = 1_700_000_000_000_000_000

    def write(page: Page, n: int) -> None:
        nonlocal clock
        path = rows_dir / f"{page.src_uri}.json"
        path.write_bytes(_dump(_rows(rng, n)))
        clock += 1_000_000
        os.utime(path, ns=(clock, clock))

    for n in range(80):
        kind = "transcripts" if n % 3 == 0 else "items"
        page = Page(f"{kind}/p{n:03d}/", f"{kind}/p{n:03d}.md")
        pages.append(page)
        write(page, n)
    old, reuse = _index(pages, rows_dir, scope, None, {})
    for _ in range(4):
        # Some pages change, some go, some come, some lose their entries file.
        for page in rng.sample(pages, rng.randint(0, 10)):
            write(page, rng.randrange(1000))
        for page in rng.sample(pages, rng.randint(0, 5)):
            pages.remove(page)
        for _ in range(rng.randint(0, 4)):
            n = rng.randrange(80, 10_000)
            page = Page(f"items/q{n}/", f"items/q{n}.md")
            if page not in pages:
                pages.insert(rng.randrange(len(pages) + 1), page)
                write(page, n)
        for page in rng.sample(pages, rng.randint(0, 2)):
            (rows_dir / f"{page.src_uri}.json").unlink(missing_ok=True)
        Counting.reads = 0
        got, got_ranges = _index(pages, rows_dir, scope, old, reuse)
        reads = Counting.reads
        want, want_ranges = _index(pages, rows_dir, scope, None, {})
        assert got == want
        assert got_ranges == want_ranges
        reused = sum(1 for p in pages
                     if (r := hooks._range(reuse.get(p.url))) and r[3]
                     and (st := hooks._regular_stat(f"{rows_dir}/{p.src_uri}.json"))
                     and (r[0], r[1]) == st)  # fmt: skip
        assert reads <= reused and (reused < 10 or reads < reused / 2), (reads, reused)
        old, reuse = got, got_ranges
