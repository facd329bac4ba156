"""The lexical lane at library sizes beyond the exact BM25 scan: the tantivy engine (JSON).

For each size (default 500,000 and 2,000,000 chunks) the synthetic library of ``bench/ann.py``
is made (texts of 60–120 words of real sentences as token ids; vectors derived from real
chunks' ONNX MiniLM embeddings), then:

- the exact BM25 index is built from the token ids (``BM25Index.build_from_ids``) and the
  engine the index stage writes above ``index.lexical.threshold``
  (``arkai.search.lexindex.LexicalEngine.build``, fed the same token segments the stage feeds
  it, 20,000 documents a segment); build seconds and disk size of both; the engine's load time
  (its files' SHA-256 checked, as every search process does);
- ``--queries`` SciFact training claims are searched through the one pipeline
  (``arkai.search.pipeline.rank``, depth 300 as ``arkai search -k 10`` uses): the lexical lane
  exact and with the engine, hybrid (the ANN vector lane of ``index.ann``) with the exact
  lexical lane and with the engine; p50/p95 of wall and CPU time after a warm-up pass;
- agreement with the exact lane: overlap@10 and @100 of the engine lane, the share of queries
  whose 300 results are identical, and overlap@10 of tantivy's own top 10 (its BM25 alone,
  before the exact re-scoring: what its one-byte document lengths change).

Run it alone on a quiet machine (it needs about 9 GB of memory at 2,000,000 with hybrid)::

    OPENBLAS_NUM_THREADS=1 nice -n 10 python bench/lexical.py [--sizes 500000,2000000]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from ann import (  # noqa: E402  (bench/ann.py: the synthetic library)
    chunk_keys,
    folder_mb,
    pct,
    rss_mb,
    synth_token_ids,
    synth_vectors,
)
from search import (  # noqa: E402  (bench/search.py: the shared corpus helpers)
    DEFAULT_DATA,
    load_scifact,
    real_chunks,
    sentences_of,
    transcript_texts,
)

from arkai.search.ann import AnnIndex, AnnSettings  # noqa: E402
from arkai.search.bm25 import BM25Index  # noqa: E402
from arkai.search.lexindex import LexicalEngine, LexicalSettings, query_terms  # noqa: E402
from arkai.search.pipeline import Corpus, rank  # noqa: E402
from arkai.search.text import tokenize  # noqa: E402
from arkai.search.vectors import VectorStore  # noqa: E402

DEPTH = 300
SEGMENT_DOCS = 20_000


def log(msg: str) -> None:
    print(f"[lexical {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def segments(ids: np.ndarray, ptr: np.ndarray, terms: list[str]) -> tuple[list[str], Any]:
    """The documents as parts of ``SEGMENT_DOCS`` documents: their names, and a function
    giving part ``i`` as :func:`arkai.search.termcounts.encode_segment` does (ids into
    ``terms``)."""
    starts = list(range(0, len(ptr) - 1, SEGMENT_DOCS))

    def segment(i: int) -> bytes:
        lo = starts[i]
        hi = min(lo + SEGMENT_DOCS, len(ptr) - 1)
        lens = np.diff(ptr[lo : hi + 1]).tolist()
        local = ids[ptr[lo] : ptr[hi]].astype("<i4")
        head = json.dumps({"lens": lens, "terms": terms}, ensure_ascii=False)
        return head.encode("utf-8") + b"\n" + local.tobytes()

    return [f"part{i}" for i in range(len(starts))], segment


def run_size(n: int, base: np.ndarray | None, tok: dict[str, Any],
             queries: list[tuple[str, np.ndarray]], args: argparse.Namespace,
             tmp: Path) -> dict[str, Any]:  # fmt: skip
    nrng = np.random.default_rng(args.seed + n)
    res: dict[str, Any] = {"chunks": n}
    store = ann = None
    if base is not None:
        log(f"{n}: vectors and ANN")
        vecs = synth_vectors(base, n, nrng, args.sigma)
        store = VectorStore(vecs.shape[1], "minilm-onnx")
        store.add(chunk_keys(n), vecs)
        del vecs
        ann = AnnIndex.build(store, AnnSettings())
        res["ann_shards"] = len(ann.shards)
    log(f"{n}: texts and BM25")
    ids, ptr = synth_token_ids(tok["ids"], tok["words"], n, nrng)
    res["tokens"] = len(ids)
    t = time.perf_counter()
    bm = BM25Index.build_from_ids(ids, ptr, tok["vocab"])
    res["bm25_build_s"] = round(time.perf_counter() - t, 1)
    folder = tmp / f"lexical-{n}"
    bm.save(folder)
    res["bm25_disk_mb"] = round(
        sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 2**20, 1
    )
    log(f"{n}: engine build")
    settings = LexicalSettings(threshold=1, candidates=args.candidates)
    t, c = time.perf_counter(), time.process_time()
    names, segment = segments(ids, ptr, tok["terms"])
    LexicalEngine.build(folder, names, segment, chunks="sha256:bench", settings=settings)
    res["engine_build_s"] = round(time.perf_counter() - t, 1)
    res["engine_build_cpu_s"] = round(time.process_time() - c, 1)
    del ids, ptr
    res["engine_disk_mb"] = folder_mb(folder / "engine")
    t = time.perf_counter()
    engine = LexicalEngine.load(folder, bm, "sha256:bench")
    res["engine_load_s"] = round(time.perf_counter() - t, 2)
    res["engine_segments"] = len(engine.docmap)
    res["candidates"] = args.candidates
    log(f"{n}: queries")
    exact, fast = Corpus(bm, store, ann=ann), Corpus(bm, store, ann=ann, engine=engine)
    lat: dict[str, list[float]] = {"lexical_exact": [], "lexical_engine": [],
                                   "hybrid_exact_lexical": [], "hybrid_engine": []}  # fmt: skip
    cpu: dict[str, list[float]] = {k: [] for k in lat}
    agree = {"at10": 0, "at100": 0, "alone10": 0, "total10": 0, "total100": 0, "same": 0}

    def timed(lane: str, rep: int, corpus: Corpus, text: str, **kw: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        got = rank(corpus, text, depth=DEPTH, **kw)
        if rep:
            lat[lane].append(time.perf_counter() - w)
            cpu[lane].append(time.process_time() - c)
        return got

    for rep in range(2):  # the first pass warms caches
        for text, q in queries:
            want = timed("lexical_exact", rep, exact, text, mode="lexical")
            got = timed("lexical_engine", rep, fast, text, mode="lexical")
            if store is not None:
                timed("hybrid_exact_lexical", rep, exact, text, query_vec=q)
                timed("hybrid_engine", rep, fast, text, query_vec=q)
            if rep:
                w, g = [r.doc for r in want.ranked], [r.doc for r in got.ranked]
                agree["at10"] += len(set(w[:10]) & set(g[:10]))
                agree["at100"] += len(set(w[:100]) & set(g[:100]))
                agree["total10"] += len(w[:10])
                agree["total100"] += len(w[:100])
                agree["same"] += [(r.doc, r.score) for r in want.ranked] == [
                    (r.doc, r.score) for r in got.ranked
                ]
                alone = engine.candidates(query_terms(bm, text), 10).tolist()
                agree["alone10"] += len(set(w[:10]) & set(alone))
    res["overlap_at_10"] = round(agree["at10"] / max(1, agree["total10"]), 4)
    res["overlap_at_100"] = round(agree["at100"] / max(1, agree["total100"]), 4)
    res["identical_rankings"] = round(agree["same"] / len(queries), 4)
    res["engine_alone_overlap_at_10"] = round(agree["alone10"] / max(1, agree["total10"]), 4)
    res["latency"] = {k: pct(v) for k, v in lat.items() if v}
    res["cpu"] = {k: pct(v) for k, v in cpu.items() if v}
    res["peak_rss_mb"] = rss_mb()
    shutil.rmtree(folder, ignore_errors=True)
    log(f"{n}: {json.dumps(res)}")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sizes", default="500000,2000000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--base", type=int, default=2000, help="real chunks embedded")
    ap.add_argument("--sigma", type=float, default=0.035)
    ap.add_argument("--candidates", type=int, default=LexicalSettings().candidates)
    ap.add_argument("--no-hybrid", action="store_true", help="lexical lane only (no vectors)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--base-cache", type=Path,
                    help="a .npy file keeping the real chunks' vectors between runs")  # fmt: skip
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    docs, qtexts, _ = load_scifact(args.data / "retrieval" / "scifact_beir")
    qids = sorted(qtexts)
    rng_q = random.Random(args.seed)
    chunks = real_chunks(args.data, docs, args.base, rng)
    rng_q.shuffle(qids)
    qt = [qtexts[q] for q in qids[: args.queries]]
    base: np.ndarray | None = None
    qv = np.zeros((len(qt), 384), dtype=np.float32)
    if not args.no_hybrid:
        from arkai.search.embed import OnnxMiniLMEmbedder

        onnx = OnnxMiniLMEmbedder()
        if args.base_cache is not None and args.base_cache.is_file():
            base = np.load(args.base_cache)
        else:
            log(f"embedding {args.base} real chunks")
            base = np.asarray(onnx.encode(chunks, batch_size=64), dtype=np.float32)
            if args.base_cache is not None:
                np.save(args.base_cache, base)
        qv = np.asarray(onnx.encode(qt, kind="query"), dtype=np.float32)
    sentences = sentences_of(transcript_texts(args.data / "transcripts") + list(docs.values()))
    vocab: dict[str, int] = {}
    toks = [tokenize(s) for s in sentences]
    sent_ids = [np.asarray([vocab.setdefault(w, len(vocab)) for w in x], np.int32) for x in toks]
    tok = {"ids": sent_ids, "words": np.asarray([len(s.split()) for s in sentences]),
           "vocab": vocab, "terms": list(vocab)}  # fmt: skip
    from importlib.metadata import version

    out: dict[str, Any] = {
        "bench": "lexical",
        "seed": args.seed,
        "engine": f"tantivy {version('tantivy')} (arkai.search.lexindex), exact BM25 re-scoring",
        "depth": DEPTH,
        "queries": len(qt),
        "hybrid": not args.no_hybrid,
        "vocabulary": len(vocab),
        "sizes": {},
    }
    tmp = Path(tempfile.mkdtemp(prefix="arkai-bench-lexical-"))
    try:
        for n in sorted(int(s) for s in args.sizes.split(",")):
            out["sizes"][str(n)] = run_size(n, base, tok, list(zip(qt, qv, strict=True)), args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    big = out["sizes"][str(max(int(s) for s in args.sizes.split(",")))]
    if "hybrid_engine" in big["latency"]:
        out["targets"] = {
            f"hybrid_p50_le_30ms_at_{big['chunks']}": big["latency"]["hybrid_engine"]["p50_ms"]
            <= 30,
            f"hybrid_cpu_p50_le_30ms_at_{big['chunks']}": big["cpu"]["hybrid_engine"]["p50_ms"]
            <= 30,
        }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
