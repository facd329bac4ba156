"""``arkai doctor``: every state an item can be in, and the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters.layout import iter_items
from arkai.core import canonjson
from tests.conftest import SAMPLES, Runner

pytestmark = pytest.mark.slow  # runs the builtin extraction (spaCy)


def _doctor(arkai: Runner, kr: Path) -> tuple[int, dict[str, Any]]:
    code, out, err = arkai("--repo", kr, "doctor", "--json")
    assert out, err
    return code, json.loads(out)


def test_doctor_reports_each_state(kr: Path, arkai: Runner) -> None:
    talk, note = SAMPLES / "beekeeping-talk.vtt", SAMPLES / "note-2026-11-20.md"
    assert arkai("--repo", kr, "add", "-q", talk, note)[0] == 0
    code, rep = _doctor(arkai, kr)
    assert code == 1 and rep["totals"]["extraction_not_extracted"] == 2
    assert not rep["index_built"] and not rep["site_built"]
    assert all("run `dvc repro`" in i["actions"][0] for i in rep["items"])

    assert arkai("--repo", kr, "extract", "-q")[0] == 0
    code, rep = _doctor(arkai, kr)
    assert code == 0 and rep["healthy"] and rep["totals"]["extraction_ok"] == 2
    code, out, _ = arkai("--repo", kr, "doctor")
    assert code == 0 and "2 items: 2 healthy, 0 need attention" in out

    a, b = sorted(iter_items(kr), key=lambda i: i.title)
    # A catalog without item b, a site with a page for a only.
    (kr / "index").mkdir(exist_ok=True)
    (kr / "index" / "catalog.json").write_text(
        canonjson.dumps({"version": 1, "items": [{"id": a.id}]})
    )
    (kr / "site" / "items" / a.id).mkdir(parents=True)
    (kr / "site" / "index.html").write_text("<html></html>")
    (kr / "site" / "items" / a.id / "index.html").write_text("<html></html>")
    code, rep = _doctor(arkai, kr)
    by_id = {i["content_id"]: i for i in rep["items"]}
    assert code == 1 and by_id[a.id]["healthy"]
    assert by_id[b.id]["indexed"] is False and by_id[b.id]["on_site"] is False
    assert rep["totals"]["not_indexed"] == 1 and rep["totals"]["not_on_site"] == 1

    # A transcript edited under a claim: outdated and stale spans.
    ev = (a.extracted / "evidence.jsonl").read_text().splitlines()
    quote = json.loads(ev[0])["quote"]
    text = a.transcript.read_text()
    a.transcript.write_text(text.replace(quote, quote.upper(), 1))
    # A recorded failure keeps its error.
    record = json.loads((b.extracted / "extraction.json").read_text())
    record.update(status="failed", error="provider timed out after 120 s")
    (b.extracted / "extraction.json").write_text(canonjson.dumps(record))
    code, rep = _doctor(arkai, kr)
    by_id = {i["content_id"]: i for i in rep["items"]}
    assert code == 1
    assert by_id[a.id]["extraction"] == "outdated" and by_id[a.id]["stale_spans"] >= 1
    assert any("reanchor" in x for x in by_id[a.id]["actions"])
    assert by_id[b.id]["extraction"] == "failed"
    assert by_id[b.id]["error"] == "provider timed out after 120 s"
    code, out, _ = arkai("--repo", kr, "doctor")
    assert "provider timed out after 120 s" in out and "1 need attention" not in out


def test_doctor_compares_the_graph_exports_with_the_index_manifest(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    """``index/graph.json`` and ``graph.graphml`` are not DVC outputs (a clone that pulls has
    none, a checkout does not restore them): doctor names one missing, changed or a link in
    its place, without calling the library unhealthy; ``arkai reindex`` writes them again."""
    assert arkai("--repo", kr, "add", "-q", SAMPLES / "beekeeping-talk.vtt")[0] == 0
    assert arkai("--repo", kr, "extract", "-q")[0] == 0
    assert _doctor(arkai, kr)[1]["graph_exports"] == []  # no index yet: nothing to compare
    assert arkai("--repo", kr, "reindex", "-q")[0] == 0
    index = kr / "index"
    graph, graphml = (index / "graph.json").read_bytes(), (index / "graph.graphml").read_bytes()
    code, rep = _doctor(arkai, kr)
    assert code == 0 and rep["graph_exports"] == []

    (index / "graph.json").unlink()
    (index / "graph.graphml").write_bytes(graphml.replace(b"Content", b"Contend", 1))
    code, rep = _doctor(arkai, kr)
    assert code == 0 and rep["healthy"]
    assert rep["graph_exports"] == ["missing: index/graph.json", "changed: index/graph.graphml"]
    code, out, _ = arkai("--repo", kr, "doctor")
    assert "missing: index/graph.json" in out
    assert "`arkai reindex --graph-exports` writes them again" in out

    outside = tmp_path / "graph.json"
    outside.write_bytes(graph)  # the right bytes, but outside the repo
    (index / "graph.json").symlink_to(outside)
    assert _doctor(arkai, kr)[1]["graph_exports"][0] == "changed: index/graph.json"

    manifest = (index / "manifest.json").read_bytes()
    (index / "manifest.json").write_bytes(manifest[:40])  # cut short: not JSON
    code, rep = _doctor(arkai, kr)
    assert code == 0 and len(rep["graph_exports"]) == 1
    assert rep["graph_exports"][0].startswith("not compared: ")
    assert "manifest.json: not valid JSON" in rep["graph_exports"][0]
    (index / "manifest.json").write_bytes(manifest)

    (index / "graph.json").unlink()
    assert arkai("--repo", kr, "reindex", "-q")[0] == 0
    assert (index / "graph.json").read_bytes() == graph
    assert (index / "graph.graphml").read_bytes() == graphml
    assert _doctor(arkai, kr)[1]["graph_exports"] == []


def test_doctor_names_vectors_made_by_another_recipe_of_their_model(
    kr: Path, arkai: Runner
) -> None:
    """After an upgrade that exports the model another way, the stores' vectors are not what
    this arkai would compute (a query's vector is made another way than the chunks'): doctor
    says so, without calling the library unhealthy, until a run embeds them again."""
    from arkai.search import embed

    assert arkai("--repo", kr, "add", "-q", SAMPLES / "beekeeping-talk.vtt")[0] == 0
    assert arkai("--repo", kr, "extract", "-q")[0] == 0
    assert _doctor(arkai, kr)[1]["vector_recipes"] == []  # no store yet
    assert arkai("--repo", kr, "reindex", "-q")[0] == 0
    assert _doctor(arkai, kr)[1]["vector_recipes"] == []
    ours = embed.OnnxMiniLMEmbedder.recipe
    meta_path = kr / "index" / "vectors" / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["recipe"] == ours
    meta_path.write_text(json.dumps({**meta, "recipe": "onnx-int8-v4"}))
    code, rep = _doctor(arkai, kr)
    assert code == 0 and rep["healthy"]
    assert rep["vector_recipes"] == [f"index/vectors: onnx-int8-v4, this arkai's {ours}"]
    code, out, _ = arkai("--repo", kr, "doctor")
    assert f"index/vectors: onnx-int8-v4, this arkai's {ours}" in out and "embeds them again" in out
    del meta["recipe"]  # written before recipes were recorded
    meta_path.write_text(json.dumps(meta))
    assert _doctor(arkai, kr)[1]["vector_recipes"] == [
        f"index/vectors: no recipe recorded, this arkai's {ours}"
    ]
    meta_path.write_text("{not json")
    code, rep = _doctor(arkai, kr)
    assert code == 0 and len(rep["vector_recipes"]) == 1
    assert (
        rep["vector_recipes"][0].startswith("index/vectors: ")
        and "JSON" in rep["vector_recipes"][0]
    )
    assert arkai("--repo", kr, "reindex", "-q")[0] == 0  # the store embedded again, whole
    assert _doctor(arkai, kr)[1]["vector_recipes"] == []
    assert json.loads(meta_path.read_text())["recipe"] == ours


def test_doctor_says_an_embedder_plugin_that_fails_to_load_instead_of_stopping(
    kr: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Doctor reads the recipes from the embedders' registry; an installed embedder plugin
    that cannot be imported is a finding it reports (naming the plugin), not an error that
    stops the whole report."""
    from importlib import metadata

    from arkai.adapters import plugins
    from arkai.search import embed

    assert arkai("--repo", kr, "add", "-q", SAMPLES / "beekeeping-talk.vtt")[0] == 0
    assert arkai("--repo", kr, "extract", "-q")[0] == 0
    assert arkai("--repo", kr, "reindex", "-q")[0] == 0
    broken = metadata.EntryPoint("brokenemb", "arkai_no_such_plugin:Embedder", embed.GROUP)
    found = plugins.entry_points

    def with_broken(**kw: Any) -> Any:
        eps = found(**kw)
        return [*eps, broken] if kw.get("group") == embed.GROUP else eps

    monkeypatch.setattr(plugins, "entry_points", with_broken)
    embed.get_embedders.cache_clear()  # (a fresh process scans the entry points; so here)
    code, rep = _doctor(arkai, kr)
    assert code == 0 and rep["healthy"] and rep["totals"]["items"] == 1
    (line,) = rep["vector_recipes"]
    assert line.startswith("index/vectors: not compared: embedder plugin 'brokenemb'"), line
    assert "arkai_no_such_plugin" in line
    code, out, _ = arkai("--repo", kr, "doctor")
    assert code == 0 and "not compared: embedder plugin 'brokenemb'" in out
