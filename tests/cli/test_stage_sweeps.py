"""A killed extract or condense run leaves the atomic writer's temp file beside an item's
file, where git would list it as a new file of the library: the stages' manifest walks remove
it as they pass it, and the site build's listing of its pages does the same
(:func:`arkai.adapters.fs.sweep_temp`); a file whose writer runs, one written elsewhere and
any other dotted ``.tmp`` file are left, and the manifests list none of them."""

from __future__ import annotations

import os
from pathlib import Path

from arkai.adapters import manifest
from arkai.adapters.fs import writer_tag
from arkai.ops import Repo
from arkai.ops import condense as condense_op
from arkai.ops import extract as extract_op
from arkai.site.build import _files_under
from tests.conftest import dead_pid, other_writer_tag


def test_the_manifest_walks_and_the_page_listing_sweep_what_killed_writers_left(
    notes: Path,
) -> None:
    extract_op.extract_stage(Repo.at(notes))
    condense_op.condense_stage(Repo.at(notes))
    listed = {f: (notes / manifest.PATHS[f]).read_bytes() for f in ("library", "extracted")}
    dead, tag = dead_pid(), writer_tag()
    planted, kept = [], []
    for folder in ("library", "extracted", "condensed"):
        item = sorted(p.parent for p in (notes / folder).rglob("*.json"))[0]
        planted.append(item / f".claims.json.{dead}.{tag}-q8w7e6r5.tmp")
        kept.append(item / f".claims.json.{os.getppid()}.{tag}-q8w7e6r5.tmp")
        kept.append(item / f".claims.json.{dead}.{other_writer_tag()}-q8w7e6r5.tmp")
        kept.append(item / ".my-notes.tmp")
        kept.append(item / f".claims.json.{dead}-q8w7e6r5.tmp")  # untagged: maybe a person's
    for path in planted + kept:
        path.write_bytes(b"{")
    extract_op.extract_stage(Repo.at(notes))
    condense_op.condense_stage(Repo.at(notes))
    assert [p for p in planted if p.exists()] == []
    assert all(p.read_bytes() == b"{" for p in kept)
    # Passed over, as before: the manifests list none of them.
    assert {f: (notes / manifest.PATHS[f]).read_bytes() for f in listed} == listed

    pages = notes / "pages"
    (pages / "items").mkdir(parents=True)
    (pages / "items" / "a.md").write_text("a")
    (pages / "items" / f".a.md.{dead}.{tag}-q8w7e6r5.tmp").write_text("half")
    (pages / f".b.md.{os.getppid()}.{tag}-q8w7e6r5.tmp").write_text("half")
    assert _files_under(pages) == {"items/a.md", f".b.md.{os.getppid()}.{tag}-q8w7e6r5.tmp"}
    assert not (pages / "items" / f".a.md.{dead}.{tag}-q8w7e6r5.tmp").exists()
