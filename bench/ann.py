"""Search at library sizes beyond brute force: the ANN vector lane, BM25 and hybrid (JSON).

For each size (default 100,000 / 500,000 / 2,000,000 chunks) a synthetic library is made
from real material, then searched through the one pipeline (``arkai.search.pipeline.rank``,
depth 300 as ``arkai search`` uses for ``-k 10``) with the query embeddings precomputed:

- **vectors**: ``--base`` real chunk texts (SciFact abstracts and the shared transcripts, cut
  into 60–120 words) embedded with the product's ONNX MiniLM; every synthetic row is either a
  real row plus Gaussian noise (σ = ``--sigma`` per dimension) or, one row in three, a random
  mixture ``a·u + (1-a)·v`` of two real rows (``a`` uniform in 0.5–1) plus the same noise,
  re-normalised to unit length;
- **texts**: 60–120 words of real sentences drawn at random (the same sentences as
  ``bench/search.py``). Texts are built as token ids: each sentence is tokenised once by the
  product's tokenizer (``arkai.search.text.tokenize`` is word-local, so a text's tokens are its
  sentences' tokens in order) and BM25 is built with ``BM25Index.build_from_ids``; the
  tokeniser's own cost per word is measured separately (``tokenize_us_per_word``);
- **queries**: ``--queries`` SciFact training claims (text for BM25, their ONNX embedding).

Per size: ANN build seconds (FAISS ``IVF,SQ8``: training and adding), its disk size, BM25
build seconds and disk size, the vector store's size (``n × 384 × 4`` bytes), recall@10 of the
ANN vector lane against the exact scan, p50/p95 of the exact and ANN vector lanes, the
lexical lane and hybrid (ANN) latency, and the process's peak RSS so far (sizes run in
ascending order, so it is the peak up to that size). Run it alone on a quiet machine::

    OPENBLAS_NUM_THREADS=1 nice -n 10 python bench/ann.py [--sizes 100000,500000,2000000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from search import (  # noqa: E402  (bench/search.py: the shared corpus helpers)
    DEFAULT_DATA,
    load_scifact,
    real_chunks,
    sentences_of,
    transcript_texts,
)

from arkai.search.ann import AnnIndex, AnnSettings  # noqa: E402
from arkai.search.bm25 import BM25Index  # noqa: E402
from arkai.search.pipeline import Corpus, rank  # noqa: E402
from arkai.search.text import tokenize  # noqa: E402
from arkai.search.vectors import VectorStore  # noqa: E402

DEPTH = 300


def log(msg: str) -> None:
    print(f"[ann {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs) * 1000.0
    return {"p50_ms": round(float(np.percentile(a, 50)), 2),
            "p95_ms": round(float(np.percentile(a, 95)), 2)}  # fmt: skip


def rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def synth_vectors(base: np.ndarray, n: int, rng: np.random.Generator, sigma: float) -> np.ndarray:
    """``n`` unit rows: a real row (or, one in three, a mixture of two) plus noise."""
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for lo in range(0, n, 100_000):
        m = min(100_000, n - lo)
        u = base[rng.integers(0, len(base), m)]
        v = base[rng.integers(0, len(base), m)]
        a = np.where(rng.random(m) < 1 / 3, rng.uniform(0.5, 1.0, m), 1.0).astype(np.float32)
        x = a[:, None] * u + (1 - a)[:, None] * v
        x += rng.standard_normal(x.shape, dtype=np.float32) * np.float32(sigma)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[lo : lo + m] = x
    return out


def synth_token_ids(
    sent_ids: list[np.ndarray], sent_words: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and document pointers of ``n`` texts of 60–120 words of random sentences."""
    parts: list[np.ndarray] = []
    ptr = np.zeros(n + 1, dtype=np.int64)
    m = len(sent_ids)
    draws = rng.integers(0, m, n * 16)
    targets = rng.integers(60, 121, n)
    j = 0
    for d in range(n):
        words, count = 0, 0
        while words < targets[d]:
            if j >= len(draws):
                draws, j = rng.integers(0, m, n * 4), 0
            s = int(draws[j])
            j += 1
            parts.append(sent_ids[s])
            count += len(sent_ids[s])
            words += int(sent_words[s])
        ptr[d + 1] = ptr[d] + count
    return np.concatenate(parts).astype(np.int32), ptr


def chunk_keys(n: int) -> list[str]:
    """Keys shaped like the product's chunk keys (``sha256:`` of content): the ANN ids are
    their first 60 bits."""
    return ["sha256:" + hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


def folder_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def run_size(n: int, base: np.ndarray, tok: dict[str, Any], queries: list[tuple[str, np.ndarray]],
             args: argparse.Namespace, tmp: Path) -> dict[str, Any]:  # fmt: skip
    nrng = np.random.default_rng(args.seed + n)
    res: dict[str, Any] = {"chunks": n}
    log(f"{n}: vectors")
    vecs = synth_vectors(base, n, nrng, args.sigma)
    store = VectorStore(vecs.shape[1], "minilm-onnx")
    store.add(chunk_keys(n), vecs)
    del vecs
    res["vector_store_mb"] = round(n * store.dim * 4 / 2**20, 1)
    log(f"{n}: texts and BM25")
    ids, ptr = synth_token_ids(tok["ids"], tok["words"], n, nrng)
    t = time.perf_counter()
    bm = BM25Index.build_from_ids(ids, ptr, tok["vocab"])
    res["bm25_build_s"] = round(time.perf_counter() - t, 2)
    res["bm25_tokens"] = len(ids)
    res["bm25_tokenize_projected_s"] = round(len(ids) * tok["us_per_token"] / 1e6, 1)
    del ids, ptr
    bm.save(tmp / f"lex-{n}")
    res["bm25_disk_mb"] = folder_mb(tmp / f"lex-{n}")
    shutil.rmtree(tmp / f"lex-{n}")
    settings = AnnSettings(nprobe=args.nprobe)
    log(f"{n}: ANN build")
    t = time.perf_counter()
    ann = AnnIndex.build(store, settings)
    res["ann_build_s"] = round(time.perf_counter() - t, 2)
    res["ann_nlist"] = ann.meta["nlist"]
    res["ann_shards"] = len(ann.shards)
    res["ann_nprobe"] = args.nprobe
    (tmp / f"ann-{n}").mkdir()
    ann.save(tmp / f"ann-{n}", store)
    res["ann_disk_mb"] = folder_mb(tmp / f"ann-{n}")
    shutil.rmtree(tmp / f"ann-{n}")
    log(f"{n}: queries")
    exact = Corpus(bm, store)
    approx = Corpus(bm, store, ann=ann)
    lat: dict[str, list[float]] = {"vector_exact": [], "vector_ann": [], "lexical": [],
                                   "hybrid_ann": [], "hybrid_exact": []}  # fmt: skip
    # CPU time of the same calls (one BLAS thread): steadier than wall time on a machine
    # shared with other work — waiting for a core is not counted, memory contention still is.
    cpu: dict[str, list[float]] = {k: [] for k in lat}
    recall_hits = recall_total = 0

    def timed(lane: str, rep: int, corpus: Corpus, text: str, **kw: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        got = rank(corpus, text, depth=DEPTH, **kw)
        if rep:
            lat[lane].append(time.perf_counter() - w)
            cpu[lane].append(time.process_time() - c)
        return got

    for rep in range(2):  # the first pass warms caches
        for text, q in queries:
            vec = {"mode": "vector", "query_vec": q, "answer_floor": -1.0}
            # The exact scan (the recall reference) runs in the measured pass only.
            want = timed("vector_exact", rep, exact, text, **vec) if rep else None
            got = timed("vector_ann", rep, approx, text, **vec)
            timed("lexical", rep, approx, text, mode="lexical")
            timed("hybrid_ann", rep, approx, text, query_vec=q)
            if n <= args.exact_hybrid_max and rep:
                timed("hybrid_exact", rep, exact, text, query_vec=q)
            if want is not None:
                top = {r.doc for r in want.ranked[:10]}
                recall_hits += len(top & {r.doc for r in got.ranked[:10]})
                recall_total += len(top)
    res["recall_at_10"] = round(recall_hits / max(1, recall_total), 4)
    res["latency"] = {k: pct(v) for k, v in lat.items() if v}
    res["cpu"] = {k: pct(v) for k, v in cpu.items() if v}
    res["peak_rss_mb"] = rss_mb()
    log(f"{n}: {json.dumps(res)}")
    return res


def compare_engines(base: np.ndarray, qv: np.ndarray, n: int, args: argparse.Namespace,
                    tmp: Path) -> dict[str, Any]:  # fmt: skip
    """``--engines``: FAISS IVF-SQ8 (what arkai uses) against hnswlib's HNSW on the same ``n``
    rows, each engine alone (no re-scoring): build and query CPU seconds, disk, recall@10."""
    import faiss
    import hnswlib

    faiss.omp_set_num_threads(1)
    vecs = synth_vectors(base, n, np.random.default_rng(args.seed + n), args.sigma)
    truth = np.argsort(-(qv @ vecs.T), axis=1)[:, :10]
    out: dict[str, Any] = {"chunks": n}

    def recall(found: np.ndarray) -> float:
        hits = sum(
            len(set(t.tolist()) & set(f.tolist())) for t, f in zip(truth, found, strict=True)
        )
        return round(hits / truth.size, 4)

    store = VectorStore(vecs.shape[1], "x")
    store.add(chunk_keys(n), vecs)
    c = time.process_time()
    ann = AnnIndex.build(store, AnnSettings(nprobe=args.nprobe))
    build = time.process_time() - c
    ann.save(tmp, store)
    ids = {int(k[7:22], 16): i for i, k in enumerate(store.keys)}
    lat, found = [], []
    params = faiss.SearchParametersIVF(nprobe=args.nprobe)
    for q in qv:
        c = time.process_time()
        _, got = ann.shards[0].search(q.reshape(1, -1), 10, params=params)  # one below 262,144
        lat.append(time.process_time() - c)
        found.append([ids.get(int(x), -1) for x in got[0]])
    out["faiss_ivf_sq8"] = {"build_cpu_s": round(build, 1), "disk_mb": folder_mb(tmp),
                            "nlist": ann.meta["nlist"], "nprobe": args.nprobe,
                            "recall_at_10_alone": recall(np.asarray(found)),
                            "query_cpu": pct(lat)}  # fmt: skip
    for p in tmp.iterdir():
        p.unlink()
    index = hnswlib.Index(space="ip", dim=vecs.shape[1])
    index.init_index(max_elements=n, M=16, ef_construction=100)
    index.set_num_threads(1)
    c = time.process_time()
    index.add_items(vecs, np.arange(n))
    build = time.process_time() - c
    index.save_index(str(tmp / "hnsw.bin"))
    for ef in (64, 128):
        index.set_ef(ef)
        lat, found = [], []
        for q in qv:
            c = time.process_time()
            got, _ = index.knn_query(q.reshape(1, -1), k=10)
            lat.append(time.process_time() - c)
            found.append(got[0])
        out[f"hnswlib_M16_ef{ef}"] = {"build_cpu_s": round(build, 1), "disk_mb": folder_mb(tmp),
                                      "recall_at_10_alone": recall(np.asarray(found)),
                                      "query_cpu": pct(lat)}  # fmt: skip
    log(f"engines: {json.dumps(out)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sizes", default="100000,500000,2000000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--base", type=int, default=2000, help="real chunks embedded")
    ap.add_argument("--sigma", type=float, default=0.035)
    ap.add_argument("--nprobe", type=int, default=AnnSettings().nprobe)
    ap.add_argument("--exact-hybrid-max", type=int, default=100_000,
                    help="also time hybrid over the exact lane up to this size")  # fmt: skip
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--base-cache", type=Path,
                    help="a .npy file keeping the real chunks' vectors between runs")  # fmt: skip
    ap.add_argument("--engines", type=int, metavar="N",
                    help="only compare FAISS IVF-SQ8 with hnswlib HNSW at N chunks")  # fmt: skip
    ap.add_argument("--shard-rows", type=int, default=None,
                    help="rows per ANN shard when built (default: the product's)")  # fmt: skip
    args = ap.parse_args(argv)
    if args.shard_rows is not None:
        from arkai.search import ann as ann_module

        ann_module.SHARD_ROWS = args.shard_rows
    from arkai.search.embed import OnnxMiniLMEmbedder

    rng = random.Random(args.seed)
    docs, qtexts, _ = load_scifact(args.data / "retrieval" / "scifact_beir")
    onnx = OnnxMiniLMEmbedder()
    onnx.meta()
    log(f"embedding {args.base} real chunks")
    t = time.perf_counter()
    chunks = real_chunks(args.data, docs, args.base, rng)
    cache = args.base_cache
    if cache is not None and cache.is_file():
        base = np.load(cache)  # the same chunks' vectors from an earlier run (same seed)
    else:
        base = np.asarray(onnx.encode(chunks, batch_size=64), dtype=np.float32)
        if cache is not None:
            np.save(cache, base)
    embed_s = time.perf_counter() - t
    qids = sorted(qtexts)
    rng.shuffle(qids)
    qt = [qtexts[q] for q in qids[: args.queries]]
    qv = np.asarray(onnx.encode(qt, kind="query"), dtype=np.float32)
    qlat = []
    for text in qt[:50]:
        t = time.perf_counter()
        onnx.encode([text], kind="query")
        qlat.append(time.perf_counter() - t)
    if args.engines:
        tmp = Path(tempfile.mkdtemp(prefix="arkai-bench-ann-"))
        try:
            engines = compare_engines(base, qv, args.engines, args, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(
            json.dumps(
                {
                    "bench": "ann",
                    "section": "engines",
                    "seed": args.seed,
                    "base_chunks": len(base),
                    "queries": len(qt),
                    **engines,
                },
                indent=2,
            )
        )
        return 0
    sentences = sentences_of(transcript_texts(args.data / "transcripts") + list(docs.values()))
    vocab: dict[str, int] = {}
    t = time.perf_counter()
    toks = [tokenize(s) for s in sentences]
    tok_s = time.perf_counter() - t
    n_tok = sum(len(x) for x in toks)
    sent_ids = [np.asarray([vocab.setdefault(w, len(vocab)) for w in x], np.int32) for x in toks]
    tok = {"ids": sent_ids, "words": np.asarray([len(s.split()) for s in sentences]),
           "vocab": vocab, "us_per_token": tok_s / max(1, n_tok) * 1e6}  # fmt: skip
    out: dict[str, Any] = {
        "bench": "ann",
        "seed": args.seed,
        "engine": "faiss IVF SQ8 (arkai.search.ann), exact re-scoring",
        "depth": DEPTH,
        "base_chunks": len(base),
        "base_embed_s": round(embed_s, 1),
        "sentences": len(sentences),
        "tokenize_us_per_token": round(tok["us_per_token"], 3),
        "queries": len(qt),
        "query_embedding": pct(qlat),
        "sizes": {},
    }
    tmp = Path(tempfile.mkdtemp(prefix="arkai-bench-ann-"))
    try:
        for n in sorted(int(s) for s in args.sizes.split(",")):
            out["sizes"][str(n)] = run_size(n, base, tok, list(zip(qt, qv, strict=True)), args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    big = out["sizes"][str(max(int(s) for s in args.sizes.split(",")))]
    out["targets"] = {
        "recall_at_10_ge_0.95": big["recall_at_10"] >= 0.95,
        f"hybrid_p50_le_30ms_at_{big['chunks']}": big["latency"]["hybrid_ann"]["p50_ms"] <= 30,
        f"hybrid_cpu_p50_le_30ms_at_{big['chunks']}": big["cpu"]["hybrid_ann"]["p50_ms"] <= 30,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
