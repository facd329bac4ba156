"""The ``index`` stage: every file under ``index/``, byte-identical re-runs, incremental
embedding (a fake embedder counts what is encoded), and the real thing under ``dvc repro``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from arkai.adapters import beside, events
from arkai.cli import main
from arkai.errors import LibraryError
from arkai.ops import Repo
from arkai.ops.init import init_repo
from arkai.search import embed
from tests.conftest import SAMPLES, as_stage, chunk_files, chunk_text, sh

NOW = "2026-11-22T12:00:00Z"
FILES = ("catalog.json", "chunks/parts.json", "topics.json", "graph.json", "graph.graphml",
         "related.jsonl")  # fmt: skip


class FakeEmbedder:
    """Deterministic 8-dimensional vectors from a hash; records every encoded text."""

    name = "fake"
    dim = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.loads = 0  # get_embedder("fake") calls

    def encode(
        self, texts: Any, *, batch_size: int = 64, kind: str = "passage"
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        texts = list(texts)
        self.calls.append(texts)
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            rng = np.random.default_rng(abs(hash(t)) % (2**32))
            v = rng.standard_normal(self.dim).astype(np.float32)
            rows[i] = v / np.linalg.norm(v)
        return rows

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeEmbedder:
    """Route ``get_embedder("fake")`` to a :class:`FakeEmbedder`, the index stage's side
    steps run in this process (``ARKAI_BESIDE=0``) so that its calls are seen here."""
    monkeypatch.setenv(beside.ENV, "0")
    emb = FakeEmbedder()
    real = embed.get_embedder

    def get(name: str = "default") -> Any:
        if name != "fake":
            return real(name)
        emb.loads += 1
        return emb

    monkeypatch.setattr(embed, "get_embedder", get)
    return emb


def count_chunk_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The IDs of the items whose cached chunk lines the index stage reads, in order."""
    import arkai.ops.index as index_op

    read: list[str] = []
    real = index_op._chunk_lines

    def counting(d: Any, *args: Any) -> bytes:
        read.append(d.item.id)
        return real(d, *args)

    monkeypatch.setattr(index_op, "_chunk_lines", counting)
    return read


def count_part_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the chunk parts whose lines the vectors step reads for their keys."""
    import arkai.ops.index as index_op

    read: list[str] = []
    real = index_op._keyed_lines

    def counting(parts: Any, part: Any) -> Any:
        read.append(part.name)
        return real(parts, part)

    monkeypatch.setattr(index_op, "_keyed_lines", counting)
    return read


def set_params(root: Path, **index: Any) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    params.setdefault("index", {}).update(index)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two sample items, added and extracted once for the module (extraction is slow)."""
    root = tmp_path_factory.mktemp("base") / "kr"
    init_repo(root, git=False)
    assert (
        main(
            [
                "--repo",
                str(root),
                "add",
                "--quiet",
                "--tags",
                "sample",
                str(SAMPLES / "beekeeping-talk.vtt"),
                str(SAMPLES / "note-2026-11-20.md"),
            ]
        )
        == 0
    )
    assert main(["--repo", str(root), "extract", "--quiet"]) == 0
    yield root


@pytest.fixture
def repo(base_repo: Path, tmp_path: Path) -> Path:
    root = tmp_path / "kr"
    shutil.copytree(base_repo, root)
    set_params(root, embedder="fake", batch_size=4)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    index = root / "index"
    return {name: (index / name).read_bytes() for name in (*FILES, "manifest.json")} | chunk_files(
        index
    )


def item_keys(root: Path, content_id: str) -> set[str]:
    lines = chunk_text(root / "index").splitlines()
    return {json.loads(x)["key"] for x in lines if json.loads(x)["content_id"] == content_id}


def test_builds_every_file_and_reruns_identically(repo: Path, fake: FakeEmbedder) -> None:
    from arkai.ops.index import run_index

    seen: list[tuple[int, int, str]] = []
    summary = run_index(Repo.at(repo), progress=lambda d, t, w: seen.append((d, t, w)))
    out = repo / "index"
    for name in (*FILES, "manifest.json"):
        assert (out / name).is_file(), name
    assert (out / "lexical").is_dir() and any((out / "lexical").iterdir())
    assert (out / "vectors").is_dir() and any((out / "vectors").iterdir())
    assert summary.items == 2 and summary.claim_chunks > 0 and summary.transcript_chunks > 0
    keys = {json.loads(x)["key"] for x in chunk_text(out).splitlines()}
    assert summary.embedded == len(keys) == len(fake.encoded)
    assert all(len(call) <= 4 for call in fake.calls)  # batch_size from params
    assert ("embedding" in {w for _, _, w in seen}) and seen[-1][2] == "graph"

    catalog = json.loads((out / "catalog.json").read_text())
    assert catalog["version"] == 1
    entries = catalog["items"]
    assert [e["path"] for e in entries] == sorted(e["path"] for e in entries)
    for e in entries:
        assert set(e) >= {
            "id",
            "content_type",
            "url",
            "title",
            "tags",
            "created_at",
            "path",
            "published",
            "source_id",
            "claims",
            "entities",
            "chunks",
        }
        assert e["tags"] == ["sample"] and e["chunks"] > 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["embedder"] == {"name": "fake", "dim": 8, "requested": "fake"}
    assert manifest["counts"]["chunks"] == summary.chunks
    assert manifest["lexical"]["k1"] == 1.2 and "catalog.json" in manifest["files"]
    topics = json.loads((out / "topics.json").read_text())
    assert topics["topics"] and topics["version"] == 2
    graph = json.loads((out / "graph.json").read_text())
    assert {n["type"] for n in graph["nodes"]} == {"Content", "Entity", "Tag", "Topic"}

    # Lexical index and chunks agree (the search side relies on it).
    from arkai.search.bm25 import BM25Index

    assert BM25Index.load(out / "lexical").n_docs == summary.chunks

    before = snapshot(repo)
    fake.calls.clear()
    fake.loads = 0
    again = run_index(Repo.at(repo))
    assert fake.loads == 0  # nothing new: the model is not even loaded
    assert snapshot(repo) == before  # the manifest keeps its build time too
    assert fake.calls == [] and again.embedded == 0 and again.reused == len(keys)
    assert again.written == [] and not again.lexical_rebuilt

    # Events: one run, one step per sub-step (in this process, the side steps first).
    runs = events.list_runs(repo)
    evs = events.read_events(repo / events.RUNS_DIR / runs[-1] / "events.jsonl")
    steps = [e["step"] for e in evs if e["type"] == "StepStarted"]
    assert steps == [
        "chunks", "catalog", "lexical", "vectors", "shards", "topics", "graph", "manifest",
    ]  # fmt: skip
    assert evs[0]["type"] == "RunStarted" and evs[0]["pipeline"] == "index"
    assert evs[-1]["type"] == "RunCompleted" and evs[-1]["status"] == "success"


def test_the_site_reads_the_stages_topics_a_line_at_a_time(repo: Path, fake: FakeEmbedder) -> None:
    """``topics.json`` as the index stage writes it (kept rankings and fresh ones alike) is in
    the layout the site reads line by line: the site's fast path is the one a library takes."""
    from arkai.ops.index import run_index
    from arkai.search.topics import chunk_offsets
    from arkai.site import build as site_build
    from tests.func.test_site_topics import streamed as read_lines

    for _ in range(2):  # a first build, then one from the kept rankings
        run_index(Repo.at(repo))
        index = repo / "index"
        catalog = json.loads((index / "catalog.json").read_text())["items"]
        offsets = chunk_offsets(catalog)
        streamed = read_lines(index / "topics.json", offsets)
        assert streamed is not None and sum(map(len, streamed[0].values())) > 0
        text = (index / "topics.json").read_text(encoding="utf-8")
        assert streamed == site_build._walk_topics(text, offsets)


def test_the_stage_lets_go_of_the_model_it_loaded(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors step releases an embedder it loaded (the later steps decide the stage's
    peak memory and never embed); one the process held before is kept."""
    import gc
    import weakref

    from arkai.ops.index import run_index

    made: list[weakref.ref[FakeEmbedder]] = []

    def factory() -> FakeEmbedder:
        emb = FakeEmbedder()
        made.append(weakref.ref(emb))
        return emb

    monkeypatch.setattr(embed, "_instances", {})
    monkeypatch.setattr(embed, "get_embedders", lambda: {"fake": factory})
    # With the side steps forked (two CPUs), the stage process never loads it at all.
    monkeypatch.setenv(beside.ENV, "1")
    if beside.forking():
        assert run_index(Repo.at(repo)).embedded > 0
        assert made == [] and embed.held_embedders() == set()
        (repo / "index" / "vectors").rename(repo / "vectors.old")  # (embedded again below)
    monkeypatch.setenv(beside.ENV, "0")
    assert run_index(Repo.at(repo)).embedded > 0
    gc.collect()
    assert len(made) == 1 and made[0]() is None and embed.held_embedders() == set()
    # Held before the run: still held after it.
    held = embed.get_embedder("fake")
    assert run_index(Repo.at(repo), full=True).embedded > 0
    assert embed.get_embedder("fake") is held and embed.held_embedders() == {"fake"}


def test_adding_an_item_embeds_only_its_chunks(
    repo: Path, fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arkai.ops.index import run_index
    from arkai.search import vectors

    monkeypatch.setattr(vectors, "SEGMENT_ROWS", 4)
    run_index(Repo.at(repo))
    lines = chunk_text(repo / "index").splitlines()
    old_keys = {json.loads(x)["key"] for x in lines}
    folder = repo / "index" / "vectors"
    segments = [e["name"] for e in json.loads((folder / "meta.json").read_text())["segments"]]
    stats = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}
    fake.calls.clear()
    assert (
        main(["--repo", str(repo), "add", "--quiet", str(SAMPLES / "compilers-podcast.srt")]) == 0
    )
    # The vectors step reads no item's cached lines (the keys come from index/chunks/, whose
    # parts were kept or spliced: only the new item's lines were read) and parses only the
    # lines to embed.
    read = count_chunk_reads(monkeypatch)
    passes = count_part_reads(monkeypatch)
    summary = run_index(Repo.at(repo))
    assert len(read) == 1
    # The keys of the parts not seen before (the new item's), the others' kept by part.
    from arkai.adapters.chunkparts import ChunkParts

    listing = ChunkParts.load(repo / "index" / "chunks")
    assert listing is not None and passes and set(passes) <= {p.name for p in listing.parts}
    assert 1 <= len(passes) <= 2  # the part the new item joined (or the two it split)
    catalog = json.loads((repo / "index/catalog.json").read_text())["items"]
    new = next(e for e in catalog if e["title"] == "Compilers podcast")
    new_keys = item_keys(repo, new["id"])
    assert new_keys and not (new_keys & old_keys)
    assert summary.embedded == len(new_keys) == len(fake.encoded)
    from arkai.search.chunks import chunk_key

    assert {chunk_key(new["id"], t) for t in fake.encoded} == new_keys
    assert summary.pruned == 0
    # Every full segment is left as it was (not written again: DVC neither hashes nor caches
    # it again); the new rows went to the last segment and new ones after it.
    assert len(segments) >= 2
    for name in segments[:-1]:
        for ext in (".npy", ".keys"):
            p = folder / f"{name}{ext}"
            assert (p.stat().st_ino, p.stat().st_mtime_ns) == stats[p.name]

    # Removing it prunes exactly its vectors; --full re-embeds everything.
    shutil.rmtree(repo / new["path"])
    fake.calls.clear()
    gone = run_index(Repo.at(repo))
    assert gone.pruned == len(new_keys) and gone.embedded == 0
    full = run_index(Repo.at(repo), full=True)
    assert full.embedded == full.reused + full.embedded and full.reused == 0
    assert full.embedded == len(set(fake.encoded))


def test_rejected_claims_leave_the_index(repo: Path, fake: FakeEmbedder) -> None:
    from arkai.ops.index import run_index

    run_index(Repo.at(repo))
    chunks = [json.loads(x) for x in chunk_text(repo / "index").splitlines()]
    claim = next(c for c in chunks if c["kind"] == "claim")
    catalog = json.loads((repo / "index/catalog.json").read_text())["items"]
    entry = next(e for e in catalog if e["id"] == claim["content_id"])
    (repo / entry["path"] / "review.yaml").write_text(
        f"claims:\n  {claim['evidence_id']}: {{status: rejected}}\n"
    )
    run_index(Repo.at(repo))
    after = [json.loads(x) for x in chunk_text(repo / "index").splitlines()]
    assert claim["evidence_id"] not in {c.get("evidence_id") for c in after}
    catalog2 = json.loads((repo / "index/catalog.json").read_text())["items"]
    entry2 = next(e for e in catalog2 if e["id"] == claim["content_id"])
    assert entry2["claims"] == entry["claims"] - 1


def test_vectors_off(repo: Path) -> None:
    from arkai.ops.index import run_index

    set_params(repo, embedder="none")
    summary = run_index(Repo.at(repo))
    # The folder is a DVC output, so it exists; no vector is stored in it.
    assert summary.embedder is None and not any((repo / "index" / "vectors").iterdir())
    assert json.loads((repo / "index/manifest.json").read_text())["embedder"] is None


def test_ann_index_above_threshold(repo: Path, fake: FakeEmbedder) -> None:
    """From ``index.ann.threshold`` chunks the stage writes index/vectors/ann.*, keeps it when
    nothing changed, and removes it once the library is below the threshold again."""
    from arkai.ops.index import run_index
    from arkai.ops.search import search

    set_params(repo, ann={"threshold": 5})
    summary = run_index(Repo.at(repo))
    vectors = repo / "index" / "vectors"
    assert summary.ann == "built" and summary.chunks >= 5
    (shard,) = vectors.glob("ann-*.faiss")
    assert (vectors / "ann.json").is_file()
    meta = json.loads((vectors / "ann.json").read_text())
    assert meta["count"] == json.loads((vectors / "meta.json").read_text())["count"] >= 5
    assert [e["file"] for e in meta["shards"]] == [shard.name]
    manifest = json.loads((repo / "index" / "manifest.json").read_text())
    assert f"vectors/{shard.name}" in manifest["files"]
    again = run_index(Repo.at(repo))
    assert again.ann == "kept" and again.written == []
    got = search(Repo.at(repo), "bees hive", k=3)
    assert got.results and not [w for w in got.warnings if "ann" in w]
    set_params(repo, ann={"threshold": 10**6})
    assert run_index(Repo.at(repo)).ann == "removed"
    assert not list(vectors.glob("ann-*.faiss")) and not (vectors / "ann.json").exists()


def test_reindex_command(repo: Path, fake: FakeEmbedder) -> None:
    from click.testing import CliRunner

    from arkai.cli.index import reindex

    result = CliRunner().invoke(reindex, ["--json"], obj={"repo": str(repo)})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["items"] == 2 and data["embedder"] == "fake" and data["embedded"] > 0
    result = CliRunner().invoke(reindex, ["--quiet"], obj={"repo": str(repo)})
    assert result.exit_code == 0 and result.output == ""
    result = CliRunner().invoke(reindex, [], obj={"repo": str(repo)})
    assert "index: 2 items" in result.output and "0 embedded" in result.output


# -- the real pipeline ---------------------------------------------------------------------

BIN = Path(sys.executable).parent


def encoded_runs(repo: Path) -> list[int]:
    """How many chunks each index run embedded (from its events)."""
    out = []
    for run_id in events.list_runs(repo):
        evs = events.read_events(repo / events.RUNS_DIR / run_id / "events.jsonl")
        if evs and evs[0].get("pipeline") == "index":
            done = [e for e in evs if e["type"] == "StepCompleted" and e["step"] == "vectors"]
            out.append(int(done[0].get("embedded", 0)) if done else -1)
    return out


@pytest.mark.slow
def test_dvc_repro_builds_the_index(tmp_path: Path) -> None:
    repo = tmp_path / "knowledge"
    sh(tmp_path, "arkai", "init", str(repo))
    samples = [str(p) for p in sorted(SAMPLES.iterdir()) if p.name != "README.md"]
    sh(repo, "arkai", "add", "--tags", "sample", *samples)
    sh(repo, "dvc", "repro")
    out = repo / "index"
    for name in (*FILES, "manifest.json", "lexical/bm25.json"):
        assert (out / name).is_file(), name
    assert any((out / "vectors").iterdir())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["embedder"]["dim"] > 0
    assert json.loads((out / "catalog.json").read_text())["items"]
    keys = {json.loads(x)["key"] for x in chunk_text(out).splitlines()}
    assert encoded_runs(repo) == [len(keys)]

    # Only the catalog is tracked by git; the rest of index/ is ignored.
    sh(repo, "git", "add", "-A")
    tracked = sh(repo, "git", "ls-files", "index").stdout.split()
    assert tracked == ["index/catalog.json"]
    sh(repo, "git", "commit", "-qm", "library")

    before = snapshot(repo)
    proc = sh(repo, "dvc", "repro")
    assert "didn't change" in proc.stdout or "up to date" in proc.stdout
    assert snapshot(repo) == before and len(encoded_runs(repo)) == 1
    assert sh(repo, "git", "status", "--porcelain").stdout == ""

    # One more item: the stage re-runs and embeds only that item's chunks.
    extra = tmp_path / "extra.md"
    extra.write_text("# Queen rearing\n\nRearing queens from local stock keeps colonies calm.\n")
    sh(repo, "arkai", "add", str(extra))
    sh(repo, "dvc", "repro")
    runs = encoded_runs(repo)
    assert len(runs) == 2
    catalog = json.loads((out / "catalog.json").read_text())["items"]
    new = next(e for e in catalog if e["title"] == "Queen rearing")
    assert runs[1] == len(item_keys(repo, new["id"])) > 0


# -- incremental builds (per-item cache, docs/index-format.md "Incremental builds") -------

BUILT = (*FILES, "manifest.json", "lexical/bm25.json", "lexical/bm25.npz")


def built(root: Path) -> dict[str, bytes]:
    index = root / "index"
    return {name: (index / name).read_bytes() for name in BUILT} | chunk_files(index)


def scratch_build(root: Path, dest: Path) -> dict[str, bytes]:
    """The index of a copy of ``root`` built from nothing (no index/, no cache)."""
    from arkai.ops.index import run_index

    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("index", ".arkai"))
    summary = run_index(Repo.at(dest))
    assert summary.cache_hits == 0
    return built(dest)


def graph_step(root: Path) -> dict[str, Any]:
    """The last index run's graph step (its events)."""
    from arkai.adapters.events import list_runs, read_events

    run = list_runs(root)[-1]
    events = read_events(root / ".arkai" / "runs" / run / "events.jsonl")
    return next(e for e in events if e.get("step") == "graph" and e["type"] == "StepCompleted")


def step(root: Path, name: str) -> dict[str, Any]:
    """The last index run's step ``name`` (its events)."""
    from arkai.adapters.events import list_runs, read_events

    run = list_runs(root)[-1]
    events = read_events(root / ".arkai" / "runs" / run / "events.jsonl")
    return next(e for e in events if e.get("step") == name and e["type"] == "StepCompleted")


def topics_step(root: Path) -> dict[str, Any]:
    """The last index run's topics step (its events)."""
    return step(root, "topics")


def test_incremental_builds_equal_a_build_from_scratch(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arkai.ops.index import run_index

    # Each item keeps one RELATED_TO neighbour (index.graph.max_related): the cached lists
    # are capped ones, and still what a build from scratch writes.
    graph = yaml.safe_load((repo / "params.yaml").read_text())["index"]["graph"]
    set_params(repo, embedder="none", graph=graph | {"max_related": 1})
    first = run_index(Repo.at(repo))
    assert first.cache_hits == 0 and first.items == 2
    assert graph_step(repo)["related_recomputed"] == 2
    # The lexical index from the cached stems is the one the chunk texts give.
    from arkai.search.bm25 import BM25Index

    texts = [json.loads(x)["text"] for x in chunk_text(repo / "index").splitlines()]
    BM25Index.build(texts).save(tmp_path / "reference")
    for name in ("bm25.json", "bm25.npz"):
        assert (tmp_path / "reference" / name).read_bytes() == built(repo)[f"lexical/{name}"]
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    noop = run_index(Repo.at(repo))
    assert noop.cache_hits == 2 and noop.written == []  # nothing changed: nothing re-derived
    # An output edited by hand is not trusted: the next run rebuilds it.
    (repo / "index" / "graph.json").write_text("{}")
    assert run_index(Repo.at(repo)).written == ["graph.json"]
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # …from the cached RELATED_TO edges: no item's features changed, none was recomputed.
    assert graph_step(repo)["related_recomputed"] == 0
    # …and the cached topic rankings: no item's phrase frequencies changed, none was ranked.
    assert topics_step(repo)["reranked"] == 0
    # related.jsonl is made from the same inputs (RelatedInputs.key): not made again.
    assert graph_step(repo)["related_kept"] is True
    # …unless it was edited by hand (its bytes, not its size or time, changed) or the kept key
    # and digest do not say what made it: then it is made again, the bytes of a fresh build.
    # (Its digest is the stat memo's, FileDigests: a file whose size, time and inode are
    # the ones recorded once it had settled is not read again — the trust _intact gives
    # every derived file, and git its index.)
    related = repo / "index" / "related.jsonl"
    data = related.read_bytes()
    related.write_bytes(data.replace(b'"related"', b'"RELATED"', 1))
    assert run_index(Repo.at(repo)).written == ["related.jsonl"]
    assert graph_step(repo)["related_kept"] is False and related.read_bytes() == data
    (repo / "index" / "graph.json").write_text("{}")
    assert run_index(Repo.at(repo)).written == ["graph.json"]
    assert graph_step(repo)["related_kept"] is True
    inputs = repo / ".arkai" / "index-cache" / "inputs.json"
    key, digest = json.loads(inputs.read_text())["related"]
    other = "sha256:" + "0" * 64
    for forged in ([other, digest], [key, other], [key], None, "x", [1, 2]):
        doc = json.loads(inputs.read_text())
        doc["related"] = forged
        inputs.write_text(json.dumps(doc))
        (repo / "index" / "graph.json").write_text("{}")
        assert run_index(Repo.at(repo)).written == ["graph.json"]
        assert graph_step(repo)["related_kept"] is False and related.read_bytes() == data
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # An index from before related.jsonl existed (not in the manifest either) gets it.
    (repo / "index" / "related.jsonl").unlink()
    manifest = json.loads((repo / "index" / "manifest.json").read_text())
    del manifest["files"]["related.jsonl"]
    (repo / "index" / "manifest.json").write_text(json.dumps(manifest))
    assert run_index(Repo.at(repo)).written == ["related.jsonl"]
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")

    # One transcript changed: only that item is re-derived, the result is a fresh build's.
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Varroa counts rise in late summer.\n")
    changed = run_index(Repo.at(repo))
    assert changed.cache_hits == 1 and "chunks/" in changed.written
    assert topics_step(repo)["reranked"] >= 1
    # The BM25 frequencies: the kept ones, with only the changed item's segment read.
    assert step(repo, "lexical")["segments_read"] == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # More new (term, document) pairs than an update reads in bounded memory: the
    # frequencies are built from every item's segment instead, the same index.
    from arkai.search import termcounts

    monkeypatch.setattr(termcounts, "UPDATE_READ_PAIRS", 0)
    transcript.write_bytes(transcript.read_bytes() + b"Mite counts fall after treatment.\n")
    run_index(Repo.at(repo))
    assert step(repo, "lexical")["segments_read"] == 2
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    monkeypatch.undo()
    # A cached ranking made under other frequencies (another context digest) is not used.
    from arkai.adapters.itemtable import seal_row
    from arkai.ops.index import RANKINGS, TOPIC_ENTRIES

    cache = repo / ".arkai" / "index-cache"
    table = cache / f"{RANKINGS}.tsv"
    header, first, rest = table.read_bytes().split(b"\n", 2)
    cid, stat, key, body = first.split(b"\t", 1)[1].split(b"\t", 3)
    assert body.startswith(b"sha256:")
    forged = b"sha256:" + b"0" * 64 + body[len(b"sha256:") + 64 :]
    table.write_bytes(
        header + b"\n" + seal_row(b"\t".join((cid, stat, key, forged))) + b"\n" + rest
    )
    (repo / "index" / "topics.json").unlink()
    # (the entries kept whole as the last build made them, which would be taken first)
    (cache / TOPIC_ENTRIES).unlink()
    run_index(Repo.at(repo))
    assert topics_step(repo)["reranked"] == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")

    # One item added, then one removed. The number of items changed: every item is ranked
    # again, once: the next run takes every ranking from the table the adding run wrote.
    assert (
        main(["--repo", str(repo), "add", "--quiet", str(SAMPLES / "compilers-podcast.srt")]) == 0
    )
    added = run_index(Repo.at(repo))
    assert added.items == 3 and added.cache_hits == 2
    assert topics_step(repo)["reranked"] == 3
    assert step(repo, "lexical")["segments_read"] == 1
    # CITES: the new item's transcript searched for every title and URL, the others' only for
    # its own (arkai.search.citecache); its graph part is the only one made.
    graph = step(repo, "graph")
    assert (graph["cites_searched"], graph["cites_searched_new"]) == (1, 2)
    assert graph["graph_parts_built"] == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    (repo / "index" / "topics.json").unlink()
    run_index(Repo.at(repo))
    assert topics_step(repo)["reranked"] == 0
    assert len(table.read_bytes().splitlines()) == 1 + 3  # its first line, a row per item
    catalog = json.loads((repo / "index/catalog.json").read_text())["items"]
    gone = next(e for e in catalog if e["title"] == "Compilers podcast")
    shutil.rmtree(repo / gone["path"])
    removed = run_index(Repo.at(repo))
    assert removed.items == 2 and removed.cache_hits == 2
    assert step(repo, "lexical")["segments_read"] == 0
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # Kept frequencies that are damaged are not used: every segment is read, same index.
    from arkai.ops.index import LEXICAL_COUNTS

    kept = cache / LEXICAL_COUNTS
    kept.write_bytes(kept.read_bytes()[:-4] + b"\0\0\0\7")
    (repo / "index" / "manifest.json").unlink()
    run_index(Repo.at(repo))
    assert step(repo, "lexical")["segments_read"] == 2
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # The removed item's cache entries went with it.
    assert not list((repo / ".arkai" / "index-cache").rglob(f"{gone['id']}.*"))

    # Every part the stage keeps is one it names (ITEM_PARTS); a part an older version wrote
    # (per-item CITES counts, before arkai.search.citecache) is pruned, the records beside the
    # entries stay, and the next run still reads every entry it keeps.
    from arkai.ops.index import ITEM_PARTS

    entries = [p for p in cache.glob("*/*") if p.is_file()]
    assert {p.name.split(".", 1)[1] for p in entries} == {f"{x}.json" for x in ITEM_PARTS}
    old_parts = [entries[0].with_name(entries[0].name.split(".")[0] + f".{part}.json")
                 for part in ("cites", "topics")]  # fmt: skip
    for old_part in old_parts:
        old_part.write_text('{"digest":"sha256:0","key":"sha256:0","version":1}\n{}')
    records = sorted(p.name for p in cache.iterdir() if p.is_file())
    (repo / "index" / "manifest.json").unlink()  # the stage runs its steps again
    assert run_index(Repo.at(repo)).cache_hits == 2
    assert not any(p.exists() for p in old_parts)
    assert len([p for p in cache.glob("*/*") if p.is_file()]) == len(entries)
    assert sorted(p.name for p in cache.iterdir() if p.is_file()) == records


def test_the_graph_reads_an_items_quotes_only_to_make_its_part(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stage holds each item's record without its quotes (≈ 5 KB an item), only their
    digest: an item's quotes are read from its row again when its graph part is made, and
    not at all when the part is kept. Quotes read back that are not the ones digested (the
    row changed meanwhile) are derived again from the item's files: the same graph."""
    from arkai.ops import index as ix
    from arkai.ops.index import run_index
    from arkai.search.graphparts import PARTS

    set_params(repo, embedder="none")
    run_index(Repo.at(repo))
    reads: list[str] = []
    real = ix._Records.quotes

    def counted(self: Any, content_id: str, key: str) -> list[tuple[str, str]] | None:
        reads.append(content_id)
        return real(self, content_id, key)

    monkeypatch.setattr(ix._Records, "quotes", counted)
    (repo / "index" / "graph.json").unlink()  # the graph is made again, every part kept
    run_index(Repo.at(repo))
    assert graph_step(repo)["graph_parts_built"] == 0 and reads == []
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    (repo / PARTS).unlink()  # every part made again: each item's quotes read once
    (repo / "index" / "graph.json").unlink()
    reads.clear()  # (the build from scratch read its own)
    run_index(Repo.at(repo))
    assert graph_step(repo)["graph_parts_built"] == 2 and len(reads) == 2
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")

    def wrong(self: Any, content_id: str, key: str) -> list[tuple[str, str]] | None:
        return [("claim-0", "not a quote of this item")]

    monkeypatch.setattr(ix._Records, "quotes", wrong)
    (repo / PARTS).unlink()
    (repo / "index" / "graph.json").unlink()
    run_index(Repo.at(repo))
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def test_topic_entries_name_each_items_own_chunks(repo: Path, tmp_path: Path) -> None:
    """``topics.json`` (version 2) lists each item's own chunk numbers: placed after the
    chunks of the items before it in ``catalog.json``, every entry's chunk is one of the
    item's and holds the term (stemmed). An item that gains chunks moves every later item's
    positions in the chunk lines but none of their entries, which the next run takes from
    the rankings table as text, ranking nothing else again."""
    from arkai.ops.index import run_index
    from arkai.search.topics import chunk_offsets, stem_key

    set_params(repo, embedder="none")
    run_index(Repo.at(repo))

    def state() -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
        catalog = json.loads((repo / "index/catalog.json").read_text())["items"]
        doc = json.loads((repo / "index/topics.json").read_text())
        lines = chunk_text(repo / "index").splitlines()
        return catalog, doc, [json.loads(x) for x in lines]

    def check(catalog: list[dict[str, Any]], doc: dict[str, Any], chunks: list[Any]) -> None:
        assert doc["version"] == 2
        offsets = chunk_offsets(catalog)
        counts = {e["id"]: e["chunks"] for e in catalog}
        seen = 0
        for term, topic in doc["topics"].items():
            for e in topic["items"]:
                cid = e["content_id"]
                for c in e["chunks"]:
                    assert 0 <= c < counts[cid]
                    chunk = chunks[offsets[cid] + c]
                    assert chunk["content_id"] == cid
                    assert f" {stem_key(term)} " in f" {stem_key(chunk['text'])} "
                    seen += 1
        assert seen > 20

    catalog, doc, chunks = state()
    check(catalog, doc, chunks)
    first, second = catalog[0], catalog[1]
    assert first["chunks"] and second["chunks"]

    def entries(d: dict[str, Any], cid: str) -> dict[str, Any]:
        return {t: e for t, v in d["topics"].items() for e in v["items"] if e["content_id"] == cid}

    kept = entries(doc, second["id"])
    assert kept and any(e["chunks"] for e in kept.values())
    # Words no other item has, so no phrase of the second item changes frequency.
    words = " ".join(f"zorblax{n} quivvet{n}" for n in range(40))
    transcript = repo / first["path"] / "transcript.md"
    added = "".join(f"{words} line {n}.\n" for n in range(30))
    transcript.write_bytes(transcript.read_bytes() + added.encode())
    run_index(Repo.at(repo))
    assert topics_step(repo)["reranked"] == 1
    catalog2, doc2, chunks2 = state()
    check(catalog2, doc2, chunks2)
    assert catalog2[0]["id"] == first["id"] and catalog2[0]["chunks"] > first["chunks"]
    assert entries(doc2, second["id"]) == kept
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def test_a_kept_ranking_not_written_by_the_stage_is_ranked_again(
    repo: Path, tmp_path: Path
) -> None:
    """A kept ranking's entries are copied into ``topics.json`` unread: a row that is intact
    (its digest sealed again) but holds entries the stage would not have written — another
    item's ID, text that is not canonical JSON, a relevance or condensed flag that disagrees
    with the row, a row of another shape — is not copied but ranked again, and the file is a
    fresh build's."""
    from arkai.adapters.itemtable import seal_row
    from arkai.ops.index import RANKINGS, TOPIC_ENTRIES, run_index

    set_params(repo, embedder="none")
    run_index(Repo.at(repo))
    want = scratch_build(repo, tmp_path / "scratch")
    table = repo / ".arkai" / "index-cache" / f"{RANKINGS}.tsv"
    header, first, rest = table.read_bytes().split(b"\n", 2)
    cid, stat, key, body = first.split(b"\t", 1)[1].split(b"\t", 3)
    context, condensed, ranking, known = body.split(b"\t")
    rows = json.loads(ranking)
    assert rows and all(len(r) == 4 for r in rows)
    term, relevance, score, entry = rows[0]
    other = "f" * 16
    forged_rows = [
        [[term, relevance, score, entry.replace(cid.decode(), other)], *rows[1:]],
        [[term, relevance, score, entry.replace('"chunks":[', '"chunks": [')], *rows[1:]],
        [[term, relevance, score, entry[:-1] + ',"x":1}'], *rows[1:]],
        [[term, "low" if relevance != "low" else "high", score, entry], *rows[1:]],
        [[term, relevance, str(score), entry], *rows[1:]],
        [[term, relevance, score], *rows[1:]],
        {"rows": rows},
    ]
    forged = [json.dumps(r).encode() for r in forged_rows]
    forged.append(ranking[:-1])  # not JSON
    flipped = b"1" if condensed == b"0" else b"0"
    for fields in [(context, condensed, f, known) for f in forged] + [
        (context, flipped, ranking, known)
    ]:
        line = seal_row(b"\t".join((cid, stat, key, b"\t".join(fields))))
        table.write_bytes(header + b"\n" + line + b"\n" + rest)
        (repo / "index" / "topics.json").unlink()
        (table.parent / TOPIC_ENTRIES).unlink()  # the rankings table is what is read
        run_index(Repo.at(repo))
        assert topics_step(repo)["reranked"] == 1, fields
        assert built(repo) == want


def test_the_topic_entries_are_kept_whole_and_a_forged_record_is_ranked_without(
    repo: Path, tmp_path: Path
) -> None:
    """The next build takes each unchanged item's topic entries from the record the last
    one kept (neither its ranking row nor its entries read); one whose key changed is ranked
    again. A record sealed again with one item's entries under another's name, or damaged,
    is not used: the items are ranked from the rankings table, and ``topics.json`` is a
    fresh build's either way."""
    from arkai.adapters.itemcache import read_checked, write_checked
    from arkai.ops.index import TOPIC_ENTRIES, run_index

    set_params(repo, embedder="none")
    run_index(Repo.at(repo))
    assert topics_step(repo)["kept"] == 0  # (no record yet)
    record = repo / ".arkai" / "index-cache" / TOPIC_ENTRIES
    assert record.is_file()
    (repo / "index" / "topics.json").unlink()
    run_index(Repo.at(repo))
    assert topics_step(repo)["kept"] == 2 and topics_step(repo)["reranked"] == 0
    want = scratch_build(repo, tmp_path / "scratch")
    assert built(repo) == want

    body = read_checked(record)
    assert body is not None
    head_line, rest = body.split(b"\n", 1)
    doc = json.loads(head_line)
    a, b = doc["items"]
    a[3:5], b[3:5] = b[3:5], a[3:5]
    write_checked(record, json.dumps(doc).encode() + b"\n" + rest)
    (repo / "index" / "topics.json").unlink()
    run_index(Repo.at(repo))
    step = topics_step(repo)
    assert step["kept_rejected"] is True and step["kept"] == 0 and step["reranked"] == 0
    assert built(repo) == want
    # Written again as the stage makes it: the next build takes it.
    (repo / "index" / "topics.json").unlink()
    run_index(Repo.at(repo))
    assert topics_step(repo)["kept"] == 2
    # A byte of the record changed: not read.
    data = bytearray(record.read_bytes())
    data[-5] ^= 1
    record.write_bytes(bytes(data))
    (repo / "index" / "topics.json").unlink()
    run_index(Repo.at(repo))
    assert topics_step(repo)["kept"] == 0 and "kept_rejected" not in topics_step(repo)
    assert built(repo) == want


def test_the_phrase_table_is_kept_and_only_changed_items_phrases_are_read(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document frequencies come from the phrase table the last run kept: only a
    changed item's ``phrases`` entry is read. A table that is damaged, forged with a digest
    that holds but ids that do not add up, or ignored by ``--full`` is not used (every entry
    is read), and every build gives a fresh build's files."""
    import arkai.ops.index as index_op
    from arkai.adapters.itemcache import read_checked, write_checked
    from arkai.ops.index import PHRASE_TABLE, run_index

    set_params(repo, embedder="none")
    read: list[str] = []
    real = index_op._phrases
    monkeypatch.setattr(index_op, "_phrases", lambda d, *a: read.append(d.item.id) or real(d, *a))
    run_index(Repo.at(repo))
    assert len(read) == 2
    path = repo / ".arkai" / "index-cache" / PHRASE_TABLE
    assert read_checked(path) is not None

    def again(expect: int, **kw: Any) -> None:
        read.clear()
        (repo / "index" / "topics.json").unlink()  # the topic step runs
        run_index(Repo.at(repo), **kw)
        assert len(read) == expect
        assert built(repo) == scratch_build(repo, tmp_path / "scratch")

    again(0)
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Varroa counts rise in late summer.\n")
    read.clear()
    run_index(Repo.at(repo))
    assert len(read) == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    again(0)
    good = path.read_bytes()
    path.write_bytes(good[:-3] + bytes([good[-3] ^ 1]) + good[-2:])  # its digest fails
    again(2)
    body = read_checked(path)
    assert body is not None
    head, _, rest = body.partition(b"\n")
    doc = json.loads(head)
    forged = {
        "an id past the phrases": rest[:-4] + (doc["phrases"] + 5).to_bytes(4, "little"),
        "a negative id": rest[:-4] + (-1).to_bytes(4, "little", signed=True),
        "ids that do not add up": rest[:-4],
    }
    for why, tail in forged.items():
        write_checked(path, head + b"\n" + tail)
        read.clear()
        (repo / "index" / "topics.json").unlink()
        run_index(Repo.at(repo))
        assert len(read) == 2, why
        assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    heads = {
        "a phrase count that is not the list's": {**doc, "phrases": doc["phrases"] + 1},
        "phrase bytes past a line's end": {**doc, "phrase_bytes": doc["phrase_bytes"] - 1},
        "phrase bytes past the body": {**doc, "phrase_bytes": len(rest) + 4},
        "an item's count that is not its ids'": {
            **doc, "items": [[*doc["items"][0][:2], doc["items"][0][2] + 1], *doc["items"][1:]]},
    }  # fmt: skip
    for why, forged_head in heads.items():
        write_checked(path, json.dumps(forged_head).encode() + b"\n" + rest)
        read.clear()
        (repo / "index" / "topics.json").unlink()
        run_index(Repo.at(repo))
        assert len(read) == 2, why
        assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    again(2, full=True)
    again(0)


def test_a_phrase_table_drops_phrases_no_item_has(tmp_path: Path) -> None:
    """Phrases of items that are gone stay in the kept list until they are a quarter of it,
    then go (ids renumbered); frequencies are always those of the items' own phrases."""
    from collections import Counter
    from types import SimpleNamespace

    from arkai.ops.index import _PhraseTable

    def item(cid: str, phrases: list[str]) -> Any:
        return SimpleNamespace(item=SimpleNamespace(id=cid), key=f"k-{cid}", phrases=phrases)

    common = [f"common {n}" for n in range(50)]
    items = [item("a", common + [f"only a {n}" for n in range(3000)]),
             item("b", [*common[:10], "shared"]), item("c", ["shared", *common[5:20]])]  # fmt: skip
    path = tmp_path / "table.bin"

    def check(table: _PhraseTable, present: list[Any]) -> None:
        df = Counter(p for it in present for p in it.phrases)
        for i, it in enumerate(present):
            got = np.frombuffer(table.frequencies(i), dtype=np.int64).tolist()
            assert got == [df[p] for p in it.phrases]
        assert dict(table.df()) == dict(df)
        assert table.df()["never said"] == 0 and "never said" not in table.df()
        assert all(p in table.df() for p in df)

    full = _PhraseTable.build(items, lambda d: d.phrases, path, False)
    check(full, items)
    assert len(full.phrases) == 3051
    later = items[1:]
    # Kept ones read back, nothing asked of the items.
    kept = _PhraseTable.build(later, lambda d: pytest.fail("read"), path, False)
    check(kept, later)
    assert len(kept.phrases) == 21  # the 3,030 only item a had dropped
    new = [*later, item("d", ["fresh", "shared"])]
    check(_PhraseTable.build(new, lambda d: d.phrases, path, False), new)
    assert (
        _PhraseTable.build(new, lambda d: pytest.fail("read"), path, False).phrases[-1] == "fresh"
    )


def test_a_kept_phrase_table_is_read_an_item_at_a_time(tmp_path: Path) -> None:
    """The kept table's ids are not held: the file is checked a block at a time and an item's
    ids are read when its frequencies are asked for — building from it (one item changed),
    asking every item's frequencies and writing it again peak far under the ids' bytes (the
    table held them, and a copy while it was read and written: 3.2 million at 10,000 items).
    A table cut short after it was read is an error naming what is missing."""
    import tracemalloc
    from collections import Counter
    from types import SimpleNamespace

    from arkai.ops import index as ix
    from arkai.ops.index import _PhraseTable

    def item(cid: str, phrases: list[str]) -> Any:
        return SimpleNamespace(item=SimpleNamespace(id=cid), key=f"k-{cid}", phrases=phrases)

    vocab = [f"phrase {n}" for n in range(5000)]
    items = [item(f"i{n:03d}", [vocab[(n * 37 + k * 11) % 5000] for k in range(2000)])
             for n in range(1000)]  # fmt: skip
    for it in items:
        it.phrases = list(dict.fromkeys(it.phrases))  # an item's phrases are distinct
    path = tmp_path / "table.bin"
    _PhraseTable.build(items, lambda d: d.phrases, path, False).close()
    n_ids = sum(len(it.phrases) for it in items)
    changed = [*items[:150], item("new", ["phrase 1", "fresh"]), *items[151:]]
    df = Counter(p for it in changed for p in it.phrases)
    want = [hashlib.sha256(np.asarray([df[p] for p in it.phrases], "=i8").tobytes()).digest()
            for it in changed]  # fmt: skip
    old_block = ix._PHRASE_BLOCK
    ix._PHRASE_BLOCK = 4096  # (the file is checked in blocks this size: 16 KB)
    tracemalloc.start()
    try:
        table = _PhraseTable.build(changed, lambda d: d.phrases, path, False)
        got = [hashlib.sha256(table.frequencies(i)).digest() for i in range(len(changed))]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        ix._PHRASE_BLOCK = old_block
    assert got == want
    assert peak < n_ids, (peak, 4 * n_ids)  # a quarter of the ids' bytes
    path.write_bytes(path.read_bytes()[:-400])  # (the same file: cut in place)
    with pytest.raises(OSError, match="phrase ids"):
        table.frequencies(len(changed) - 1)
    table.close()


def test_a_damaged_cache_entry_is_rebuilt_not_used(repo: Path) -> None:
    from arkai.adapters.itemcache import CACHE_DIR, write_checked
    from arkai.core import canonjson
    from arkai.ops.index import run_index

    set_params(repo, embedder="none")
    run_index(Repo.at(repo))
    before = built(repo)
    from arkai.ops.index import RECORDS

    cache = repo / CACHE_DIR
    records = cache / f"{RECORDS}.tsv"
    terms = sorted(cache.rglob("*.terms.json"))
    head, *rows = records.read_text().split("\n")
    assert len(rows) == 3 and rows[-1] == "" and len(terms) == 2
    assert not list(cache.rglob("*.main.json"))  # the records are in the table only
    # A readable row whose data was altered (its claim count): its digest no longer matches.
    assert '"claims":' in rows[0]
    rows[0] = rows[0].replace('"claims":', '"claims":1', 1)
    records.write_text("\n".join([head, *rows]))
    # A truncated one, and one made from other inputs (a stale key, digest intact).
    terms[1].write_bytes(terms[1].read_bytes()[:100])
    # The CITES counts' file (not an item entry: arkai.search.citecache) with an item's entry
    # made from other inputs (a stale key), the file otherwise intact: that item is searched
    # again.
    cites = cache / "cites.json"
    doc = json.loads(cites.read_bytes().split(b"\n", 1)[1])
    assert len(doc["items"]) == 2
    next(iter(doc["items"].values()))["key"] = "sha256:" + "0" * 64
    write_checked(cites, canonjson.dumps_line(doc).encode("utf-8"))  # a header that matches

    # Without the manifest the stage cannot trust its outputs: every record is read again —
    # but a `terms` record only when its item must be ranked again: here, with its cached
    # ranking gone.
    from arkai.ops.index import RANKINGS

    table = cache / f"{RANKINGS}.tsv"
    item = terms[1].name.split(".")[0]
    table.write_bytes(b"".join(line for line in table.read_bytes().splitlines(keepends=True)
                               if f"\t{item}\t".encode() not in line))  # fmt: skip
    (repo / "index" / "manifest.json").unlink()
    again = run_index(Repo.at(repo))
    assert again.cache_rejected == 2 and again.cache_hits == 1
    assert step(repo, "graph")["cites_searched"] == 1
    assert built(repo) == before and again.written == ["lexical"]  # rebuilt, same bytes
    # …and the entries were written again, whole: the next run uses them all.
    assert run_index(Repo.at(repo)).cache_hits == 2
    assert run_index(Repo.at(repo), full=True).cache_hits == 0  # --full trusts no record
    assert topics_step(repo)["reranked"] == 2  # …nor a cached ranking

    # A damaged `lines` entry (an item's chunk lines, stored unparsed) is rebuilt too:
    # index/chunks/ keeps a fresh build's bytes.
    lines = sorted(cache.rglob("*.lines.json"))
    assert len(lines) == 2
    header, body = lines[1].read_text().split("\n", 1)
    lines[1].write_text(header + "\n" + body.replace('"text":"', '"text":"tampered ', 1))
    # …and so is a truncated `tokens` entry (an item's BM25 segment), when it is read: with
    # the kept BM25 frequencies gone (they hold every unchanged item's segment).
    from arkai.ops.index import LEXICAL_COUNTS

    tokens = sorted(cache.rglob("*.tokens.json"))
    assert len(tokens) == 2
    tokens[0].write_bytes(tokens[0].read_bytes()[:-4])
    (cache / LEXICAL_COUNTS).unlink()
    (repo / "index" / "manifest.json").unlink()
    again = run_index(Repo.at(repo))
    # index/chunks/ still has the digest recorded for these items' keys: no line is read.
    assert again.cache_rejected == 1 and b"tampered" in lines[1].read_bytes()
    assert built(repo) == before and again.written == ["lexical"]
    shutil.rmtree(repo / "index" / "chunks")
    again = run_index(Repo.at(repo))
    assert again.cache_rejected == 1 and b"tampered" not in lines[1].read_bytes()
    assert built(repo) == before and again.written == ["chunks/"]


def test_entries_of_parts_now_kept_in_tables_are_pruned(repo: Path) -> None:
    """Each item's ``main`` record and ``related`` list were one file each before they were
    kept in tables: such files left by an older version are removed, never read."""
    from arkai.adapters.itemcache import CACHE_DIR, ItemCache
    from arkai.ops.index import RECORDS, run_index

    set_params(repo, embedder="none")
    run_index(Repo.at(repo))
    before = built(repo)
    cache = ItemCache(repo)
    ids = [json.loads(p.read_bytes())["id"] for p in sorted(repo.glob("library/*/*/metadata.json"))]
    assert len(ids) == 2
    for cid in ids:
        for part in ("main", "related"):
            cache.put(cid, "sha256:old", part, {"left": "by an older version"})
    (repo / "index" / "manifest.json").unlink()
    again = run_index(Repo.at(repo))
    assert again.cache_hits == 2 and built(repo) == before
    left = sorted(p.name for p in (repo / CACHE_DIR).rglob("*.json") if ".main." in p.name
                  or ".related." in p.name)  # fmt: skip
    assert left == []
    assert (repo / CACHE_DIR / f"{RECORDS}.tsv").is_file()
    assert (repo / CACHE_DIR / "related.tsv").is_file()


def test_file_digests_are_remembered_by_size_mtime_and_inode(tmp_path: Path) -> None:
    """The manifest's digests: a file whose size, mtime and inode are those recorded (and
    settled before the record) is not read again; any other file is hashed."""
    import os

    from arkai.adapters.itemcache import FileDigests

    out = tmp_path / "index"
    (out / "lexical").mkdir(parents=True)
    a, b = out / "chunks.jsonl", out / "lexical" / "bm25.json"
    a.write_bytes(b"one\n")
    b.write_bytes(b"{}")
    old = 1_600_000_000_000_000_000
    for p in (a, b):
        os.utime(p, ns=(old, old))
    memo = tmp_path / "digests.json"
    first = FileDigests(memo)
    recorded = first.scan(out)
    assert recorded == {
        "chunks.jsonl": "sha256:" + hashlib.sha256(b"one\n").hexdigest(),
        "lexical/bm25.json": "sha256:" + hashlib.sha256(b"{}").hexdigest(),
    }
    first.save()
    # Edited in place with its size and mtime put back: the remembered digest is used…
    with a.open("r+b") as fh:
        fh.write(b"two\n")
    os.utime(a, ns=(old, old))
    assert FileDigests(memo).scan(out) == recorded
    # …but a file edited by hand (new mtime) or replaced (new inode) is read again.
    b.write_bytes(b"[]")
    c = out / "new.json"
    c.write_bytes(b"two\n")
    os.utime(c, ns=(old, old))
    c.replace(a)
    again = FileDigests(memo).scan(out)
    assert again["lexical/bm25.json"] == "sha256:" + hashlib.sha256(b"[]").hexdigest()
    assert again["chunks.jsonl"] == "sha256:" + hashlib.sha256(b"two\n").hexdigest()
    # A file that was fresh when the digests were recorded is never trusted from them.
    fresh = FileDigests(memo)
    fresh.scan(out)
    fresh.save()
    with b.open("r+b") as fh:
        fh.write(b"{}")
    assert (
        FileDigests(memo).scan(out)["lexical/bm25.json"].endswith(hashlib.sha256(b"{}").hexdigest())
    )


def test_unchanged_items_are_not_read_again(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item whose files keep their size, mtime and inode is not read (its inputs key is
    remembered by those); an edited one is, and the result is a fresh build's."""
    import os

    import arkai.ops.index as index_op

    set_params(repo, embedder="none")
    old = 1_600_000_000_000_000_000
    for p in repo.rglob("*"):
        if p.is_file():
            os.utime(p, ns=(old, old))
    index_op.run_index(Repo.at(repo))
    reads: list[Path] = []
    real = index_op.read_repo_file

    def counting(path: Path, root: Path, *, missing_ok: bool = False) -> bytes | None:
        reads.append(path)
        return real(path, root, missing_ok=missing_ok)

    monkeypatch.setattr(index_op, "read_repo_file", counting)
    noop = index_op.run_index(Repo.at(repo))
    assert noop.cache_hits == 2 and noop.written == [] and reads == []
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Varroa counts rise in late summer.\n")
    changed = index_op.run_index(Repo.at(repo))
    assert changed.cache_hits == 1 and "chunks/" in changed.written
    assert transcript in reads and all(
        p.parent == transcript.parent for p in reads if p.name == "transcript.md"
    )
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def test_chunks_file_is_spliced_from_the_last_one(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One changed item: its part of index/chunks/ keeps the other items' lines from the old
    part (their cached lines are not read) and equals a fresh build's; a damaged or forged
    layout (where each item's lines are) is not trusted."""

    import arkai.ops.index as index_op
    from arkai.core import canonjson

    set_params(repo, embedder="none")
    index_op.run_index(Repo.at(repo))
    layout = repo / ".arkai" / "index-cache" / index_op.LAYOUT
    assert layout.is_file()
    read = count_chunk_reads(monkeypatch)
    transcripts = sorted((repo / "library").rglob("transcript.md"))
    assert len(transcripts) == 2

    def edit(n: int, line: bytes) -> str:
        transcripts[n].write_bytes(transcripts[n].read_bytes() + line)
        return str(json.loads((transcripts[n].parent / "metadata.json").read_text())["id"])

    # The topics step reads only the changed item's phrases (the phrase table the last run
    # kept has the others'), once: document frequencies and ranking context from one read.
    phrases: list[str] = []
    real_phrases = index_op._phrases

    def counting_phrases(d: Any, *args: Any) -> list[str]:
        phrases.append(d.item.id)
        return real_phrases(d, *args)

    monkeypatch.setattr(index_op, "_phrases", counting_phrases)
    # …and lists the library once (the shard step gets the items the stage listed).
    from arkai.adapters import layout as layout_mod

    listed: list[Path] = []
    real_metadata = layout_mod.load_metadata

    def counting_metadata(folder: Path, root: Path | None = None) -> dict[str, Any]:
        listed.append(folder)
        return real_metadata(folder, root)

    monkeypatch.setattr(layout_mod, "load_metadata", counting_metadata)
    changed = edit(1, b"Varroa counts rise in late summer.\n")
    assert "chunks/" in index_op.run_index(Repo.at(repo)).written
    assert read == [changed]
    assert phrases == [changed]
    assert len(listed) == len(set(listed)) == 2
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")

    # A forged layout (two items' lengths swapped, its own digest made to match): the spans
    # do not hold those items' lines, so nothing is spliced; the file is a fresh build's.
    _header, body = layout.read_bytes().split(b"\n", 1)
    doc = json.loads(body)
    assert len(doc["parts"]) == 1  # both items in one part
    members = doc["parts"][0][2]
    members[0][2], members[1][2] = members[1][2], members[0][2]
    assert members[0][2] != members[1][2]
    body = canonjson.dumps_line(doc).encode()
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    layout.write_bytes(canonjson.dumps_line({"digest": digest}).encode() + body)
    read.clear()
    edit(0, b"Registers are allocated late.\n")
    index_op.run_index(Repo.at(repo))
    assert set(read) == {d["id"] for d in catalog(repo)}  # every item's lines read
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # One naming a part outside the folder is not used either.
    _header, body = layout.read_bytes().split(b"\n", 1)
    doc = json.loads(body)
    doc["parts"][0][0] = "../" + doc["parts"][0][0]
    body = canonjson.dumps_line(doc).encode()
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    layout.write_bytes(canonjson.dumps_line({"digest": digest}).encode() + body)
    assert index_op._Layout.load(layout) is None
    # A damaged one (its digest no longer matches) is not used either.
    layout.write_bytes(layout.read_bytes().replace(b'"parts":[[', b'"parts":[["x",', 1))
    read.clear()
    edit(1, b"Queens are marked in spring.\n")
    index_op.run_index(Repo.at(repo))
    assert len(read) == 2
    # …and the next change splices again, from the layout that run wrote.
    read.clear()
    changed = edit(0, b"Drones leave in autumn.\n")
    index_op.run_index(Repo.at(repo))
    assert read == [changed]
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def catalog(root: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((root / "index/catalog.json").read_text())["items"]
    return items


def test_chunk_keys_and_texts_are_read_without_parsing_every_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors step's keys come from the chunk lines by pattern: a text or an ID that
    holds the pattern's characters does not fool it; each distinct key is kept once, as its id,
    with its first line's offset, from which that line alone is read back; a line without a
    key is an error."""
    from arkai.core import canonjson
    from arkai.errors import LibraryError
    from arkai.ops.index import chunk_lines, chunk_scan
    from arkai.search.vectors import key_ids

    digest = "sha256:" + "ab" * 32
    rows = [
        {"content_id": 'a"key":"x', "key": "sha256:1", "text": 'says "key":"sha256:9" twice'},
        {"content_id": "b", "key": digest, "text": '\\"key\\":"\n'},
        {"content_id": "b", "key": "sha256:1", "text": 'says "key":"sha256:9" twice'},
        {"content_id": "c", "key": "sha256:3", "text": "third"},
    ]
    from arkai.adapters.chunkparts import ChunkParts, write_listing, write_part

    def parts(text: str, cut: int) -> ChunkParts:
        """``text``'s lines in two parts, the first of ``cut`` lines."""
        folder = tmp_path / "index" / "chunks"
        lines = text.encode().splitlines(keepends=True)
        made = [write_part(folder, lambda fh, ls=ls: fh.write(b"".join(ls)))
                for ls in (lines[:cut], lines[cut:])]  # fmt: skip
        write_listing(folder, made)
        listing = ChunkParts.load(folder)
        assert listing is not None and len(listing.parts) == 2
        return listing

    listing = parts(canonjson.dumps_lines(rows), 2)
    scan = chunk_scan(listing)
    assert len(scan) == 3
    assert scan.ids.tobytes() == key_ids(["sha256:1", digest, "sha256:3"]).tobytes()
    assert key_ids([digest]).tobytes() == bytes.fromhex("ab" * 32)  # a digest key's own bytes
    lines = canonjson.dumps_lines(rows).encode().splitlines(keepends=True)
    assert scan.offsets.tolist() == [0, len(lines[0]), sum(map(len, lines[:3]))]
    # Read back across the parts' boundary (the second offset is in the first part).
    assert chunk_lines(listing, scan.offsets[[2, 1]]) == [("sha256:3", "third"),
                                                          (digest, rows[1]["text"])]  # fmt: skip
    with pytest.raises(LibraryError, match="no chunk at byte 5"):
        chunk_lines(listing, [5])
    listing = parts(canonjson.dumps_lines(rows) + '{"text":"no key"}\n', 3)
    with pytest.raises(LibraryError, match=f"{listing.parts[1].name}: line 2 has no chunk key"):
        chunk_scan(listing)

    # Kept per part under its name: a second scan reads no part; a damaged record, or a
    # sealed one that does not add up, is not used; parts gone leave the record.
    from arkai.adapters.itemcache import read_checked, write_checked

    listing = parts(canonjson.dumps_lines(rows), 2)
    keys = tmp_path / "part-keys.bin"
    first = chunk_scan(listing, keys)
    head = json.loads((read_checked(keys) or b"").split(b"\n", 1)[0])
    assert [n for n, _ in head["parts"]] == [p.name for p in listing.parts]
    read = count_part_reads(monkeypatch)
    again = chunk_scan(listing, keys)
    assert read == [] and again.ids.tobytes() == first.ids.tobytes()
    assert again.offsets.tolist() == first.offsets.tolist()
    keys.write_bytes(keys.read_bytes()[:-1] + b"x")  # damaged: its seal no longer holds
    assert chunk_scan(listing, keys).ids.tobytes() == first.ids.tobytes()
    assert sorted(read) == sorted(p.name for p in listing.parts)
    read.clear()
    write_checked(keys, b'{"parts":[["' + listing.parts[0].name.encode() + b'",9]]}\nshort')
    assert chunk_scan(listing, keys).offsets.tolist() == first.offsets.tolist()
    assert sorted(read) == sorted(p.name for p in listing.parts)
    # One part replaced: only it is read; the record keeps the listed parts only.
    read.clear()
    listing = parts(canonjson.dumps_lines(rows[:2] + rows[3:]), 2)
    chunk_scan(listing, keys)
    assert read == [listing.parts[1].name]
    head = json.loads((read_checked(keys) or b"").split(b"\n", 1)[0])
    assert [n for n, _ in head["parts"]] == [p.name for p in listing.parts]


def test_a_changed_item_writes_its_part_only(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index/chunks/ in parts: a changed item's part is the one file written again (the
    other keeps its inode and mtime, so DVC caches one part); a part edited by hand (the same
    size), a link in its place, a stray file and the one-file chunks.jsonl of earlier
    versions are all found and put right; a run stopped while writing the parts leaves the
    last listing readable; every result is a fresh build's, byte for byte."""
    import arkai.adapters.chunkparts as chunkparts
    import arkai.ops.index as index_op
    from arkai.adapters.chunkparts import LISTING, ChunkParts
    from arkai.ops.search import load_index

    monkeypatch.setattr(chunkparts, "PART_ITEMS", 1)  # every item a part of its own
    set_params(repo, embedder="none")
    folder = repo / "index" / "chunks"
    (repo / "index").mkdir(exist_ok=True)
    (repo / "index" / "chunks.jsonl").write_bytes(b"{}\n")  # an older version's file
    index_op.run_index(Repo.at(repo))
    assert not (repo / "index" / "chunks.jsonl").exists()
    listing = ChunkParts.load(folder)
    assert listing is not None and len(listing.parts) == 2
    stats = {p.name: os.stat(folder / p.name) for p in listing.parts}
    transcripts = sorted((repo / "library").rglob("transcript.md"))
    transcripts[1].write_bytes(transcripts[1].read_bytes() + b"Varroa counts rise in June.\n")
    assert "chunks/" in index_op.run_index(Repo.at(repo)).written
    after = ChunkParts.load(folder)
    assert after is not None
    kept = [p for p in after.parts if p.name in stats]
    assert len(kept) == 1 and len(set(os.listdir(folder)) - set(stats) - {LISTING}) == 1
    st = os.stat(folder / kept[0].name)
    assert (st.st_ino, st.st_mtime_ns) == (stats[kept[0].name].st_ino,
                                           stats[kept[0].name].st_mtime_ns)  # fmt: skip
    fresh = scratch_build(repo, tmp_path / "scratch")
    assert built(repo) == fresh

    # Edited by hand, the same size: its digest no longer its name's, so it is written again.
    part = folder / after.parts[0].name
    data = part.read_bytes()
    part.write_bytes(data.replace(b"a", b"e", 1))
    assert len(part.read_bytes()) == len(data) and part.read_bytes() != data
    (repo / "index" / "manifest.json").unlink()
    index_op.run_index(Repo.at(repo))
    assert built(repo) == fresh
    # A link in a part's place (to a file outside the repo, which is left as it is).
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"not chunks\n")
    part.unlink()
    part.symlink_to(outside)
    (folder / "stray.jsonl").write_bytes(b"{}\n")
    (repo / "index" / "manifest.json").unlink()
    index_op.run_index(Repo.at(repo))
    assert not part.is_symlink() and outside.read_bytes() == b"not chunks\n"
    assert built(repo) == fresh

    # The folder itself a link to one outside the repo: the link is removed, nothing there is
    # written or removed, and the parts are written again in a folder of their own.
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(folder, elsewhere)
    (elsewhere / "keep.txt").write_text("theirs")
    before_elsewhere = sorted(os.listdir(elsewhere))
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere, target_is_directory=True)
    (repo / "index" / "manifest.json").unlink()
    index_op.run_index(Repo.at(repo))
    assert folder.is_dir() and not folder.is_symlink()
    assert sorted(os.listdir(elsewhere)) == before_elsewhere
    assert built(repo) == fresh

    # Stopped while writing the parts (after the first): the listing is the last run's and
    # every part it names is there, so search reads what it read before.
    before = [c.text for c in load_index(repo).chunks]
    real = index_op.write_part
    calls: list[int] = []

    def stopping(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(index_op, "write_part", stopping)
    for n in (0, 1):
        transcripts[n].write_bytes(transcripts[n].read_bytes() + b"Drones leave in autumn.\n")
    with pytest.raises(KeyboardInterrupt):
        index_op.run_index(Repo.at(repo))
    assert [c.text for c in load_index(repo).chunks] == before
    monkeypatch.setattr(index_op, "write_part", real)
    index_op.run_index(Repo.at(repo))
    assert "Drones leave in autumn." in chunk_text(repo / "index")
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def test_graph_exports_follow_params_and_the_flag(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index/graph.json and graph.graphml: written while `index.graph.exports` asks (true,
    false, or auto: up to AUTO_EXPORT_ITEMS items), or on `arkai reindex --graph-exports`;
    a run that does not write them removes any there (a stale export is never left), and
    the manifest lists them only when written (what `arkai doctor` compares)."""
    import arkai.ops.index as index_op
    from arkai.errors import LibraryError

    def exports(value: Any) -> None:
        graph = yaml.safe_load((repo / "params.yaml").read_text())["index"]["graph"]
        set_params(repo, graph={**graph, "exports": value})

    set_params(repo, embedder="none")
    exports(True)
    index_op.run_index(Repo.at(repo))
    out = repo / "index"
    exported = {n: (out / n).read_bytes() for n in index_op.EXPORTS}
    related = (out / "related.jsonl").read_bytes()

    def listed() -> set[str]:
        files = json.loads((out / "manifest.json").read_text())["files"]
        return {n for n in index_op.EXPORTS if n in files}

    assert listed() == set(index_op.EXPORTS)
    exports(False)
    summary = index_op.run_index(Repo.at(repo))
    assert not any((out / n).exists() for n in index_op.EXPORTS)
    assert set(index_op.EXPORTS) <= set(summary.written) and listed() == set()
    assert (out / "related.jsonl").read_bytes() == related
    # On request: the same bytes as when params ask; kept by a run with nothing to do…
    code = main(["--repo", str(repo), "reindex", "--quiet", "--graph-exports"])
    assert code == 0
    assert {n: (out / n).read_bytes() for n in index_op.EXPORTS} == exported
    assert listed() == set(index_op.EXPORTS)
    assert index_op.run_index(Repo.at(repo)).written == []
    assert all((out / n).is_file() for n in index_op.EXPORTS)
    # …and removed by the next run that changes the library without writing them.
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Queens are marked in spring.\n")
    index_op.run_index(Repo.at(repo))
    assert not any((out / n).exists() for n in index_op.EXPORTS) and listed() == set()
    # auto: while the library holds at most AUTO_EXPORT_ITEMS items (here 2).
    exports("auto")
    monkeypatch.setattr(index_op, "AUTO_EXPORT_ITEMS", 1)
    index_op.run_index(Repo.at(repo))
    assert not any((out / n).exists() for n in index_op.EXPORTS)
    monkeypatch.setattr(index_op, "AUTO_EXPORT_ITEMS", 2)
    index_op.run_index(Repo.at(repo))
    assert all((out / n).is_file() for n in index_op.EXPORTS)
    # A link planted in an export's place is removed, never followed.
    monkeypatch.setattr(index_op, "AUTO_EXPORT_ITEMS", 1)
    outside = repo.parent / "outside.json"
    outside.write_text("{}")
    (out / index_op.GRAPH_JSON).unlink()
    (out / index_op.GRAPH_JSON).symlink_to(outside)
    index_op.run_index(Repo.at(repo))
    assert not (out / index_op.GRAPH_JSON).is_symlink() and outside.read_text() == "{}"
    exports("sometimes")
    with pytest.raises(LibraryError, match=r"`index\.graph\.exports` must be true, false or auto"):
        index_op.run_index(Repo.at(repo))


@pytest.mark.parametrize("bits", [0, 1])
def test_rounded_frequencies_rank_again_only_where_a_rounded_count_moved(
    repo: Path, tmp_path: Path, bits: int
) -> None:
    """Issue 17: an edit that gives one item a phrase two others have moves that phrase's
    document frequency from 2 to 3. Exact counts (``frequency_bits: 0``) rank the two others
    again; rounded to one significant bit both counts are 2, and only the edited item is
    ranked again. Either way the index is a build from scratch's."""
    from arkai.ops.index import run_index
    from arkai.search.topics import phrases

    code = main(["--repo", str(repo), "add", "--quiet", str(SAMPLES / "compilers-podcast.srt")])
    assert code == 0
    set_params(repo, embedder="none", topics={"frequency_bits": bits})
    run_index(Repo.at(repo))
    texts = {p: set(phrases(p.read_text(encoding="utf-8")))
             for p in sorted((repo / "library").rglob("transcript.md"))}  # fmt: skip
    shared = None
    for edited, mine in texts.items():
        others = [words for p, words in texts.items() if p != edited]
        found = sorted(w for w in others[0] & others[1] - mine if " " not in w and len(w) > 4)
        if found:
            shared = edited, found[0]
            break
    assert shared is not None, "no word two sample items share and the third lacks"
    edited, word = shared
    edited.write_bytes(edited.read_bytes() + f"\n{word.capitalize()}.\n".encode())
    run_index(Repo.at(repo))
    assert topics_step(repo)["reranked"] == (3 if bits == 0 else 1)
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


@pytest.mark.parametrize("bad", [-1, 63, "five"])
def test_a_bad_frequency_bits_is_an_error_naming_params(repo: Path, bad: object) -> None:
    from arkai.ops.index import run_index

    set_params(repo, embedder="none", topics={"frequency_bits": bad})
    with pytest.raises(LibraryError, match=r"params\.yaml: index\.topics: .*"):
        run_index(Repo.at(repo))
    assert not (repo / "index" / "topics.json").exists()


# -- the stage: its items listed from the manifests the stages before it wrote (issue 17) -----


def stage_index(root: Path, *, manifests: bool = True) -> Any:
    """The ``index`` stage as ``dvc repro`` runs it, after the extract and condense stages wrote
    the manifests of library/, extracted/ and condensed/ (``manifests``)."""
    from arkai.ops.index import STAGE, STAGE_FOLDERS, run_index

    return as_stage(root, STAGE_FOLDERS, lambda: run_index(Repo.at(root, stage=STAGE)),
                    manifests=manifests)  # fmt: skip


def from_seal(root: Path) -> int:
    """How many items the last index run took as the stage's last complete run sealed them."""
    return int(step(root, "chunks")["listed_from_seal"])


def test_the_stage_reads_only_the_changed_item_folders_and_equals_a_build_from_scratch(
    repo: Path, tmp_path: Path
) -> None:
    set_params(repo, embedder="none")  # (incremental vector segments differ from a fresh set)
    stage_index(repo)
    assert from_seal(repo) == 0  # no complete run yet: every folder read
    stage_index(repo)
    assert from_seal(repo) == 2
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Varroa counts rise in late summer.\n")
    changed = stage_index(repo)
    assert from_seal(repo) == 1 and changed.cache_hits == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # The metadata the catalog shows, changed: read from the folder, not the seal.
    meta_file = next(p for p in (repo / "library").rglob("metadata.json") if "note" in str(p))
    meta = json.loads(meta_file.read_text())
    meta["title"] = "Renamed note"
    meta_file.write_text(json.dumps(meta))
    stage_index(repo)
    assert from_seal(repo) == 1
    titles = {
        e["title"] for e in json.loads((repo / "index" / "catalog.json").read_text())["items"]
    }
    assert "Renamed note" in titles
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # A folder moved with its mirrors (every file the same): listed at its new path.
    folder = meta_file.parent
    rel = folder.relative_to(repo / "library")
    for tree in ("library", "extracted", "condensed"):
        if (repo / tree / rel).exists():
            (repo / tree / rel).rename((repo / tree / rel).with_name(folder.name + " moved"))
    stage_index(repo)
    assert from_seal(repo) == 1
    paths = {e["path"] for e in json.loads((repo / "index" / "catalog.json").read_text())["items"]}
    assert f"library/{rel.parent.as_posix()}/{folder.name} moved" in paths
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")
    # An item removed: gone from the index, nothing else read.
    talk = next((repo / "library").glob("*/Beekeeping*"))
    shutil.rmtree(talk)
    shutil.rmtree(repo / "extracted" / talk.relative_to(repo / "library"))
    gone = stage_index(repo)
    assert from_seal(repo) == 1 and gone.items == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def test_an_edit_after_the_manifests_were_written_is_seen_by_the_next_run(
    repo: Path, tmp_path: Path
) -> None:
    """The trust boundary: the manifests are the stage's DVC dependencies, written by the
    stages before it in the same ``dvc repro``. A file edited after they were written is not
    seen by that run (its item is as sealed); the next run's manifests hold the edit."""
    set_params(repo, embedder="none")
    stage_index(repo)
    before = built(repo)
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Drones gather at the congregation area.\n")
    stage_index(repo, manifests=False)
    assert from_seal(repo) == 2 and built(repo) == before
    stage_index(repo)
    assert from_seal(repo) == 1
    assert built(repo) == scratch_build(repo, tmp_path / "scratch") != before


def test_a_damaged_or_forged_seal_makes_the_stage_read_every_folder(
    repo: Path, tmp_path: Path
) -> None:
    """A seal whose result fails its digest, or one re-sealed in another version, is not
    taken: every folder is read. One forged to the byte for the current manifests (another
    title sealed for an item) fools only the stage's own listing: ``arkai index`` reads every
    folder, and any change to that item's files reads it again."""
    from arkai.adapters import manifest
    from arkai.ops.index import STAGE

    set_params(repo, embedder="none")
    stage_index(repo)
    result = repo / manifest.CACHE_DIR / f"{STAGE}.done.result"
    seal = repo / manifest.CACHE_DIR / f"{STAGE}.done.json"
    good, good_seal = result.read_bytes(), seal.read_bytes()
    result.write_bytes(good.replace(b'"version":1', b'"version":1 '))
    stage_index(repo)
    assert from_seal(repo) == 0  # the digest: not taken
    result.write_bytes(good)
    seal.write_bytes(good_seal)

    def reseal(doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        result.write_bytes(data)
        record = json.loads(seal.read_bytes())
        record["result"] = hashlib.sha256(data).hexdigest()
        seal.write_bytes(json.dumps(record).encode())

    doc = json.loads(good)
    reseal({**doc, "version": 99})
    stage_index(repo)
    assert from_seal(repo) == 0
    stage_index(repo)  # sealed afresh by the run that read everything
    assert from_seal(repo) == 2
    doc = json.loads(result.read_bytes())
    doc["items"][0][2]["title"] = "Forged title"
    reseal(doc)
    stage_index(repo)
    titles = {
        e["title"] for e in json.loads((repo / "index" / "catalog.json").read_text())["items"]
    }
    assert "Forged title" in titles  # the stage's own listing believed it
    from arkai.ops.index import run_index

    run_index(Repo.at(repo))  # `arkai index`: every folder read
    titles = {
        e["title"] for e in json.loads((repo / "index" / "catalog.json").read_text())["items"]
    }
    assert "Forged title" not in titles
    assert built(repo) == scratch_build(repo, tmp_path / "scratch")


def test_an_unreadable_folder_is_left_out_and_every_folder_read_next_time(
    repo: Path, fake: FakeEmbedder
) -> None:
    """A malformed ``metadata.json``: that item is left out (as ``arkai index`` leaves it), the
    run is not sealed, and the run after it reads every folder again."""
    stage_index(repo)
    meta = next(p for p in (repo / "library").rglob("metadata.json") if "note" in str(p))
    good = meta.read_bytes()
    meta.write_text("{not json")
    broken = stage_index(repo)
    assert broken.items == 1 and from_seal(repo) == 0
    meta.write_bytes(good)
    again = stage_index(repo)
    assert again.items == 2 and from_seal(repo) == 0
    stage_index(repo)
    assert from_seal(repo) == 2


def test_manifests_written_again_while_the_stage_runs_leave_it_unsealed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is sealed with the manifests it planned from, read again when it ends (not
    held through the run): when they changed meanwhile (an edit, and the manifests written
    again, while the stage worked), the run is not sealed and the next one reads every
    folder."""
    import arkai.ops.index as index_op
    from arkai.adapters import manifest

    set_params(repo, embedder="none")
    stage_index(repo)
    stage_index(repo)
    assert from_seal(repo) == 2
    real = index_op._write_chunks

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        transcript = sorted((repo / "library").rglob("transcript.md"))[0]
        transcript.write_bytes(transcript.read_bytes() + b"Swarms leave in late spring.\n")
        manifest.write_all(repo, *index_op.STAGE_FOLDERS)
        return real(*args, **kwargs)

    monkeypatch.setattr(index_op, "_write_chunks", meanwhile)
    stage_index(repo)
    monkeypatch.undo()
    assert from_seal(repo) == 2  # (planned before the edit)
    stage_index(repo, manifests=False)
    assert from_seal(repo) == 0  # not sealed: every folder read


_NOTES = {
    "orchards": "Grafting apple trees in early spring keeps the orchard varieties true. "
    "Cider makers prize bittersweet apples; pruning opens the canopy to sunlight.",
    "sourdough": "A sourdough starter needs flour, water and patience. Hydration above "
    "seventy percent gives an open crumb; a cold proof deepens the flavour of the loaf.",
    "tides": "Spring tides follow the new and full moon. Harbour pilots read tide tables "
    "before bringing container ships through the narrow estuary channel.",
    "glaciers": "Glaciers carve valleys as ice flows downhill. Meltwater lakes form behind "
    "moraines, and calving fronts retreat faster as the ocean warms.",
    "violins": "A luthier carves violin plates from spruce and maple. Varnish recipes were "
    "guarded secrets; the bridge and soundpost shape the instrument's tone.",
    "compost": "Compost heaps need nitrogen from green waste and carbon from dry leaves. "
    "Turning the heap adds oxygen, and worms finish the humus.",
}


def test_topic_lines_no_changed_item_is_in_are_copied_from_the_last_file(
    tmp_path: Path,
) -> None:
    """A library of notes on unrelated subjects: one note edited, its topics' lines are made
    again and every other topic's copied from the last ``topics.json`` — the bytes of a build
    from scratch; after the file was edited by hand, none is copied."""
    from arkai.ops.index import run_index

    root = tmp_path / "kr"
    init_repo(root, git=False)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name, text in _NOTES.items():
        (inbox / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n")
    assert main(["--repo", str(root), "add", "--quiet", *map(str, sorted(inbox.iterdir()))]) == 0
    assert main(["--repo", str(root), "extract", "--quiet"]) == 0
    set_params(root, embedder="none")
    run_index(Repo.at(root))
    note = next(
        p for p in (root / "library").rglob("transcript.md") if "Sourdough" in p.read_text()
    )
    note.write_text(note.read_text() + "\nRye flour ferments faster than wheat flour.\n")
    assert main(["--repo", str(root), "extract", "--quiet"]) == 0
    run_index(Repo.at(root))
    info = topics_step(root)
    assert info["reranked"] >= 1 and info["kept"] >= 1 and info["lines_copied"] >= 1, info
    assert built(root) == scratch_build(root, tmp_path / "scratch")
    topics_file = root / "index" / "topics.json"
    topics_file.write_bytes(topics_file.read_bytes().replace(b'"relevance":"', b'"relevance": "'))
    note.write_text(note.read_text() + "\nA banneton shapes the dough overnight.\n")
    assert main(["--repo", str(root), "extract", "--quiet"]) == 0
    run_index(Repo.at(root))
    info = topics_step(root)
    assert info["kept"] >= 1 and info["lines_copied"] == 0, info
    assert built(root) == scratch_build(root, tmp_path / "scratch")


def index_files(root: Path) -> dict[str, bytes]:
    """Every file under index/, by its path there."""
    index = root / "index"
    return {
        p.relative_to(index).as_posix(): p.read_bytes() for p in index.rglob("*") if p.is_file()
    }


def completed_steps(root: Path) -> dict[str, dict[str, Any]]:
    """The last index run's completed steps and what each said (times and memory aside)."""
    run = events.list_runs(root)[-1]
    evs = events.read_events(root / events.RUNS_DIR / run / "events.jsonl")
    drop = {"timestamp", "run_id", "duration_ms", "maxrss_mb"}
    return {
        e["step"]: {k: v for k, v in e.items() if k not in drop}
        for e in evs
        if e["type"] == "StepCompleted"
    }


def test_side_steps_in_a_forked_process_write_what_they_write_in_the_stage_process(
    repo: Path, tmp_path: Path, fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two CPUs the lexical, vector and shard steps run in a forked child beside the
    topic and graph steps: the same files, the same summary and the same steps' reports as
    when they run in the stage process — built from nothing, then with an item changed."""
    from arkai.ops.index import run_index

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")
    other = tmp_path / "other"
    shutil.copytree(repo, other)

    def both() -> tuple[dict[str, Any], dict[str, Any]]:
        monkeypatch.setenv(beside.ENV, "1")
        calls = len(fake.calls)
        forked = run_index(Repo.at(repo)).to_dict()
        assert len(fake.calls) == calls  # (embedded in the child: nothing seen here)
        monkeypatch.setenv(beside.ENV, "0")
        here = run_index(Repo.at(other)).to_dict()
        return forked, here

    forked, here = both()
    assert forked == here and forked["embedded"] > 0 and forked["shards"] is not None
    assert index_files(repo) == index_files(other)
    assert completed_steps(repo) == completed_steps(other)
    for root in (repo, other):
        transcript = sorted((root / "library").rglob("transcript.md"))[0]
        with transcript.open("a", encoding="utf-8") as fh:
            fh.write("\nA late line about queens and their hives.\n")
    forked, here = both()
    assert forked == here and 0 < forked["embedded"] < here["reused"] + here["embedded"]
    assert "lexical" in forked["written"] and "vectors" in forked["written"]
    assert index_files(repo) == index_files(other)
    assert completed_steps(repo) == completed_steps(other)


def test_the_side_steps_files_are_hashed_beside_and_one_written_after_is_hashed_again(
    repo: Path, fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digests of the lexical, vector and shard files for the manifest are made in the
    forked child, so the stage's process reads none of them after an item changed; a file
    written again after the child hashed it is read again, and the manifest holds the
    digests of the files as they are."""
    from arkai.adapters import itemcache
    from arkai.ops.index import SIDE_FOLDERS, run_index

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")
    run_index(Repo.at(repo))
    index = repo / "index"
    read: list[str] = []
    real = itemcache.file_digest

    def counted(fh: Any) -> str:
        read.append(Path(fh.name).relative_to(index).as_posix())
        return real(fh)

    monkeypatch.setattr(itemcache, "file_digest", counted)
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write("\nA late line about queens and their hives.\n")
    assert {"lexical", "vectors"} <= set(run_index(Repo.at(repo)).written)
    assert read and not [r for r in read if r.startswith(SIDE_FOLDERS)]

    def digests() -> dict[str, str]:
        listed = json.loads((index / "manifest.json").read_text())["files"]
        return {k: v for k, v in listed.items() if k.startswith(SIDE_FOLDERS)}

    assert digests() == {
        p.relative_to(index).as_posix(): "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in SIDE_FOLDERS
        for p in (index / folder).rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }
    # The BM25 parameters written again by hand between the child's hashing and the manifest.
    real_take = itemcache.FileDigests.take

    def take(self: itemcache.FileDigests, entries: dict[str, tuple[str, str]]) -> None:
        meta = index / "lexical" / "bm25.json"
        meta.write_bytes(meta.read_bytes() + b" ")
        real_take(self, entries)

    monkeypatch.setattr(itemcache.FileDigests, "take", take)
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write("\nAnother late line about drones.\n")
    read.clear()
    run_index(Repo.at(repo))
    assert read.count("lexical/bm25.json") == 1
    meta = (index / "lexical" / "bm25.json").read_bytes()
    assert digests()["lexical/bm25.json"] == "sha256:" + hashlib.sha256(meta).hexdigest()


@pytest.mark.parametrize("how", ["raises", "killed"])
def test_a_side_step_that_fails_fails_the_run_and_the_next_run_completes_it(
    repo: Path, tmp_path: Path, fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The lexical step failing in the forked child (an error, or the process killed): the
    stage fails with that error, its run log says so, no manifest is written for the run;
    the next run completes the index as a build from scratch makes it."""
    import signal

    import arkai.search.bm25 as bm25
    from arkai.errors import LibraryError
    from arkai.ops.index import run_index

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")

    def fail(*args: Any, **kwargs: Any) -> None:
        if how == "raises":
            raise LibraryError("lexical: the disk said no", hint="free some space")
        os.kill(os.getpid(), signal.SIGKILL)

    with monkeypatch.context() as m:
        m.setattr(bm25, "write_index", fail)
        expected = (
            pytest.raises(LibraryError, match=r"^lexical: the disk said no \(free some space\)$")
            if how == "raises"
            else pytest.raises(beside.BesideError, match=r"killed by signal 9")
        )
        with expected:
            run_index(Repo.at(repo))
    assert not (repo / "index" / "manifest.json").exists()
    run = events.list_runs(repo)[-1]
    evs = events.read_events(repo / events.RUNS_DIR / run / "events.jsonl")
    assert evs[-1]["type"] == "RunCompleted" and evs[-1]["status"] == "failed"
    if how == "raises":
        assert any(e["type"] == "StepFailed" and e["step"] == "lexical" for e in evs)
    assert run_index(Repo.at(repo)).items == 2
    assert index_files(repo) == index_files(scratch(repo, tmp_path / "scratch"))


def scratch(root: Path, dest: Path) -> Path:
    """A copy of ``root`` with its index built from nothing."""
    from arkai.ops.index import run_index

    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("index", ".arkai"))
    run_index(Repo.at(dest))
    return dest


def stored_rows_by_key(root: Path) -> dict[str, bytes]:
    from arkai.search.vectors import VectorStore

    store = VectorStore.load(root / "index" / "vectors", "minilm-onnx")
    keys = store.keys
    return dict(zip(keys, (row.tobytes() for row in store.get(keys)), strict=True))


@pytest.mark.slow
def test_vectors_grown_run_by_run_are_the_bits_of_a_build_from_scratch(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real model: a chunk's row is what the model gives for its text, not for the texts
    embedded beside it (the int8 graph scales its activations per run), so an index grown run
    by run holds the rows of one built at once, in other batches; and a store made by another
    recipe of the model is embedded again, whole, not mixed with new rows."""
    from arkai.ops.index import run_index
    from arkai.search import embed

    set_params(repo, embedder="minilm-onnx", batch_size=3)
    first = run_index(Repo.at(repo))
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Varroa counts rise in late summer.\n")
    grown = run_index(Repo.at(repo))
    assert 0 < grown.embedded < first.embedded  # the changed chunks, in batches of their own
    rows = stored_rows_by_key(repo)
    scratch = tmp_path / "scratch"
    shutil.copytree(repo, scratch, ignore=shutil.ignore_patterns("index", ".arkai"))
    set_params(scratch, embedder="minilm-onnx", batch_size=64)
    assert run_index(Repo.at(scratch)).embedded == len(rows)
    assert stored_rows_by_key(scratch) == rows
    meta = json.loads((repo / "index" / "vectors" / "meta.json").read_text())
    assert meta["recipe"] == embed.OnnxMiniLMEmbedder.recipe

    # A later arkai exports the model another way: the next run embeds every chunk again.
    monkeypatch.setattr(embed, "recipe_of", lambda _e: "onnx-int8-v999")
    transcript.write_bytes(transcript.read_bytes() + b"Mite counts fall after treatment.\n")
    again = run_index(Repo.at(repo))
    assert again.embedded == len(stored_rows_by_key(repo)) == again.reused + again.embedded
    assert again.reused == 0
    meta = json.loads((repo / "index" / "vectors" / "meta.json").read_text())
    assert meta["recipe"] == "onnx-int8-v999"
    # …and so does a run with no chunk to embed (the recipe read without loading the model).
    monkeypatch.setattr(embed, "recipe_of", lambda _e: "onnx-int8-v1000")
    entry = (repo / "library").rglob("metadata.json").__next__()
    meta_doc = json.loads(entry.read_text())
    meta_doc["tags"] = [*meta_doc.get("tags", []), "recipe-test"]
    entry.write_text(json.dumps(meta_doc))
    third = run_index(Repo.at(repo))
    assert third.embedded == len(stored_rows_by_key(repo)) and third.reused == 0
    assert json.loads((repo / "index" / "vectors" / "meta.json").read_text())["recipe"] == (
        "onnx-int8-v1000"
    )


def _emptied(path: Path) -> None:
    path.write_bytes(b"")


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])


def _flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _as_built(files: dict[str, bytes]) -> dict[str, Any]:
    """index/'s files with the shards by their content: shards made again are numbered on
    (a shard's number is never used twice), so only their names and the manifests' lists of
    them differ from the first build."""
    out: dict[str, Any] = {n: b for n, b in files.items() if not n.startswith("shards/")}
    out["shards"] = sorted(b for n, b in files.items() if n.startswith("shards/shard-"))
    shards = json.loads(files["shards/manifest.json"])
    out["shards/manifest.json"] = [{k: v for k, v in s.items() if k not in ("id", "file")}
                                   for s in shards.pop("shards")]  # fmt: skip
    shards.pop("next_number")
    out["shards/manifest.json"].append(shards)
    manifest = json.loads(files["manifest.json"])
    manifest["files"] = {k: v for k, v in manifest["files"].items()
                         if not k.startswith("shards/")}  # fmt: skip
    out["manifest.json"] = manifest
    return out


@pytest.mark.parametrize("damage", [_emptied, _cut, _flipped])
def test_every_index_file_damaged_is_made_again_by_the_next_run(
    repo: Path, fake: FakeEmbedder, damage: Callable[[Path], None]
) -> None:
    """Each file of index/ the stage writes, damaged (emptied, cut short, a byte altered) with
    nothing else changed: the next run — not ``--full`` — writes it back as it was (shards
    numbered on), and the run after that changes nothing. They stayed damaged: bm25.npz and
    bm25.json (the lexical step skipped when its inputs were the last run's, and once a run had
    seen the damage the manifest listed the damaged files), a byte of a vector segment's rows
    (the store loaded: its keys were right); index/manifest.json and shards/manifest.json
    failed every run."""
    from arkai.ops.index import run_index

    run_index(Repo.at(repo))
    good = index_files(repo)
    ours = sorted(n for n in good if not n.startswith(("beliefs/", "manifests/")))
    assert {"lexical/bm25.npz", "lexical/bm25.json", "topics.json", "catalog.json",
            "related.jsonl", "manifest.json", "shards/manifest.json"} <= set(ours)  # fmt: skip
    assert any(n.startswith("vectors/seg-") for n in ours)
    assert any(n.startswith("chunks/") for n in ours)
    for name in ours:
        damage(repo / "index" / name)
        run_index(Repo.at(repo))
        assert _as_built(index_files(repo)) == _as_built(good), name
        again = index_files(repo)
        run_index(Repo.at(repo))
        assert index_files(repo) == again, name
