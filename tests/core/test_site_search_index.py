"""The site hook that adds arkai's search entries to Material's index: it streams them (one
page's entries in memory at a time) and writes what one ``json.dumps`` of the whole index
would."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from arkai.site import hooks, search


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


def test_the_scope_is_the_widest_whose_entries_fit() -> None:
    assert search.search_scope(60, 40, None) == search.ALL
    assert search.search_scope(60, 40, 100) == search.ALL  # exactly the budget fits
    assert search.search_scope(61, 40, 100) == search.NO_TRANSCRIPT_TEXT
    assert search.search_scope(500, 100, 100) == search.NO_TRANSCRIPT_TEXT
    assert search.search_scope(0, 101, 100) == search.TITLES
    assert search.search_scope(0, 0, 0) == search.ALL


def test_a_scope_keeps_titles_and_cuts_text_at_a_space() -> None:
    transcript = [["", "Talk — transcript", ""], ["L1", "00:00:01 · L1–L9", "words " * 50]]
    long = ", ".join(f"Talk {n:05d} &amp; co" for n in range(40))
    page = [["", "Talk", long, 4.0], ["claims", "Claims", "a claim", 4.0]]
    assert search.scoped_rows(transcript, True, search.ALL) == transcript
    assert search.scoped_rows(page, False, search.ALL) == page
    assert search.scoped_rows(transcript, True, search.NO_TRANSCRIPT_TEXT) == transcript[:1]
    assert search.scoped_rows(page, False, search.NO_TRANSCRIPT_TEXT) == page
    assert search.scoped_rows(transcript, True, search.TITLES) == []
    [(anchor, title, text, boost)] = search.scoped_rows(page, False, search.TITLES)
    assert (anchor, title, boost) == ("", "Talk", 4.0)
    assert len(text) <= search.TITLE_TEXT_CHARS + 2 and text.endswith(" …")
    assert long.startswith(text[:-2]) and long[len(text) - 2] == " "
    # A character reference is never cut (it holds no space); text without a space goes.
    assert "&amp" not in text.replace("&amp;", "")
    solid = [["", "Entity", "x" * 500]]
    assert search.scoped_rows(solid, False, search.TITLES) == [["", "Entity", ""]]
    short = [["", "Item", "transcripts #tag"]]
    assert search.scoped_rows(short, False, search.TITLES) == short
    assert search.scoped_rows([], False, search.TITLES) == []


@pytest.mark.parametrize("scope", search.SCOPES)
def test_the_index_holds_what_the_scope_covers_and_a_new_scope_reads_every_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    site, build = tmp_path / "site", tmp_path / "build"
    rows = {
        "items/a.md": [["", "Talk A", "transcripts #x", 4.0], ["claims", "Claims", "said", 4.0]],
        "transcripts/a.md": [["", "Talk A — transcript", ""], ["L1", "L1–L3", "spoken words"]],
    }
    for src, page_rows in rows.items():
        path = build / hooks.SEARCH_DIR / f"{src}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(page_rows), "utf-8")
    files = [_file("items/a.md", "items/a/"), _file("transcripts/a.md", "transcripts/a/")]
    monkeypatch.setitem(hooks._state, "files", files)
    monkeypatch.setitem(hooks._state, "command", "build")
    monkeypatch.setitem(hooks._state, "dirty", True)
    config = SimpleNamespace(config_file_path=str(build / "mkdocs.yml"), site_dir=str(site))

    def build_index(with_scope: str | None) -> list[str]:
        if with_scope is None:
            (build / hooks.SEARCH_SCOPE).unlink(missing_ok=True)
        else:
            (build / hooks.SEARCH_SCOPE).write_text(json.dumps({"scope": with_scope}))
        hooks.on_pre_build(config)  # sets the last index aside, as a dirty build does
        (site / "search").mkdir(parents=True, exist_ok=True)
        (site / hooks.SEARCH_INDEX).write_text(json.dumps({"config": {}, "docs": []}))
        hooks._add_search_entries(site, build)
        index = json.loads((site / hooks.SEARCH_INDEX).read_text())
        return [d["location"] for d in index["docs"]]

    everything = ["items/a/", "items/a/#claims", "transcripts/a/", "transcripts/a/#L1"]
    assert build_index(None) == everything  # no scope file: every entry
    expected = {
        search.ALL: everything,
        search.NO_TRANSCRIPT_TEXT: ["items/a/", "items/a/#claims", "transcripts/a/"],
        search.TITLES: ["items/a/"],
    }[scope]
    # The entries files are unchanged, so only the scope decides (no bytes of the last
    # index, written in another scope, are copied).
    assert build_index(scope) == expected
    assert build_index(scope) == expected  # and again, copied from the index just written
    assert build_index(search.ALL) == everything
    (build / hooks.SEARCH_SCOPE).write_text("{not json")
    assert hooks.read_scope(build) == search.ALL
    (build / hooks.SEARCH_SCOPE).write_text(json.dumps({"scope": "everything-and-more"}))
    assert hooks.read_scope(build) == search.ALL
