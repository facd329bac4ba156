"""Reading only some item folders (what the extract and condense stages plan after a complete
run) reads them exactly as the walk of the whole library does."""

from __future__ import annotations

import json
import os
from pathlib import Path

from arkai.adapters.layout import load_items, scan_items


def _item(root: Path, rel: str, ident: str) -> None:
    folder = root / "library" / rel
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"id": ident}), encoding="utf-8")
    (folder / "transcript.md").write_text("hello\n", encoding="utf-8")


def test_load_items_reads_the_named_folders_as_the_scan_does(tmp_path: Path) -> None:
    _item(tmp_path, "notes/A (1)", "1")
    _item(tmp_path, "notes/B (2)", "2")
    _item(tmp_path, "notes/C (3)", "3")
    (tmp_path / "library/notes/C (3)/metadata.json").write_text("[]", encoding="utf-8")
    _item(tmp_path / "elsewhere", "x", "9")
    os.symlink(tmp_path / "elsewhere/library/x", tmp_path / "library/notes/L (9)")
    (tmp_path / "library/notes/empty").mkdir()
    items, problems = scan_items(tmp_path)
    named = ["notes/C (3)", "notes/A (1)", "notes/L (9)", "notes/gone", "notes/empty"]
    some, some_problems = load_items(tmp_path, named)
    assert [i.id for i in some] == ["1"] == [i.id for i in items if i.id != "2"]
    assert sorted(p.path for p in some_problems) == sorted(p.path for p in problems)
    assert all(str(p.path) in p.error for p in some_problems)
    assert load_items(tmp_path, []) == ([], [])
