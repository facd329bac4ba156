"""The site hook that adds arkai's search entries to Material's index: it streams them (one
page's entries in memory at a time) and writes what one ``json.dumps`` of the whole index
would."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from arkai.site import hooks


def _file(src_uri: str, url: str) -> Any:
    return SimpleNamespace(src_uri=src_uri, url=url)


def test_entries_are_streamed_into_the_index_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, build = tmp_path / "site", tmp_path / "build"
    material = {
        "config": {"lang": ["en"], "separator": "[\\s\\-]+", "pipeline": ["stopWordFilter"]},
        "docs": [
            {"location": "", "title": "Home", "text": "Willkommen — grüße"},
            {"location": "items/a/#claims", "title": "stale", "text": "Material's own row"},
            {"location": "about/", "title": "About", "text": "a <b> &amp; c"},
        ],
    }
    (site / "search").mkdir(parents=True)
    (site / hooks.SEARCH_INDEX).write_text(json.dumps(material), encoding="utf-8")
    rows = {
        "items/a.md": [["", "Talk A", "intro", 2], ["claims", "Claims", "Zürich → 5 °C"]],
        "items/b.md": [["", "Talk B", 'quote "x" <y>']],
    }
    (build / hooks.SEARCH_DIR / "items").mkdir(parents=True)
    for src, page_rows in rows.items():
        (build / hooks.SEARCH_DIR / f"{src}.json").write_text(json.dumps(page_rows), "utf-8")
    files = [
        _file("items/a.md", "items/a/"),
        _file("items/b.md", "items/b/"),
        _file("notes.md", "notes/"),
    ]  # fmt: skip  (notes.md: no entries of arkai's)
    monkeypatch.setitem(hooks._state, "files", files)

    hooks._add_search_entries(site, build)

    expected = {
        "config": {**material["config"], "separator": "[\\s\\-]+|&(?:lt|gt|amp|quot);"},
        "docs": [
            material["docs"][0],
            material["docs"][2],  # the row of an arkai page is replaced by arkai's rows
            {"location": "items/a/", "title": "Talk A", "text": "intro", "boost": 2},
            {"location": "items/a/#claims", "title": "Claims", "text": "Zürich → 5 °C"},
            {"location": "items/b/", "title": "Talk B", "text": 'quote "x" <y>'},
        ],
    }
    got = (site / hooks.SEARCH_INDEX).read_bytes()
    assert got == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode()
    assert not [p for p in (site / "search").iterdir() if p.name.endswith(".tmp")]


def test_no_index_no_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(hooks._state, "files", [_file("a.md", "a/")])
    hooks._add_search_entries(tmp_path / "site", tmp_path / "build")  # search plugin off
    assert not (tmp_path / "site").exists()
