"""Reading only some item folders (what the extract and condense stages plan after a complete
run) reads them exactly as the walk of the whole library does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arkai.adapters.layout import Item, iter_items, load_items, scan_items


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


def test_the_walk_sorts_folders_as_paths_not_as_strings(tmp_path: Path) -> None:
    # "t-x" < "t/…" as strings, but the folder "t" comes before "t-x" as paths.
    _item(tmp_path, "t-x/A", "1")
    _item(tmp_path, "t/B", "2")
    _item(tmp_path, "t/B c", "3")
    order = [i.id for i in iter_items(tmp_path)]
    assert order == ["2", "3", "1"]
    assert order == [i.id for i in sorted(iter_items(tmp_path), key=lambda i: i.path)]


def test_an_item_folder_holds_no_other_item(tmp_path: Path) -> None:
    _item(tmp_path, "notes/A", "1")
    _item(tmp_path, "notes/A/inner", "2")  # inside an item: not an item
    folder = tmp_path / "library/notes/D"
    (folder / "metadata.json").mkdir(parents=True)  # an entry of another kind still counts
    items, problems = scan_items(tmp_path)
    assert [i.id for i in items] == ["1"]
    assert [p.path for p in problems] == [folder / "metadata.json"]


@pytest.mark.parametrize(
    ("root", "path"),
    [
        ("/kb", "/kb/library/talks/A (1)"),
        ("/", "/library/talks/A (1)"),
        ("/kb/", "/kb/library/notes/deep/er/B"),
        ("kb", "kb/library/x"),
        ("/kb", "/kb/library/../escape"),  # pure paths: '..' kept, as relative_to keeps it
        ("/kb", "/kb/libraryish/x"),
        ("/kb", "/other/library/x"),
        ("/kb", "/kb/library"),
    ],
)
def test_an_items_folders_are_the_pathlib_ones(root: str, path: str) -> None:
    """``rel``, ``extracted`` and ``condensed`` are worked out on strings: the same paths
    pathlib's ``relative_to`` and joins give, and its error for a folder outside library/."""
    item = Item(root=Path(root), path=Path(path), metadata={"id": "1"})
    try:
        rel = Path(path).relative_to(Path(root) / "library")
    except ValueError:
        with pytest.raises(ValueError):
            item.rel  # noqa: B018
        with pytest.raises(ValueError):
            item.extracted  # noqa: B018
        return
    if rel == Path("."):
        assert item.rel == rel
        return
    assert item.rel == rel and str(item.rel) == str(rel)
    assert item.extracted == Path(root) / "extracted" / rel
    assert item.condensed == Path(root) / "condensed" / rel
