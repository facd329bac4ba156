"""Search benchmark: embedding speed and quality, search latency, cold start (DESIGN §7).

Prints one JSON object on stdout (progress on stderr); writes nothing into the repository
(temporary folders only; the ONNX export goes to arkai's model cache, ``--cache-dir`` to move
it). Everything random is drawn from one seeded RNG.

    .venv/bin/python bench/search.py            # full: a few minutes
    .venv/bin/python bench/search.py --quick    # smoke test, < 60 s once the ONNX export exists

What it measures:

* **embedding** — plain sentence-transformers (PyTorch, CPU) and the ONNX int8 embedder on the
  same chunks (60–120 words cut from the real transcripts and SciFact abstracts), interleaved
  in rounds (ONNX then PyTorch on each slice) so that load from other processes on a shared
  machine hits both alike; throughput, speed-up (also per round), cosine between their rows.
* **index_build** — the vector lane as the index stage runs it (``VectorStore.load``,
  ``missing``, embed, ``add``, ``prune``, ``save``), then again after 5% of the chunks change:
  only those are embedded. BM25 build time on the same chunks.
* **scifact** — nDCG@10 of each embedder on SciFact *train*: a subsample of ``--ndcg-docs``
  documents made of the relevant documents of randomly drawn judged queries (about half the
  budget; those queries are the ones evaluated) plus random distractors; ``5183`` = the whole
  corpus and every judged query. Exact dot-product ranking; binary qrels.
* **latency** — warm, in-process, per query, at 10,000 and 100,000 chunks: the product's own
  search operation (``arkai.ops.search.search``: markup, filters, the one lanes + fusion
  pipeline of ``arkai.search.pipeline``, grouping into items, snippets) in each mode, over an
  ``index/`` written in the product's format (100 chunks per item); ``hybrid`` includes
  embedding the query, shown on its own as ``query_embedding``. The chunks are synthetic —
  random real sentences joined to 60–120 words — because the real data holds far fewer; their
  vectors are synthetic too, since embedding 100,000 chunks would take most of an hour here:
  each is a real chunk's
  embedding plus Gaussian noise (σ = ``--sigma`` per dimension, cosine ≈ 0.83 to its source),
  renormalised. The timed work (a 100,000 × 384 float32 scan, the top-k, BM25 over a real
  vocabulary) is the same as with real rows. Queries are real SciFact claims, embedded for
  real.
* **floor** — the vector lane's similarity floor (``arkai.search.pipeline.MIN_SIMILARITY``)
  against SciFact: the best cosine that nonsense strings and off-topic questions reach over
  the corpus sample, and the share of relevant (query, abstract) pairs whose cosine falls under
  the floor (those would be found by the lexical lane only).
* **cold_start** — one query in a fresh process. When ``arkai search`` exists it is run
  against a knowledge repo the bench builds in a temporary folder (``arkai init --no-git``,
  ``arkai add`` the real transcripts, ``arkai reindex``), or ``--cli-repo``; a probe run of
  the same command reports whether torch / onnxruntime were imported. A small script that
  calls the product's search operation on the 10,000-chunk index (no CLI) is timed as well.

Numbers from a two-core machine shared with other work vary by ±30% run to run; ratios taken
within one run (speed-up per round) are steadier than absolute rates.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
if not DEFAULT_DATA.is_dir():
    DEFAULT_DATA = Path("/work/shared/data")

_TAG = re.compile(r"<[^>]+>")
_TIMING = re.compile(r"^\d{2}:\d{2}(:\d{2})?[.,]\d{3}\s+-->")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def log(msg: str) -> None:
    print(f"[bench/search] {msg}", file=sys.stderr, flush=True)


# -- data ------------------------------------------------------------------------------


def _cue_lines(path: Path) -> list[str]:
    """Text lines of an SRT or VTT file: no headers, numbers, timings or tags; the rolling
    repeats of auto captions removed."""
    out: list[str] = []
    recent: list[str] = []
    in_header = path.suffix == ".vtt"
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if in_header:
            if _TIMING.match(line):
                in_header = False
            continue
        if not line or line.isdigit() or _TIMING.match(line):
            continue
        text = " ".join(_TAG.sub("", line).split())
        if not text or text in recent:
            continue
        recent = [*recent[-3:], text]
        out.append(text)
    return out


def transcript_texts(folder: Path) -> list[str]:
    """One text per transcript in ``folder`` (SRT, VTT, youtube-transcript-api JSON, TXT)."""
    texts: list[str] = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix in (".srt", ".vtt"):
            if (path.parent / "transcript.txt").is_file():
                continue  # the same talk as its transcript.txt
            texts.append(" ".join(_cue_lines(path)))
        elif path.suffix == ".txt":
            texts.append(" ".join(path.read_text(encoding="utf-8").split()))
        elif path.suffix == ".json" and path.name.endswith("_transcript.json"):
            data = json.loads(path.read_text(encoding="utf-8"))
            texts.append(" ".join(str(d.get("text", "")) for d in data if isinstance(d, dict)))
    return [" ".join(t.split()) for t in texts if t.strip()]


def load_scifact(folder: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """(doc id → title + text, query id → text, train qrels)."""
    docs: dict[str, str] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            docs[str(d["_id"])] = f"{d.get('title', '')} {d.get('text', '')}".strip()
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            queries[str(q["_id"])] = str(q["text"])
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "train.tsv").open(encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and int(parts[2]) > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return docs, queries, qrels


def cut_chunks(text: str, rng: random.Random, lo: int = 60, hi: int = 120) -> list[str]:
    """``text`` cut into consecutive chunks of ``lo``–``hi`` words (a shorter tail dropped)."""
    words = text.split()
    out: list[str] = []
    i = 0
    while len(words) - i >= lo:
        n = rng.randint(lo, hi)
        out.append(" ".join(words[i : i + n]))
        i += n
    return out


def real_chunks(data: Path, docs: dict[str, str], n: int, rng: random.Random) -> list[str]:
    """``n`` chunks: every transcript chunk (up to half of ``n``), the rest from abstracts."""
    tchunks = [c for t in transcript_texts(data / "transcripts") for c in cut_chunks(t, rng)]
    rng.shuffle(tchunks)
    tchunks = tchunks[: n // 2]
    ids = sorted(docs)
    rng.shuffle(ids)
    schunks: list[str] = []
    for i in ids:
        if len(tchunks) + len(schunks) >= n:
            break
        schunks.extend(cut_chunks(docs[i], rng)[:2])
    chunks = tchunks + schunks[: n - len(tchunks)]
    rng.shuffle(chunks)
    return chunks


def sentences_of(texts: Sequence[str]) -> list[str]:
    out: list[str] = []
    for t in texts:
        for s in _SENT.split(t):
            w = len(s.split())
            if 4 <= w <= 60:
                out.append(s)
            elif w > 60:  # unpunctuated captions: 8–20 word pieces
                words = s.split()
                for i in range(0, len(words), 14):
                    if len(words[i : i + 14]) >= 8:
                        out.append(" ".join(words[i : i + 14]))
    return out


def synthetic_chunks(sentences: Sequence[str], n: int, rng: random.Random) -> list[str]:
    """``n`` chunks of 60–120 words made by joining randomly drawn real sentences."""
    out: list[str] = []
    m = len(sentences)
    for _ in range(n):
        target = rng.randint(60, 120)
        parts: list[str] = []
        words = 0
        while words < target:
            s = sentences[rng.randrange(m)]
            parts.append(s)
            words += len(s.split())
        out.append(" ".join(parts))
    return out


def chunk_key(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- measuring -------------------------------------------------------------------------


def pct(samples: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000.0
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
    }


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def ndcg10(ranking: Sequence[str], rels: dict[str, int]) -> float:
    try:
        from arkai.search.eval import ndcg_at_k

        return float(ndcg_at_k(ranking, rels, 10))
    except ImportError:
        dcg = sum(
            rels.get(d, 0) / np.log2(i + 2) for i, d in enumerate(ranking[:10]) if rels.get(d)
        )
        ideal = sorted(rels.values(), reverse=True)[:10]
        idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
        return float(dcg / idcg) if idcg else 0.0


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = (a * b).sum(axis=1)
    return {
        "mean": round(float(c.mean()), 5),
        "min": round(float(c.min()), 5),
        "p01": round(float(np.percentile(c, 1)), 5),
    }


# -- sections --------------------------------------------------------------------------


def interleaved(
    texts: Sequence[str], onnx: Any, st: Any, batch: int, rounds: int, what: str
) -> tuple[np.ndarray, np.ndarray, float, float, list[float]]:
    """Both embedders on ``texts`` in ``rounds`` slices (ONNX then PyTorch on each), so a
    load change on a shared machine hits both alike. Returns rows, seconds, per-round ratio."""
    n = len(texts)
    bounds = np.linspace(0, n, rounds + 1).astype(int)
    e_onnx = np.zeros((n, onnx.dim), dtype=np.float32)
    e_st = np.zeros((n, st.dim), dtype=np.float32)
    t_onnx = t_st = 0.0
    ratios: list[float] = []
    for r in range(rounds):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        part = list(texts[lo:hi])
        e_onnx[lo:hi], t1 = timed(partial(onnx.encode, part, batch_size=batch))
        e_st[lo:hi], t2 = timed(partial(st.encode, part, batch_size=batch))
        t_onnx += t1
        t_st += t2
        ratios.append(round(t2 / t1, 2))
        log(
            f"{what} round {r + 1}/{rounds}: ONNX {len(part) / t1:.1f}/s, "
            f"torch {len(part) / t2:.1f}/s"
        )
    return e_onnx, e_st, t_onnx, t_st, ratios


def bench_embedding(
    chunks: Sequence[str], onnx: Any, st: Any, batch: int, rounds: int
) -> tuple[dict[str, Any], np.ndarray]:
    onnx.encode(list(chunks[:8]))  # warm
    st.encode(list(chunks[:8]))
    n = len(chunks)
    e_onnx, e_st, t_onnx, t_st, ratios = interleaved(chunks, onnx, st, batch, rounds, "chunks")
    words = [len(c.split()) for c in chunks]
    return {
        "chunks": n,
        "words_mean": round(statistics.mean(words), 1),
        "batch_size": batch,
        "rounds": rounds,
        "sentence_transformers": {
            "seconds": round(t_st, 2),
            "chunks_per_s": round(n / t_st, 1),
        },
        "onnx_int8": {
            "seconds": round(t_onnx, 2),
            "chunks_per_s": round(n / t_onnx, 1),
        },
        "speedup": round(t_st / t_onnx, 2),
        "speedup_per_round": ratios,
        "cosine_onnx_vs_torch": cosines(e_onnx, e_st),
    }, e_onnx


def bench_index_build(chunks: Sequence[str], onnx: Any, tmp: Path) -> dict[str, Any]:
    """Vector lane: keys, missing, embed, add, save — and an incremental re-run with 5% new."""
    from arkai.search.vectors import VectorStore

    keys = [chunk_key(c) for c in chunks]
    out: dict[str, Any] = {"chunks": len(chunks)}

    def build() -> VectorStore:
        store = VectorStore.load(tmp / "vec", onnx.name, dim=onnx.dim)
        todo = set(store.missing(keys))
        idx = [i for i, k in enumerate(keys) if k in todo]
        if idx:
            store.add([keys[i] for i in idx], onnx.encode([chunks[i] for i in idx]))
        store.prune(keys)
        store.save(tmp / "vec")
        return store

    _, out["vector_full_s"] = timed(build)
    # Incremental: 5% of the chunks replaced by new text; only those are embedded.
    k = max(1, len(chunks) // 20)
    chunks = list(chunks)
    for i in range(k):
        chunks[i] = chunks[i] + " (revised)"
    keys = [chunk_key(c) for c in chunks]
    store_before = VectorStore.load(tmp / "vec", onnx.name, dim=onnx.dim)
    out["incremental_missing"] = len(store_before.missing(keys))
    _, out["vector_incremental_s"] = timed(build)
    try:
        from arkai.search.bm25 import BM25Index

        _, out["bm25_s"] = timed(lambda: BM25Index.build(chunks))
    except ImportError:
        out["bm25_s"] = None
    for key in ("vector_full_s", "vector_incremental_s", "bm25_s"):
        if out[key] is not None:
            out[key] = round(out[key], 3)
    return out


def bench_scifact(
    docs: dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    n_docs: int,
    onnx: Any,
    st: Any,
    rng: random.Random,
    batch: int,
    rounds: int,
) -> dict[str, Any]:
    """nDCG@10 of both embedders on a SciFact train subsample of ``n_docs`` documents: the
    relevant documents of randomly drawn queries (about half the budget), then distractors."""
    qids = sorted((q for q in qrels if q in queries and all(d in docs for d in qrels[q])), key=int)
    rng.shuffle(qids)
    chosen: list[str] = []
    pool: set[str] = set()
    if n_docs >= len(docs):
        chosen = qids
        pool = set(docs)
    else:
        for q in qids:
            rel = set(qrels[q])
            if len(pool | rel) > n_docs // 2:
                break
            pool |= rel
            chosen.append(q)
        rest = sorted(set(docs) - pool, key=int)
        rng.shuffle(rest)
        pool |= set(rest[: n_docs - len(pool)])
    doc_ids = sorted(pool, key=int)
    texts = [docs[d] for d in doc_ids]
    qtexts = [queries[q] for q in chosen]
    log(f"SciFact: {len(doc_ids)} docs, {len(chosen)} train queries")
    out: dict[str, Any] = {"docs": len(doc_ids), "queries": len(chosen), "split": "train"}
    d_onnx, d_st, t_onnx, t_st, ratios = interleaved(texts, onnx, st, batch, rounds, "SciFact")
    vecs = {
        "minilm-onnx": (d_onnx, onnx.encode(qtexts, kind="query")),
        "minilm": (d_st, st.encode(qtexts, kind="query")),
    }
    for label, (d, q) in vecs.items():
        scores = q @ d.T
        ndcg = []
        for i, qid in enumerate(chosen):
            top = np.argsort(-scores[i], kind="stable")[:10]
            ndcg.append(ndcg10([doc_ids[j] for j in top], qrels[qid]))
        seconds = t_onnx if label == "minilm-onnx" else t_st
        out[label] = {
            "ndcg@10": round(100 * float(np.mean(ndcg)), 2),
            "docs_per_s": round(len(texts) / seconds, 1),
        }
    out["ndcg@10_delta_points"] = round(out["minilm-onnx"]["ndcg@10"] - out["minilm"]["ndcg@10"], 2)
    out["speedup_docs"] = round(t_st / t_onnx, 2)
    out["speedup_docs_per_round"] = ratios
    out["cosine_docs"] = cosines(vecs["minilm-onnx"][0], vecs["minilm"][0])
    out["cosine_queries"] = cosines(vecs["minilm-onnx"][1], vecs["minilm"][1])
    d, q = vecs["minilm-onnx"]
    out["floor"] = bench_floor(onnx, d, q, chosen, doc_ids, qrels, rng)
    return out


#: Questions about things SciFact (biomedical abstracts) does not cover, written for this bench.
OFF_TOPIC = (
    "how do I bake sourdough bread at home",
    "best tactics for a 4-4-2 formation in football",
    "what time does the train to the airport leave",
    "how to tune a guitar by ear",
    "recommend a fantasy novel with dragons",
    "how to replace a bicycle chain",
    "which javascript framework should I learn first",
    "how do I fold a paper crane",
    "what is the capital of australia",
    "how much does it cost to repaint a car",
    "tips for a job interview at a bank",
    "how to grow tomatoes on a balcony",
)


def bench_floor(
    onnx: Any,
    doc_vecs: np.ndarray,
    query_vecs: np.ndarray,
    chosen: Sequence[str],
    doc_ids: Sequence[str],
    qrels: dict[str, dict[str, int]],
    rng: random.Random,
) -> dict[str, Any]:
    """Where the vector lane's floor sits between nonsense and relevance (see the docstring)."""
    from arkai.search.pipeline import ANSWER_FLOOR, MIN_SIMILARITY

    letters = "abcdefghijklmnopqrstuvwxyz"
    nonsense = [
        " ".join("".join(rng.choice(letters) for _ in range(rng.randint(4, 10)))
                 for _ in range(rng.randint(1, 3)))
        for _ in range(200)
    ]  # fmt: skip
    pos = {d: i for i, d in enumerate(doc_ids)}
    relevant = [
        float(query_vecs[i] @ doc_vecs[pos[d]])
        for i, qid in enumerate(chosen)
        for d, g in qrels[qid].items()
        if g > 0 and d in pos
    ]

    def best(texts: Sequence[str]) -> list[float]:
        qv = onnx.encode(list(texts), kind="query")
        return [float(x) for x in (qv @ doc_vecs.T).max(axis=1)]

    junk, off = best(nonsense), best(OFF_TOPIC)
    real = [float(x) for x in (query_vecs @ doc_vecs.T).max(axis=1)]
    rel = np.asarray(relevant)

    def dist(xs: Sequence[float]) -> dict[str, float]:
        a = np.asarray(xs)
        return {k: round(float(np.percentile(a, p)), 3)
                for k, p in (("p1", 1), ("p50", 50), ("p99", 99), ("max", 100))}  # fmt: skip

    return {
        "min_similarity": MIN_SIMILARITY,
        "answer_floor": ANSWER_FLOOR,
        "real_query_best_cosine": dist(real),
        "real_queries_under_answer_floor": sum(x < ANSWER_FLOOR for x in real),
        "real_queries": len(real),
        "nonsense_over_answer_floor": sum(x >= ANSWER_FLOOR for x in junk),
        "off_topic_over_answer_floor": sum(x >= ANSWER_FLOOR for x in off),
        "nonsense_best_cosine": dist(junk),
        "off_topic_best_cosine": dist(off),
        "relevant_pair_cosine": dist(relevant),
        "nonsense_over_floor": sum(x >= MIN_SIMILARITY for x in junk),
        "nonsense_queries": len(junk),
        "off_topic_over_floor": sum(x >= MIN_SIMILARITY for x in off),
        "off_topic_queries": len(off),
        "relevant_pairs_under_floor": int((rel < MIN_SIMILARITY).sum()),
        "relevant_pairs": len(relevant),
    }


def synth_vectors(base: np.ndarray, n: int, rng: np.random.Generator, sigma: float) -> np.ndarray:
    """``n`` unit rows: real rows ``base[i % len(base)]`` plus Gaussian noise (σ per dimension),
    renormalised. Cosine to the source row ≈ 1 / sqrt(1 + σ² · dim)."""
    reps = base[np.arange(n) % len(base)]
    noisy = reps + rng.standard_normal(reps.shape, dtype=np.float32) * np.float32(sigma)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return np.asarray(noisy, dtype=np.float32)


def write_product_index(
    root: Path, texts: Sequence[str], vecs: np.ndarray, embedder: str, per_item: int = 100
) -> float:
    """Write ``root/index`` in the product's own format (index/chunks/, catalog.json, the BM25
    index, the vector store, manifest.json) for ``texts`` cut into items of ``per_item`` chunks,
    so that the timed search is ``arkai.ops.search.search`` itself. Returns the BM25 build time."""
    from arkai.adapters.chunkparts import write_lines
    from arkai.core import canonjson
    from arkai.search.chunks import Chunk, chunk_key
    from arkai.search.pipeline import build_lexical
    from arkai.search.vectors import VectorStore

    index = root / "index"
    index.mkdir(parents=True)
    chunks, items = [], []
    for n, text in enumerate(texts):
        cid = f"{n // per_item:016x}"
        line = 1 + (n % per_item) * 3
        chunks.append(Chunk(chunk_key(cid, text), cid, "transcript", line, line + 2, (0, 0), text))
        if n % per_item == 0:
            title = f"Synthetic talk {n // per_item}"
            items.append({"id": cid, "title": title, "content_type": "talk", "tags": [],
                          "created_at": "2026-01-01T00:00:00Z",
                          "path": f"library/talk/{title} ({cid[:8]})"})  # fmt: skip
    write_lines(index / "chunks", (canonjson.dumps_line(c.to_dict()).encode() for c in chunks))
    (index / "catalog.json").write_text(canonjson.dumps({"version": 1, "items": items}))
    bm, t = timed(partial(build_lexical, [("", x) for x in texts]))
    bm.save(index / "lexical")
    store = VectorStore(int(vecs.shape[1]), embedder)
    store.add([c.key for c in chunks], vecs)
    store.save(index / "vectors")
    (index / "manifest.json").write_text(canonjson.dumps({"embedder": {"name": embedder}}))
    return t


def bench_latency(
    sizes: Sequence[int],
    sentences: Sequence[str],
    base_vecs: np.ndarray,
    query_texts: Sequence[str],
    onnx: Any,
    rng: random.Random,
    nrng: np.random.Generator,
    tmp: Path,
    sigma: float,
) -> tuple[dict[str, Any], Path | None]:
    """Warm per-query latency of the product's own search operation
    (``arkai.ops.search.search``: markup, filters, the pipeline's lanes and fusion, grouping,
    snippets) over an index in the product's format, per mode."""
    from arkai.errors import NotFoundError
    from arkai.ops import Repo
    from arkai.ops.search import search

    out: dict[str, Any] = {}
    prepared: Path | None = None
    for n in sizes:
        log(f"latency at {n} chunks: synthesising")
        texts = synthetic_chunks(sentences, n, rng)
        vecs = synth_vectors(base_vecs, n, nrng, sigma)
        root = tmp / f"repo-{n}"
        bm25_s = write_product_index(root, texts, vecs, onnx.name)
        res: dict[str, Any] = {
            "chunks": n,
            "items": (n + 99) // 100,
            "bm25_build_s": round(bm25_s, 2),
        }
        modes = ("lexical", "vector", "hybrid")
        samples: dict[str, list[float]] = {m: [] for m in (*modes, "query_embedding")}
        # CPU time of the same calls: steadier than wall time on a machine shared with other
        # work (waiting for a core is not counted; memory contention still is).
        cpu: dict[str, list[float]] = {m: [] for m in modes}
        empty = 0

        repo = Repo.at(root)

        def one(qt: str, mode: str, repo: Repo = repo) -> None:
            nonlocal empty
            try:
                search(repo, qt, k=10, mode=mode)
            except NotFoundError:
                empty += 1

        for rep in range(2):  # the first pass warms caches; the second is measured
            for qt in query_texts:
                for mode in modes:
                    c0 = time.process_time()
                    _, t = timed(partial(one, qt, mode))
                    if rep:
                        samples[mode].append(t)
                        cpu[mode].append(time.process_time() - c0)
                _, t = timed(partial(onnx.encode, [qt], kind="query"))
                if rep:
                    samples["query_embedding"].append(t)
        for lane, got in samples.items():
            res[lane] = pct(got)
        res["cpu"] = {lane: pct(got) for lane, got in cpu.items()}
        res["hybrid_minus_query_embedding_p50_ms"] = round(
            res["hybrid"]["p50_ms"] - res["query_embedding"]["p50_ms"], 2
        )
        res["queries_without_results"] = empty // 2
        out[str(n)] = res
        if prepared is None:
            prepared = root
    return out, prepared


_COLD_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
mode, folder, query = sys.argv[1], sys.argv[2], sys.argv[3]
from pathlib import Path
from arkai.ops import Repo
from arkai.ops.search import search
res = search(Repo.at(folder), query, k=10, mode=mode)
print(json.dumps({"in_process_s": time.perf_counter() - t0, "results": len(res.results),
                  "torch_imported": "torch" in sys.modules,
                  "onnxruntime_imported": "onnxruntime" in sys.modules}))
"""


_CLI_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
from arkai.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps({"in_process_s": time.perf_counter() - t0,
                  "torch_imported": "torch" in sys.modules,
                  "onnxruntime_imported": "onnxruntime" in sys.modules}))
"""


def prepare_repo(
    arkai_bin: Path, data: Path, tmp: Path, quick: bool, env: dict[str, str]
) -> tuple[Path, dict[str, Any]]:
    """A knowledge repo (no git) with the real transcripts added and indexed by
    ``arkai reindex`` (the product's index build, embedding with the default embedder)."""
    repo = tmp / "kr"
    run = partial(subprocess.run, capture_output=True, text=True, check=True, env=env)
    run([str(arkai_bin), "init", "--no-git", str(repo)])
    folder = data / "transcripts"
    inputs = (
        [folder / "3b1b_human_captions" / "2017_neural-networks" / "captions.srt"]
        if quick
        else [p for p in sorted(folder.rglob("*")) if p.suffix in (".srt", ".vtt")]
        + sorted(folder.glob("youtube_transcript_api_json/*.json"))
    )
    run([str(arkai_bin), "-C", str(repo), "add", "-q", *map(str, inputs)])
    _, t = timed(partial(run, [str(arkai_bin), "-C", str(repo), "reindex", "-q"]))
    manifest = json.loads((repo / "index" / "manifest.json").read_text(encoding="utf-8"))
    return repo, {
        "sources": len(inputs),
        "chunks": manifest.get("counts", {}).get("chunks"),
        "embedder": manifest.get("embedder"),
        "reindex_s": round(t, 2),
    }


def bench_cold(
    prepared: Path | None,
    query: str,
    cache_dir: str | None,
    cli_repo: str | None,
    reps: int,
    data: Path,
    tmp: Path,
    quick: bool,
) -> dict[str, Any]:
    env = dict(os.environ)
    if cache_dir:
        env["ARKAI_CACHE_DIR"] = cache_dir
    py = sys.executable
    out: dict[str, Any] = {"query": query, "repeats": reps}
    arkai_bin = Path(py).parent / "arkai"
    has_cli = (
        subprocess.run(
            [str(arkai_bin), "search", "--help"], capture_output=True, env=env, check=False
        ).returncode
        == 0
    )
    out["arkai_search_exists"] = has_cli
    # Python alone, for reference.
    walls = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run([py, "-c", "pass"], check=True, env=env)
        walls.append(time.perf_counter() - t)
    out["python_startup_s"] = round(statistics.median(walls), 3)
    if has_cli:
        repo = cli_repo
        if repo is None:
            log("preparing a knowledge repo for `arkai search` (add + reindex)")
            try:
                path, out["cli_repo"] = prepare_repo(arkai_bin, data, tmp, quick, env)
                repo = str(path)
            except (subprocess.CalledProcessError, OSError, ValueError) as exc:
                out["cli_note"] = f"could not prepare a knowledge repo: {exc}"
        if repo:
            for mode in ("lexical", "hybrid"):
                walls = []
                args = ["-C", repo, "search", query, "--mode", mode]
                for _ in range(reps):
                    t = time.perf_counter()
                    p = subprocess.run(
                        [str(arkai_bin), *args],
                        capture_output=True,
                        text=True,
                        env=env,
                        check=False,
                    )
                    walls.append(time.perf_counter() - t)
                probe = subprocess.run(
                    [py, "-c", _CLI_PROBE, *args],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=False,
                )
                probed = json.loads(probe.stdout.strip().splitlines()[-1])
                out[f"cli_{mode}"] = {
                    "wall_s": round(statistics.median(walls), 3),
                    "wall_max_s": round(max(walls), 3),
                    "rc": p.returncode,
                    "torch_imported": probed["torch_imported"],
                    "onnxruntime_imported": probed["onnxruntime_imported"],
                }
    else:
        out["cli_note"] = "arkai search does not exist: timed a script doing the same work"
    if prepared is None:
        out["script_note"] = "no BM25 index (arkai.search.bm25 missing): script skipped"
        return out
    for mode in ("lexical", "hybrid"):
        walls, inside = [], []
        info: dict[str, Any] = {}
        for _ in range(reps):
            cmd = [py, "-c", _COLD_SCRIPT, mode, str(prepared), query]
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            walls.append(time.perf_counter() - t)
            info = json.loads(p.stdout.strip().splitlines()[-1])
            inside.append(info["in_process_s"])
        out[f"script_{mode}"] = {
            "wall_s": round(statistics.median(walls), 3),
            "excluding_python_startup_s": round(statistics.median(inside), 3),
            "torch_imported": info["torch_imported"],
            "onnxruntime_imported": info["onnxruntime_imported"],
        }
    return out


# -- main ------------------------------------------------------------------------------


def latency_only(args: argparse.Namespace) -> int:
    """The latency section alone (``--latency-only``): to compare search code before and after
    a change in one session without the minutes of the other sections."""
    from arkai.search.embed import OnnxMiniLMEmbedder

    rng = random.Random(args.seed)
    nrng = np.random.default_rng(args.seed)
    sizes = [int(s) for s in (args.sizes or "10000,100000").split(",")]
    docs, queries, _ = load_scifact(args.data / "retrieval" / "scifact_beir")
    onnx = OnnxMiniLMEmbedder(cache_dir=args.cache_dir)
    onnx.meta()
    base = np.asarray(onnx.encode(real_chunks(args.data, docs, args.chunks or 400, rng)))
    sentences = sentences_of(transcript_texts(args.data / "transcripts") + list(docs.values()))
    qpool = sorted(queries)
    rng.shuffle(qpool)
    query_texts = [queries[q] for q in qpool[: args.queries or 200]]
    tmp = Path(tempfile.mkdtemp(prefix="arkai-bench-search-"))
    try:
        lat, _ = bench_latency(sizes, sentences, base, query_texts, onnx, rng, nrng, tmp,
                               args.sigma)  # fmt: skip
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"bench": "search", "section": "latency", "seed": args.seed,
                      "queries": len(query_texts), "latency": lat}, indent=2))  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: < 60 s")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared/data folder")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chunks", type=int, help="chunks for the throughput test (2000)")
    ap.add_argument("--ndcg-docs", type=int, help="SciFact subsample (1000; 5183 = all)")
    ap.add_argument("--sizes", help="comma-separated latency sizes (10000,100000)")
    ap.add_argument("--queries", type=int, help="latency queries (200)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--sigma", type=float, default=0.035, help="synthetic-vector noise")
    ap.add_argument("--cache-dir", help="arkai cache root for the ONNX export")
    ap.add_argument("--cli-repo", help="an indexed knowledge repo to time `arkai search` on")
    ap.add_argument("--latency-only", action="store_true",
                    help="only the latency section (base vectors: --chunks real chunks embedded "
                         "with ONNX; default 400)")  # fmt: skip
    args = ap.parse_args(argv)
    if args.latency_only:
        return latency_only(args)

    quick = args.quick
    n_chunks = args.chunks or (96 if quick else 2000)
    n_ndcg = args.ndcg_docs or (100 if quick else 1000)
    sizes = [int(s) for s in (args.sizes or ("10000" if quick else "10000,100000")).split(",")]
    n_queries = args.queries or (50 if quick else 200)
    reps = 3 if quick else 5

    t_start = time.perf_counter()
    rng = random.Random(args.seed)
    nrng = np.random.default_rng(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="arkai-bench-search-"))

    from arkai.search.embed import MiniLMEmbedder, OnnxMiniLMEmbedder

    result: dict[str, Any] = {
        "bench": "search",
        "quick": quick,
        "seed": args.seed,
        "machine": {
            "python": platform.python_version(),
            "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "platform": platform.platform(),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
    }

    docs, queries, qrels = load_scifact(args.data / "retrieval" / "scifact_beir")
    chunks = real_chunks(args.data, docs, n_chunks, rng)

    onnx = OnnxMiniLMEmbedder(cache_dir=args.cache_dir)
    existed = (onnx.export_dir() / "meta.json").is_file()
    meta, t_export = timed(onnx.meta)
    _, t_load_onnx = timed(lambda: onnx.encode(["warm up"]))
    st = MiniLMEmbedder()
    _, t_load_st = timed(lambda: st.encode(["warm up"]))
    result["models"] = {
        "onnx_export": {
            "cached": existed,
            "seconds": round(t_export, 2),
            "fusion": meta.get("fusion"),
            "quality_check": meta.get("quality"),
            "file_mb": round(meta.get("size", 0) / 1e6, 1),
        },
        "onnx_load_s": round(t_load_onnx, 3),
        "sentence_transformers_load_s": round(t_load_st, 3),
    }

    emb_res, e_onnx = bench_embedding(chunks, onnx, st, args.batch_size, 2 if quick else 8)
    result["embedding"] = emb_res
    result["index_build"] = bench_index_build(chunks, onnx, tmp)
    result["scifact"] = bench_scifact(
        docs, queries, qrels, n_ndcg, onnx, st, rng, args.batch_size, 2 if quick else 8
    )

    sentences = sentences_of(transcript_texts(args.data / "transcripts") + list(docs.values()))
    qpool = sorted(queries)
    rng.shuffle(qpool)
    query_texts = [queries[q] for q in qpool[:n_queries]]
    lat, prepared = bench_latency(
        sizes, sentences, e_onnx, query_texts, onnx, rng, nrng, tmp, args.sigma
    )
    result["latency"] = {
        "depth_per_lane": 100,
        "queries": len(query_texts),
        "synthetic_vector_sigma": args.sigma,
        "synthetic_vector_cosine_to_source": round(
            1 / float(np.sqrt(1 + args.sigma**2 * onnx.dim)), 3
        ),
        **lat,
    }
    result["cold_start"] = bench_cold(
        prepared, query_texts[0], args.cache_dir, args.cli_repo, reps, args.data, tmp, quick
    )

    emb = result["embedding"]
    sf = result["scifact"]
    big = result["latency"].get(str(max(sizes)), {})
    cold = result["cold_start"]
    cold_h = cold.get("cli_hybrid") or cold.get("script_hybrid") or {}
    cold_l = cold.get("cli_lexical") or cold.get("script_lexical") or {}
    result["targets"] = {
        "throughput_ge_3x": emb["speedup"] >= 3.0,
        "ndcg_loss_le_1pt": sf["ndcg@10_delta_points"] >= -1.0,
        "cosine_mean_ge_0.98": emb["cosine_onnx_vs_torch"]["mean"] >= 0.98,
        f"hybrid_p50_le_30ms_at_{max(sizes)}": bool(
            big.get("hybrid") and big["hybrid"]["p50_ms"] <= 30.0
        ),
        f"vector_p50_le_10ms_at_{max(sizes)}": bool(
            big.get("vector") and big["vector"]["p50_ms"] <= 10.0
        ),
        "cold_hybrid_le_2s": bool(cold_h and cold_h.get("wall_s", 99) <= 2.0),
        "lexical_cold_without_torch": bool(cold_l) and not cold_l.get("torch_imported", True),
    }
    result["total_s"] = round(time.perf_counter() - t_start, 1)
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
