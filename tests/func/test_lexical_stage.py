"""The index stage writes the lexical engine (index/lexical/engine*) from
``index.lexical.threshold`` chunks, keeps it, rebuilds it when the chunks change, and removes it
below the threshold; search uses it (arkai.search.lexindex)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from arkai.cli import main
from arkai.ops import Repo
from arkai.search.lexindex import ENGINE_DIR, ENGINE_META, LexicalEngine
from tests.conftest import SAMPLES
from tests.func.test_index_stage import base_repo, set_params

__all__ = ["base_repo"]  # the module-scoped fixture: two extracted sample items


def _repo(base_repo: Path, tmp_path: Path) -> Path:
    root = tmp_path / "kr"
    shutil.copytree(base_repo, root)
    set_params(root, embedder="none", lexical={"threshold": 5})
    return root


def test_engine_built_kept_rebuilt_and_removed(base_repo: Path, tmp_path: Path) -> None:
    from arkai.ops.index import run_index
    from arkai.ops.search import _CACHE, search

    repo = _repo(base_repo, tmp_path)
    summary = run_index(Repo.at(repo))
    lexical = repo / "index" / "lexical"
    assert summary.chunks >= 5
    meta = json.loads((lexical / ENGINE_META).read_text())
    manifest = json.loads((repo / "index" / "manifest.json").read_text())
    assert meta["chunks"] == manifest["lexical"]["chunks"] and meta["n_docs"] == summary.chunks
    assert "lexical/engine.json" in manifest["files"]
    assert any(f.startswith(f"lexical/{ENGINE_DIR}/") for f in manifest["files"])
    assert "lexical" in summary.written

    again = run_index(Repo.at(repo))
    assert again.written == []  # kept: nothing rewritten
    assert json.loads((lexical / ENGINE_META).read_text()) == meta

    _CACHE.clear()
    got = search(Repo.at(repo), "bees hive", k=3, mode="lexical")
    assert got.results and not got.warnings

    # A new item changes the chunk set: the engine is rebuilt for it.
    assert (
        main(["--repo", str(repo), "add", "--quiet", str(SAMPLES / "compilers-podcast.srt")]) == 0
    )
    grown = run_index(Repo.at(repo))
    new_meta = json.loads((lexical / ENGINE_META).read_text())
    assert grown.chunks > summary.chunks and new_meta["n_docs"] == grown.chunks
    assert new_meta["chunks"] != meta["chunks"]
    from arkai.search.bm25 import BM25Index

    LexicalEngine.load(lexical, BM25Index.load(lexical), new_meta["chunks"])

    set_params(repo, embedder="none", lexical={"threshold": 10**6})
    run_index(Repo.at(repo))
    assert not (lexical / ENGINE_META).exists() and not (lexical / ENGINE_DIR).exists()
    assert (lexical / "bm25.npz").is_file()


def test_a_changed_transcript_updates_the_engine_in_place(base_repo: Path, tmp_path: Path) -> None:
    """An edited transcript: the stage replaces that item's documents in the engine (step
    ``lexical``: ``updated``), the engine passes a search process's checks, and search answers
    as with an engine built afresh (``--full``)."""
    from arkai.ops.index import run_index
    from arkai.ops.search import _CACHE, search
    from tests.func.test_index_stage import step

    repo = _repo(base_repo, tmp_path)
    set_params(repo, embedder="none", lexical={"threshold": 5, "rebuild_fraction": 1.0})
    run_index(Repo.at(repo))
    assert step(repo, "lexical")["engine"] == "built"
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    transcript.write_bytes(transcript.read_bytes() + b"Varroa counts rise in late summer.\n")
    summary = run_index(Repo.at(repo))
    assert step(repo, "lexical")["engine"] == summary.lexical_engine == "updated"
    assert "lexical" in summary.written and summary.to_dict()["lexical_engine"] == "updated"
    lexical = repo / "index" / "lexical"
    meta = json.loads((lexical / ENGINE_META).read_text())
    assert meta["churn"] > 0 and meta["n_docs"] == summary.chunks
    manifest = json.loads((repo / "index" / "manifest.json").read_text())
    assert meta["chunks"] == manifest["lexical"]["chunks"]
    assert manifest["files"]["lexical/engine.json"]  # the manifest covers the updated record
    from arkai.search.bm25 import BM25Index

    LexicalEngine.load(lexical, BM25Index.load(lexical), meta["chunks"])
    queries = ("varroa late summer", "bees hive", "mite counts treatment")

    def answers() -> list[Any]:
        _CACHE.clear()
        out = []
        for q in queries:
            got = search(Repo.at(repo), q, k=5, mode="lexical").to_dict()
            assert not got.get("warnings")
            out.append(got["results"])
        return out

    updated = answers()
    assert any(updated)
    run_index(Repo.at(repo), full=True)
    assert step(repo, "lexical")["engine"] == "rebuilt"
    assert json.loads((lexical / ENGINE_META).read_text())["churn"] == 0
    assert answers() == updated
