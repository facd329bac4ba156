"""The ``index`` stage: everything under ``index/`` (docs/index-format.md), rebuilt from files.

One stage over the whole library, incremental inside:

- ``catalog.json`` — the seed's catalog plus counts, git-tracked, rewritten only when it changes;
- ``chunks.jsonl`` — transcript windows and claim chunks (:mod:`arkai.search.chunks`);
- ``lexical/`` — a BM25 index over the chunks, rebuilt when the chunks or its parameters change;
- ``vectors/`` — chunk embeddings keyed by chunk key: only keys not yet stored are embedded
  (``full`` re-embeds everything), keys no longer present are pruned;
- ``topics.json`` — the topic index (:mod:`arkai.search.topics`), merged with ``synonyms.yaml``;
- ``graph.json`` / ``graph.graphml`` — the knowledge graph (:mod:`arkai.search.graph`);
- ``shards/`` — the condensed chunks of ``condensed/`` in shards (:mod:`arkai.ops.shards`;
  under ``dvc repro`` this stage, which owns ``index/``, builds them after ``condense``);
- ``manifest.json`` — counts, embedder, lexical parameters and file digests.

Every JSON file is canonical and written only when its bytes change, so re-running the stage
over an unchanged library leaves ``index/`` as it was.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import read_repo_file, write_if_changed
from arkai.adapters.layout import ENTITIES, EVIDENCE, LIBRARY, Item
from arkai.adapters.repo import Repo
from arkai.adapters.review import apply_review, is_rejected, load_item_review
from arkai.adapters.shards import CONDENSED_FILE, read_condensed
from arkai.adapters.store import read_entities, read_evidence, read_json, write_json
from arkai.core import canonjson
from arkai.errors import LibraryError
from arkai.model.evidence import EvidenceLine
from arkai.ops.shards import shard_library
from arkai.search.chunks import MAX_WORDS, TARGET_WORDS, Chunk, chunk_transcript, claim_chunks
from arkai.search.graph import GraphItem, GraphSettings, build_graph, to_graphml
from arkai.search.topics import TopicInput, TopicSettings, build_topics, load_synonyms

CATALOG_VERSION = 1
MANIFEST_VERSION = 1
SYNONYMS = "synonyms.yaml"
CATALOG = "catalog.json"
CHUNKS = "chunks.jsonl"
LEXICAL = "lexical"
VECTORS = "vectors"
TOPICS = "topics.json"
GRAPH_JSON = "graph.json"
GRAPHML = "graph.graphml"
MANIFEST = "manifest.json"

#: ``index:`` in params.yaml, for whatever a repo leaves out.
DEFAULTS: dict[str, Any] = {
    "embedder": "default",
    "batch_size": 64,
    "bm25": {"k1": 1.2, "b": 0.75},
    "chunks": {"target_words": TARGET_WORDS, "max_words": MAX_WORDS},
    "topics": {},
    "graph": {},
    "ann": {"threshold": 200_000, "nlist": 0, "nprobe": 48, "rebuild_fraction": 0.2},
}

ProgressFn = Callable[[int, int, str], None]


@dataclass
class IndexSummary:
    """Counts for one run of the stage."""

    items: int = 0
    chunks: int = 0
    transcript_chunks: int = 0
    claim_chunks: int = 0
    embedded: int = 0
    """Chunks embedded in this run."""
    reused: int = 0
    """Chunks whose vectors were already stored."""
    pruned: int = 0
    """Stored vectors removed because their chunk is gone."""
    embedder: str | None = None
    dim: int | None = None
    topics: int = 0
    nodes: int = 0
    edges: int = 0
    lexical_rebuilt: bool = False
    ann: str | None = None
    """What happened to the ANN index (``built``, ``rebuilt``, ``updated``, ``kept``,
    ``removed``); ``None``: below ``index.ann.threshold``, none there."""
    written: list[str] = field(default_factory=list)
    """Index files whose bytes changed."""
    shards: dict[str, Any] | None = None
    """What the shard step did (:class:`arkai.ops.shards.ShardSummary`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "chunks": self.chunks,
            "transcript_chunks": self.transcript_chunks,
            "claim_chunks": self.claim_chunks,
            "embedded": self.embedded,
            "reused": self.reused,
            "pruned": self.pruned,
            "embedder": self.embedder,
            "dim": self.dim,
            "topics": self.topics,
            "nodes": self.nodes,
            "edges": self.edges,
            "lexical_rebuilt": self.lexical_rebuilt,
            "ann": self.ann,
            "written": sorted(self.written),
            "shards": self.shards,
        }


def index_params(params: dict[str, Any]) -> dict[str, Any]:
    """``index:`` from params.yaml over :data:`DEFAULTS`."""
    raw = params.get("index") or {}
    if not isinstance(raw, dict):
        raise LibraryError("params.yaml: `index` must be a mapping")
    out = {**DEFAULTS, **raw}
    for sub in ("bm25", "chunks", "topics", "graph", "ann"):
        out[sub] = {**DEFAULTS[sub], **(raw.get(sub) or {})}
    return out


@dataclass
class _ItemData:
    item: Item
    path: str
    text: str
    evidence: list[EvidenceLine]
    entities: list[dict[str, Any]]
    chunks: list[Chunk]
    condensed: list[tuple[int, str]]
    """(chunk number, chunk text) of the item's condensed chunks (``condensed/``)."""


def _read_text(path: Path, root: Path) -> str:
    data = read_repo_file(path, root, missing_ok=True)
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LibraryError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _load_item(item: Item, cp: dict[str, Any]) -> _ItemData:
    text = _read_text(item.transcript, item.root)
    lines = apply_review(read_evidence(item.extracted / EVIDENCE), load_item_review(item))
    entities = [
        e for e in read_entities(item.extracted / ENTITIES)["entities"] if isinstance(e, dict)
    ]
    chunks = chunk_transcript(
        item.id, text, target_words=int(cp["target_words"]), max_words=int(cp["max_words"])
    ) + claim_chunks(item.id, text, lines)
    chunks.sort(key=lambda c: c.sort_key)
    path = (Path(LIBRARY) / item.rel).as_posix()
    try:
        record = read_condensed(item.condensed / CONDENSED_FILE, item.root)
    except LibraryError:
        record = None  # a damaged file: `arkai validate` names it, `arkai condense` redoes it
    data = text.encode("utf-8")
    condensed = [
        (c.chunk, data[c.start : c.end].decode("utf-8", errors="replace"))
        for c in (record.chunks if record is not None and record.content_id == item.id else ())
    ]
    return _ItemData(item, path, text, lines, entities, chunks, condensed)


def catalog_entry(d: _ItemData) -> dict[str, Any]:
    m = d.item.metadata
    return {
        "id": d.item.id,
        "content_type": m.get("content_type"),
        "url": m.get("url"),
        "title": d.item.title,
        "tags": list(m.get("tags") or []),
        "created_at": m.get("created_at"),
        "path": d.path,
        "published": m.get("published"),
        "source_id": m.get("source_id"),
        "claims": sum(1 for ln in d.evidence if not is_rejected(ln)),
        "entities": len(d.entities),
        "chunks": len(d.chunks),
    }


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


#: Folders of index/ that other stages write (the beliefs stage's vectors): not this stage's.
NOT_OURS = ("beliefs/",)


def _file_digests(out: Path) -> dict[str, str]:
    digests: dict[str, str] = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if rel.startswith(NOT_OURS):
            continue
        if p.is_file() and rel != MANIFEST and not p.name.startswith("."):
            digests[rel] = _digest(p.read_bytes())
    return digests


def requested_embedder(ip: dict[str, Any]) -> str | None:
    """The embedder params ask for (``$ARKAI_EMBEDDER`` refines ``default``); None when off."""
    name = ip.get("embedder")
    if name is None or str(name).strip().lower() in ("", "none", "off", "false"):
        return None
    name = str(name).strip()
    if name == "default":
        name = os.environ.get("ARKAI_EMBEDDER") or name
    return name


def _embed(
    out: Path,
    chunks: Sequence[Chunk],
    ip: dict[str, Any],
    requested: str,
    previous: Any,
    full: bool,
    summary: IndexSummary,
    progress: ProgressFn | None,
) -> None:
    """Embed the chunks whose key the vector store lacks; prune the keys that are gone;
    then bring the ANN index (above ``index.ann.threshold``) in line with the store.

    The model is loaded only when something must be embedded: the store is opened under the
    model name the last run recorded in the manifest (``previous``) when params still ask for
    the same embedder.
    """
    from arkai.search import embed
    from arkai.search.vectors import VectorStore

    folder = out / VECTORS
    keys: list[str] = []
    texts: dict[str, str] = {}
    for c in chunks:
        if c.key not in texts:
            keys.append(c.key)
            texts[c.key] = c.text
    store = None
    name, dim = "", 0
    if (
        not full
        and isinstance(previous, dict)
        and previous.get("requested") == requested
        and previous.get("name")
        and isinstance(previous.get("dim"), int)
    ):
        name, dim = str(previous["name"]), int(previous["dim"])
        store = VectorStore.load(folder, name, dim=dim)
    old_keys = store.keys if store is not None else []
    if store is None or store.missing(keys):
        embedder = embed.get_embedder(requested)
        if store is None or embedder.name != name or int(embedder.dim) != dim:
            name, dim = embedder.name, int(embedder.dim)
            store = VectorStore.load(folder, name, dim=dim)
            old_keys = store.keys
            if full:
                summary.pruned += store.prune([])
        todo = store.missing(keys)
        batch = max(1, int(ip["batch_size"]))
        if progress:
            progress(0, len(todo), "embedding")
        for start in range(0, len(todo), batch):
            part = todo[start : start + batch]
            rows = embedder.encode([texts[k] for k in part], batch_size=batch, kind="passage")
            store.add(part, rows)
            summary.embedded += len(part)
            if progress:
                progress(summary.embedded, len(todo), "embedding")
    summary.reused = len(keys) - summary.embedded
    summary.pruned += store.prune(keys)
    summary.embedder, summary.dim = name, dim
    if summary.embedded or summary.pruned or full or not (folder / "meta.json").is_file():
        store.save(folder)
    summary.ann = update_ann(folder, store, old_keys, ip["ann"], full=full)


def update_ann(
    folder: Path, store: Any, old_keys: list[str], raw: Any, *, full: bool = False
) -> str | None:
    """Build, update, keep or remove ``folder``'s ANN index for ``store`` (whose keys were
    ``old_keys`` when the index was last written); returns what was done (see
    :class:`IndexSummary`). A damaged or mismatched index is rebuilt."""
    from arkai.search.ann import AnnError, AnnIndex, AnnSettings

    settings = AnnSettings.from_params(raw)
    if len(store) < settings.threshold:
        return "removed" if AnnIndex.remove(folder) else None
    ann: AnnIndex | None = None
    how = "built"
    if not full and (folder / "ann.json").exists():
        try:
            ann = AnnIndex.load(folder, old_keys, store.dim)
        except AnnError:
            how = "rebuilt"
    if ann is None:
        ann = AnnIndex.build(store, settings)
    elif old_keys == store.keys and ann.meta.get("nprobe") == settings.nprobe:
        return "kept"
    else:
        before = ann.meta.get("trained_count")
        ann = ann.update(store, old_keys, settings)
        how = "updated" if ann.meta.get("trained_count") == before else "rebuilt"
    ann.save(folder, store)
    return how


def run_index(
    repo: Repo, *, full: bool = False, progress: ProgressFn | None = None
) -> IndexSummary:
    """Build (or bring up to date) every file under ``index/``; see the module docstring."""
    root = repo.root
    ip = index_params(repo.params)
    out = repo.index
    out.mkdir(parents=True, exist_ok=True)
    items = list(repo.items())
    summary = IndexSummary(items=len(items))
    written = summary.written

    def put(name: str, data: bytes) -> None:
        if write_if_changed(out / name, data):
            written.append(name)

    with events.run(root, "index", items=len(items), full=full) as log:
        with log.step("chunks") as info:
            loaded: list[_ItemData] = []
            for n, item in enumerate(items, 1):
                loaded.append(_load_item(item, ip["chunks"]))
                if progress:
                    progress(n, len(items), item.title)
            loaded.sort(key=lambda d: d.path)
            chunks = [c for d in loaded for c in d.chunks]
            summary.chunks = len(chunks)
            summary.claim_chunks = sum(1 for c in chunks if c.kind == "claim")
            summary.transcript_chunks = summary.chunks - summary.claim_chunks
            chunk_bytes = canonjson.dumps_lines(c.to_dict() for c in chunks).encode("utf-8")
            put(CHUNKS, chunk_bytes)
            info["chunks"] = summary.chunks

        with log.step("catalog") as info:
            catalog = {"version": CATALOG_VERSION, "items": [catalog_entry(d) for d in loaded]}
            put(CATALOG, canonjson.dumps(catalog).encode("utf-8"))
            info["items"] = len(loaded)

        old_manifest = read_json(out / MANIFEST) or {}
        with log.step("lexical") as info:
            from arkai.search.bm25 import BM25Index

            k1, b = float(ip["bm25"]["k1"]), float(ip["bm25"]["b"])
            lexical = {"k1": k1, "b": b, "chunks": _digest(chunk_bytes), "n_docs": len(chunks)}
            have = (out / LEXICAL).is_dir() and any((out / LEXICAL).iterdir())
            if full or not have or old_manifest.get("lexical") != lexical:
                BM25Index.build([c.text for c in chunks], k1=k1, b=b).save(out / LEXICAL)
                summary.lexical_rebuilt = True
                written.append(LEXICAL)
            info["rebuilt"] = summary.lexical_rebuilt

        with log.step("vectors") as info:
            requested = requested_embedder(ip)
            if requested is None:
                # The folder is a DVC output (dvc.yaml): it exists, empty, when the lane is off.
                (out / VECTORS).mkdir(exist_ok=True)
                info["skipped"] = True
            else:
                previous = old_manifest.get("embedder")
                _embed(out, chunks, ip, requested, previous, full, summary, progress)
                if summary.embedded or summary.pruned:
                    written.append(VECTORS)
                info.update(
                    embedded=summary.embedded,
                    reused=summary.reused,
                    pruned=summary.pruned,
                    embedder=summary.embedder,
                )

        with log.step("topics") as info:
            position = {id(c): i for i, c in enumerate(chunks)}
            inputs = [
                TopicInput(
                    content_id=d.item.id,
                    text=d.text,
                    chunks=[(position[id(c)], c.text) for c in d.chunks],
                    entities=[str(e.get("name", "")) for e in d.entities],
                    condensed=d.condensed,
                )
                for d in loaded
            ]
            topics = build_topics(
                inputs, load_synonyms(root / SYNONYMS), TopicSettings.from_params(ip["topics"])
            )
            put(TOPICS, canonjson.dumps(topics.doc).encode("utf-8"))
            summary.topics = len(topics.doc["topics"])
            info["topics"] = summary.topics
            if progress:
                progress(1, 1, "topics")

        with log.step("graph") as info:
            graph = build_graph(
                [
                    GraphItem(
                        content_id=d.item.id,
                        title=d.item.title,
                        path=d.path,
                        content_type=str(d.item.metadata.get("content_type") or ""),
                        url=d.item.metadata.get("url") or None,
                        tags=[str(t) for t in d.item.metadata.get("tags") or []],
                        text=d.text,
                        evidence=d.evidence,
                        entities=d.entities,
                        high_topics=[
                            (t.term, t.score)
                            for t in topics.terms.get(d.item.id, [])
                            if t.relevance == "high"
                        ],
                    )
                    for d in loaded
                ],
                GraphSettings.from_params(ip["graph"]),
            )
            put(GRAPH_JSON, canonjson.dumps(graph.to_dict()).encode("utf-8"))
            put(GRAPHML, to_graphml(graph))
            summary.nodes, summary.edges = len(graph.nodes), len(graph.edges)
            info.update(nodes=summary.nodes, edges=summary.edges)
            if progress:
                progress(1, 1, "graph")

        with log.step("shards") as info:
            shards = shard_library(Repo.at(root), log)
            summary.shards = shards.to_dict()
            info.update(summary.shards)
            written += [f"shards/{f}" for f in shards.written]

        with log.step("manifest"):
            manifest: dict[str, Any] = {
                "version": MANIFEST_VERSION,
                "counts": {
                    "items": summary.items,
                    "chunks": summary.chunks,
                    "transcript_chunks": summary.transcript_chunks,
                    "claim_chunks": summary.claim_chunks,
                    "topics": summary.topics,
                    "nodes": summary.nodes,
                    "edges": summary.edges,
                },
                "embedder": (
                    {"name": summary.embedder, "dim": summary.dim, "requested": requested}
                    if summary.embedder
                    else None
                ),
                "lexical": lexical,
                "files": _file_digests(out),
            }
            # No build time: the manifest is a function of the files, so a fresh clone's
            # rebuild gives the same bytes (and the same dvc.lock entry).
            write_json(out / MANIFEST, manifest)
    return summary
