"""``arkai doctor``: one report of the library's health, item by item.

For every item of ``library/``: was it acquired (a readable ``transcript.md``), extracted (and
with what outcome), is its extraction current (the key the next ``dvc repro`` would compute
equals the one recorded), do its spans still verify, is it in the search index's catalog, and
does the built site have its page. An item whose state needs a person (a failure, a stale span,
work the pipeline has not done yet) is flagged with what to do; the totals count each state.
Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import dvc, manifest
from arkai.adapters.fs import open_repo_file
from arkai.adapters.layout import EXTRACTION, INDEX, Item
from arkai.adapters.repo import Repo
from arkai.adapters.store import read_json
from arkai.core.hashing import file_digest
from arkai.errors import ArkaiError
from arkai.ops.extract import plan_item
from arkai.ops.validate import validate_item
from arkai.patterns.model import Pattern

__all__ = ["DoctorReport", "ItemHealth", "diagnose"]

# Extraction states.
OK, FAILED, MISSING, OUTDATED, SKIPPED = "ok", "failed", "not extracted", "outdated", "skipped"


@dataclass
class ItemHealth:
    """The state of one item along the pipeline."""

    content_id: str
    title: str
    path: str
    acquired: bool
    """``transcript.md`` is a readable regular file."""
    extraction: str
    """``ok`` | ``failed`` | ``not extracted`` | ``outdated`` | ``skipped``."""
    error: str | None = None
    """The recorded error of a failed extraction, or why the item is skipped."""
    stale_spans: int = 0
    """Spans whose bytes no longer match the transcript."""
    indexed: bool | None = None
    """In ``index/catalog.json`` (None: no index built yet)."""
    on_site: bool | None = None
    """The built site has the item's page (None: no site built yet)."""
    actions: list[str] = field(default_factory=list)
    """What a person should do, if anything."""

    @property
    def healthy(self) -> bool:
        return not self.actions

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "healthy": self.healthy}


@dataclass
class DoctorReport:
    items: list[ItemHealth]
    index_built: bool
    site_built: bool
    #: site/ pages that differ from the site stage's manifest ("missing: PATH", "changed: …",
    #: "extra: …"): DVC tracks the manifest, not site/'s files (docs/scale.md).
    site_drift: tuple[str, ...] = ()
    #: library/ files that differ from the manifest the extract stage last wrote (same form):
    #: changed since the last `dvc repro`, which `dvc status` no longer shows (the stage is
    #: always run, DVC does not walk library/; docs/scale.md). Not a health problem.
    library_changed: tuple[str, ...] = ()
    #: ``index/graph.json`` and ``graph.graphml`` that differ from the digests the index
    #: stage's manifest lists ("missing: PATH", "changed: PATH"): exports for other tools, not
    #: DVC outputs (a clone that pulls has none, a ``dvc checkout`` does not bring them back),
    #: so they are checked here. Not a health problem: ``arkai reindex`` writes them again.
    graph_exports: tuple[str, ...] = ()
    #: Vector stores made by another recipe of their model than this arkai's
    #: ("index/vectors: onnx-int8-v4, this arkai's onnx-int8-v5"): the stage that owns one
    #: embeds it again, whole, the next time it runs, and until then a query's vector is made
    #: another way than the chunks'. Not a health problem: ``arkai reindex`` re-embeds now.
    vector_recipes: tuple[str, ...] = ()
    #: DVC's files that a DVC killed while writing them left torn (``.dvc/tmp/rwlock``,
    #: ``dvc.lock``: :func:`arkai.adapters.dvc.clear_torn`), each of which stops every ``dvc``
    #: command until it is set aside.
    dvc_torn: tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        return all(i.healthy for i in self.items) and not self.site_drift and not self.dvc_torn

    def totals(self) -> dict[str, int]:
        out = {
            "items": len(self.items),
            "healthy": sum(i.healthy for i in self.items),
            "needs_attention": sum(not i.healthy for i in self.items),
            "not_acquired": sum(not i.acquired for i in self.items),
            "stale_spans": sum(i.stale_spans for i in self.items),
            "not_indexed": sum(i.indexed is False for i in self.items),
            "not_on_site": sum(i.on_site is False for i in self.items),
        }
        for state in (OK, FAILED, MISSING, OUTDATED, SKIPPED):
            out[f"extraction_{state.replace(' ', '_')}"] = sum(
                i.extraction == state for i in self.items
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "index_built": self.index_built,
            "site_built": self.site_built,
            "site_drift": list(self.site_drift),
            "library_changed": list(self.library_changed),
            "graph_exports": list(self.graph_exports),
            "vector_recipes": list(self.vector_recipes),
            "dvc_torn": list(self.dvc_torn),
            "totals": self.totals(),
            "items": [i.to_dict() for i in self.items],
        }


def _site_pages(root: Path) -> set[str] | None:
    """Content IDs with an item page in the built site (None when no site is built)."""
    from arkai.site.config import load_user_config
    from arkai.site.links import page_id

    site = load_user_config(root).site_dir
    if not (site / "index.html").is_file():
        return None
    items = site / "items"
    found = {p.stem for p in items.glob("*.html")} | {p.name for p in items.glob("*/")}
    return {pid for pid in found if pid == page_id(pid)}


def _extraction_state(
    item: Item, root: Path, params: dict[str, Any], loaded: dict[str, Pattern]
) -> tuple[str, str | None]:
    record = read_json(item.extracted / EXTRACTION)
    if not record:
        return MISSING, None
    if record.get("status") == "failed":
        return FAILED, str(record.get("error") or "unknown error")
    xp = params["extract"]
    name = str(xp["provider"])
    model = xp.get("model") or ((params.get("providers") or {}).get(name) or {}).get("model")
    plan = plan_item(item, root, params, name, str(model) if model else None, loaded)
    if not plan.patterns:
        return SKIPPED, "no patterns for this content type"
    if record.get("key") != plan.key:
        return OUTDATED, None
    return OK, None


def diagnose(repo: Repo) -> DoctorReport:
    """The health of every item (see the module doc)."""
    from arkai.site.links import page_id

    root = repo.root
    params = repo.params
    catalog = read_json(root / INDEX / "catalog.json")
    indexed = (
        {str(e.get("id")) for e in catalog.get("items") or [] if isinstance(e, dict)}
        if catalog is not None
        else None
    )
    pages = _site_pages(root)
    loaded: dict[str, Pattern] = {}
    out: list[ItemHealth] = []
    for item in repo.items():
        health = ItemHealth(
            content_id=item.id,
            title=item.title,
            path=item.path.relative_to(root).as_posix(),
            acquired=item.transcript.is_file() and not item.transcript.is_symlink(),
            extraction=MISSING,
            indexed=None if indexed is None else item.id in indexed,
            on_site=None if pages is None else page_id(item.id) in pages,
        )
        if not health.acquired:
            health.actions.append("transcript.md is missing: re-add the source (`arkai add`)")
        else:
            try:
                health.extraction, health.error = _extraction_state(item, root, params, loaded)
                health.stale_spans = validate_item(item).stale
            except ArkaiError as exc:
                health.extraction, health.error = FAILED, exc.message
        if health.extraction == FAILED:
            health.actions.append(
                f"extraction failed ({health.error}): fix the cause, then `dvc repro` "
                f"(or `arkai extract --only {item.id[:8]}`)"
            )
        elif health.extraction in (MISSING, OUTDATED):
            health.actions.append(f"{health.extraction}: run `dvc repro`")
        if health.stale_spans:
            health.actions.append(
                f"{health.stale_spans} span(s) no longer match the transcript: "
                f"`arkai evidence reanchor {item.id[:8]}` or re-extract"
            )
        if health.indexed is False and health.extraction == OK:
            health.actions.append("not in the search index: run `dvc repro` (or `arkai reindex`)")
        if health.on_site is False and health.extraction == OK:
            health.actions.append("not on the site: run `dvc repro` (or `arkai site build`)")
        out.append(health)
    return DoctorReport(
        items=out,
        index_built=indexed is not None,
        site_built=pages is not None,
        site_drift=_drift(root, "site") if pages is not None else (),
        library_changed=_drift(root, "library", cached=True),
        graph_exports=_graph_exports(root),
        vector_recipes=_vector_recipes(root),
        dvc_torn=tuple(
            name
            for name, torn in ((dvc.RWLOCK, dvc.torn_rwlock), (dvc.LOCKFILE, dvc.torn_lockfile))
            if torn(root)
        ),
    )


def _vector_recipes(root: Path) -> tuple[str, ...]:
    """The vector stores (the index's chunks, the beliefs' statements) whose recorded recipe
    is not the one their model's embedder has in this arkai (read from the stores' metadata
    and the embedders' factories: no model is loaded). An embedder plugin that fails to load
    leaves the stores not compared, said as such: doctor reports it and goes on."""
    from arkai.adapters import memory
    from arkai.search import embed

    out: list[str] = []
    registry: dict[str, Any] | None = None
    for folder in (root / INDEX / "vectors", memory.cache_dir(root) / memory.STORE):
        where = folder.relative_to(root).as_posix()
        try:
            meta = read_json(folder / "meta.json")
        except ArkaiError as exc:  # the stage loads such a store empty and embeds it again
            out.append(f"{where}: {exc.message}")
            continue
        model = meta.get("model") if meta is not None else None
        if meta is None or not isinstance(model, str):
            continue
        try:
            registry = embed.get_embedders() if registry is None else registry
        except ArkaiError as exc:  # a plugin that cannot be imported
            out.append(f"{where}: not compared: {exc.message}")
            continue
        if model not in registry:
            continue
        stored, ours = str(meta.get("recipe") or ""), embed.recipe_of(model)
        if stored != ours:
            out.append(f"{where}: {stored or 'no recipe recorded'}, this arkai's {ours or 'none'}")
    return tuple(out)


def _graph_exports(root: Path) -> tuple[str, ...]:
    """The graph exports the index stage writes beside its DVC outputs that are not the bytes
    ``index/manifest.json`` lists (none listed: no check; a manifest that cannot be read is
    said, not raised)."""
    from arkai.ops.index import GRAPH_JSON, GRAPHML, MANIFEST

    try:
        listed = (read_json(root / INDEX / MANIFEST) or {}).get("files")
    except ArkaiError as exc:
        return (f"not compared: {exc.message}",)
    if not isinstance(listed, dict):
        return ()
    out: list[str] = []
    for name in (GRAPH_JSON, GRAPHML):
        want, path = listed.get(name), root / INDEX / name
        if not isinstance(want, str):
            continue
        try:
            with open_repo_file(path, root) as fh:
                got = file_digest(fh)
        except FileNotFoundError:
            out.append(f"missing: {INDEX}/{name}")
            continue
        except (ArkaiError, OSError):
            got = None
        if got != want:
            out.append(f"changed: {INDEX}/{name}")
    return tuple(out)


def _drift(root: Path, folder: str, *, cached: bool = False) -> tuple[str, ...]:
    """How ``folder`` differs from the manifest its stage wrote (none written: no check);
    ``cached``: files whose size, mtime and inode are unchanged are not read again."""
    if not (root / manifest.PATHS[folder]).is_file():
        return ()
    diff = manifest.check(root, folder, manifest.PATHS[folder], cached=cached)
    return tuple(
        f"{kind}: {path}"
        for kind, paths in (("missing", diff.missing), ("changed", diff.changed),
                            ("extra", diff.extra))
        for path in paths
    )  # fmt: skip
