"""The search pipeline's results, pinned: speed work must not change a ranking.

A fixed synthetic corpus (seeded words, vectors whose entries are multiples of 1/8, so every
dot product is exact in float32 whatever BLAS computes it) is searched through
``arkai.search.pipeline.rank`` (every mode, with and without a mask, both fusions, rows shared
by several documents, documents without a row) and through ``arkai.ops.search.search`` (an
``index/`` in the product's format, grouping, snippets, ``--explain``). The results are
compared with ``tests/fixtures/search_golden.json``, recorded before the pipeline was made
faster. ``ARKAI_WRITE_GOLDEN=1`` rewrites that file (only when a change of results is meant).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from arkai.adapters.chunkparts import write_lines
from arkai.core import canonjson
from arkai.errors import NotFoundError
from arkai.search.chunks import Chunk, chunk_key
from arkai.search.pipeline import Corpus, build_lexical, rank
from arkai.search.vectors import VectorStore

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "search_golden.json"
DIM = 16
N_DOCS = 900
WORDS = [
    "hive", "queen", "mite", "varroa", "honey", "sensor", "weight", "swarm", "comb", "brood",
    "pollen", "nectar", "winter", "spring", "frame", "smoker", "drone", "worker", "wax", "bee",
    "garden", "clover", "meadow", "cost", "price", "battery", "signal", "apiary", "colony",
    "temperature", "humidity", "entrance", "feeder", "sugar", "syrup", "treatment", "acid",
]  # fmt: skip
QUERIES = [
    "varroa mite treatment",
    "queen brood frame",
    "hive weight sensor battery",
    "winter honey",
    "clover meadow pollen nectar",
    "price",
    "zzzz qqqq",
    "colony temperature humidity entrance",
]


def _vec(rng: random.Random) -> list[float]:
    return [rng.randint(-4, 4) / 8 for _ in range(DIM)]


def _corpus() -> tuple[list[str], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Texts, the store's rows, and each document's row (-1: none; some rows shared)."""
    rng = random.Random(11)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))) for _ in range(N_DOCS)]
    n_rows = N_DOCS - 60
    vecs = np.asarray([_vec(rng) for _ in range(n_rows)], dtype=np.float32)
    rows = np.arange(N_DOCS, dtype=np.int64) % n_rows  # the last 60 share rows with the first
    for i in rng.sample(range(N_DOCS), 25):
        rows[i] = -1
    return texts, vecs, rows


def _queries() -> list[tuple[str, npt.NDArray[np.float32]]]:
    rng = random.Random(5)
    return [(q, np.asarray(_vec(rng), dtype=np.float32)) for q in QUERIES]


def _ranking_cases() -> dict[str, Any]:
    texts, vecs, rows = _corpus()
    store = VectorStore(DIM, "golden")
    store.add([f"k{i}" for i in range(len(vecs))], vecs)
    corpus = Corpus(build_lexical([("", t) for t in texts]), store, rows)
    mask = np.asarray([random.Random(i).random() < 0.6 for i in range(N_DOCS)], dtype=bool)
    out: dict[str, Any] = {}
    for text, qvec in _queries():
        for mode in ("hybrid", "lexical", "vector"):
            for masked in (False, True):
                for fusion in ("hybrid", "rrf") if mode == "hybrid" else ("hybrid",):
                    got = rank(corpus, text, mode=mode, query_vec=qvec, depth=40,
                               mask=mask if masked else None, fusion=fusion)  # fmt: skip
                    key = f"{mode}/{fusion}/{'mask' if masked else 'all'}/{text}"
                    out[key] = {
                        "found": got.found,
                        "best": got.best_similarity,
                        "ranked": [[r.doc, round(r.score, 9)] for r in got.ranked],
                        "lanes": [r.lanes for r in got.ranked[:8]],
                    }
    return out


def _write_index(root: Path) -> None:
    """``root/index`` in the product's format: 9 items of 100 chunks each."""
    texts, vecs, rows = _corpus()
    folder = root / "index"
    folder.mkdir(parents=True)
    chunks, items, keys = [], [], []
    for n, text in enumerate(texts):
        cid = f"{n // 100:016x}"
        line = 1 + (n % 100) * 3
        chunks.append(Chunk(chunk_key(cid, text), cid, "transcript", line, line + 2, (0, 0), text))
        keys.append(chunks[-1].key)
        if n % 100 == 0:
            title = f"Talk {n // 100}"
            items.append({"id": cid, "title": title, "content_type": "talk", "tags": [],
                          "created_at": "2026-01-01T00:00:00Z",
                          "path": f"library/talk/{title} ({cid[:8]})"})  # fmt: skip
    write_lines(folder / "chunks", (canonjson.dumps_line(c.to_dict()).encode() for c in chunks))
    (folder / "catalog.json").write_text(canonjson.dumps({"version": 1, "items": items}))
    build_lexical([("", t) for t in texts]).save(folder / "lexical")
    store = VectorStore(DIM, "golden")
    # Shared rows: chunks with the same row get the same vector (their keys differ).
    store.add(keys, np.asarray([vecs[r] if r >= 0 else vecs[0] for r in rows], dtype=np.float32))
    store.save(folder / "vectors")
    (folder / "manifest.json").write_text(canonjson.dumps({"embedder": {"name": "golden"}}))


class _QueryEmbedder:
    name = "golden"
    dim = DIM

    def __init__(self) -> None:
        self.vecs = dict(_queries())

    def encode(self, texts: list[str], *, batch_size: int = 64, kind: str = "passage") -> Any:
        return np.asarray([self.vecs[t] for t in texts], dtype=np.float32)


def _search_cases(root: Path) -> dict[str, Any]:
    from arkai.ops import Repo
    from arkai.ops.search import search

    out: dict[str, Any] = {}
    for text, _ in _queries()[::2]:
        for mode in ("hybrid", "lexical", "vector"):
            for k, per_item in ((10, 3), (3, 1)):
                key = f"{mode}/k{k}/{text}"
                try:
                    got = search(
                        Repo.at(root), text, k=k, mode=mode, explain=k == 3, per_item=per_item
                    )
                except NotFoundError as exc:
                    out[key] = f"not found: {exc}"
                    continue
                d = got.to_dict()
                # Added after the golden was recorded: the hooks' part of --explain (empty
                # here, no hook configured); everything the golden holds must stay the same.
                if d.get("hooks") == {}:
                    del d["hooks"]
                out[key] = d
    return out


def _compare(name: str, got: dict[str, Any]) -> None:
    got = json.loads(json.dumps(got))  # tuples → lists, as in the file
    if os.environ.get("ARKAI_WRITE_GOLDEN") == "1":
        stored = json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}
        stored[name] = got
        GOLDEN.write_text(json.dumps(stored, sort_keys=True, separators=(",", ":")) + "\n")
    want = json.loads(GOLDEN.read_text())[name]
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_pipeline_rankings_unchanged() -> None:
    _compare("rank", _ranking_cases())


def test_search_results_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arkai.search import embed

    fake = _QueryEmbedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
    _write_index(tmp_path)
    _compare("search", _search_cases(tmp_path))
