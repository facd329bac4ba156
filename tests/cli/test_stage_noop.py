"""The ``extract`` and ``condense`` stages run on every ``dvc repro`` (always changed): with
nothing changed since their last complete run they plan and read no item, and they write the
manifests the later stages depend on (docs/scale.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters import manifest
from arkai.errors import PipelineError
from arkai.ops import Repo
from arkai.ops import condense as condense_op
from arkai.ops import extract as extract_op
from tests.conftest import SAMPLES, Runner


def _no_work(*_: Any, **__: Any) -> Any:
    raise AssertionError("the stage planned the items although nothing changed")


def _transcripts(root: Path) -> list[Path]:
    return sorted((root / "library").rglob("transcript.md"))


def test_extract_stage_skips_planning_when_nothing_changed(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = extract_op.extract_stage(Repo.at(notes))
    assert (first.items, first.extracted) == (2, 2)
    library = (notes / manifest.PATHS["library"]).read_bytes()
    extracted = (notes / manifest.PATHS["extracted"]).read_bytes()
    assert b"transcript.md" in library and b"claims.md" in extracted

    real = extract_op.run_extract
    monkeypatch.setattr(extract_op, "run_extract", _no_work)
    again = extract_op.extract_stage(Repo.at(notes))
    assert (again.items, again.skipped, again.extracted) == (2, 2, 0)
    # A deleted manifest is written again by the no-op, with the same bytes.
    (notes / manifest.PATHS["extracted"]).unlink()
    extract_op.extract_stage(Repo.at(notes))
    assert (notes / manifest.PATHS["extracted"]).read_bytes() == extracted

    # An edited transcript: the items are planned again and exactly that one is redone.
    monkeypatch.setattr(extract_op, "run_extract", real)
    with open(_transcripts(notes)[0], "a", encoding="utf-8") as fh:
        fh.write("\nOne more line about hive scales.\n")
    edited = extract_op.extract_stage(Repo.at(notes))
    assert (edited.extracted, edited.skipped) == (1, 1)
    assert (notes / manifest.PATHS["library"]).read_bytes() != library

    # A claim edited by hand: planned again (nothing to redo), the manifest records the edit.
    claims = sorted((notes / "extracted").rglob("claims.md"))[0]
    claims.write_text(claims.read_text(encoding="utf-8") + "\nreviewed\n", encoding="utf-8")
    before = (notes / manifest.PATHS["extracted"]).read_bytes()
    hand = extract_op.extract_stage(Repo.at(notes))
    assert (hand.extracted, hand.skipped) == (0, 2)
    assert (notes / manifest.PATHS["extracted"]).read_bytes() != before
    assert claims.read_text(encoding="utf-8").endswith("\nreviewed\n")

    # Other params: planned again.
    monkeypatch.setattr(extract_op, "run_extract", _no_work)
    extract_op.extract_stage(Repo.at(notes))
    params = notes / "params.yaml"
    params.write_text(
        params.read_text(encoding="utf-8").replace("max_claims: 100", "max_claims: 99"),
        encoding="utf-8",
    )
    with pytest.raises(AssertionError, match="planned the items"):
        extract_op.extract_stage(Repo.at(notes))


def test_extract_stage_seals_only_a_complete_run(
    notes: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An item that fails (a malformed review.yaml): the run ends in error and the next one
    # works through the items again (it retries the failed one).
    review = _transcripts(notes)[0].with_name("review.yaml")
    review.write_text("claims: [not: a: mapping\n", encoding="utf-8")
    with pytest.raises(PipelineError):
        extract_op.extract_stage(Repo.at(notes))
    review.unlink()
    calls: list[int] = []
    real = extract_op.run_extract

    def adding(repo: Repo, **kw: Any) -> extract_op.ExtractSummary:
        calls.append(1)
        out = real(repo, **kw)
        if len(calls) == 1:  # an item arrives after the run listed the library
            code, _, err = arkai(
                "--repo", notes, "add", SAMPLES / "field-notes-on-reproducibility.txt"
            )
            assert code == 0, err
        return out

    monkeypatch.setattr(extract_op, "run_extract", adding)
    assert extract_op.extract_stage(Repo.at(notes)).extracted == 1  # the failed one, retried
    # The library changed while it ran: not sealed, so the next run plans every item.
    later = extract_op.extract_stage(Repo.at(notes))
    assert len(calls) == 2 and later.items == 3
    extract_op.extract_stage(Repo.at(notes))
    assert len(calls) == 2  # sealed now: nothing planned


def test_a_change_while_a_planned_run_works_is_planned_by_the_next_run(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 17: after a complete run, a run that plans a few items walks only their folders
    # once the work is done. The planned item's transcript edited again and another item's
    # claims edited while it works (after its walk) are not in what it publishes and seals:
    # the next run plans both.
    extract_op.extract_stage(Repo.at(notes))
    manifest.write(notes, "library", manifest.PATHS["library"])
    condense_op.condense_stage(Repo.at(notes))
    first, second = _transcripts(notes)
    with open(first, "a", encoding="utf-8") as fh:
        fh.write("\nOne more line about hive scales.\n")
    claims = sorted((notes / "extracted" / second.parent.relative_to(notes / "library"))
                    .rglob("claims.md"))[0]  # fmt: skip
    real, real_condense = extract_op.run_extract, condense_op.condense

    def meanwhile(repo: Repo, **kw: Any) -> extract_op.ExtractSummary:
        out = real(repo, **kw)
        with open(first, "a", encoding="utf-8") as fh:
            fh.write("\nA line written while the stage worked.\n")
        claims.write_text(claims.read_text(encoding="utf-8") + "\nreviewed\n", encoding="utf-8")
        return out

    monkeypatch.setattr(extract_op, "run_extract", meanwhile)
    one = extract_op.extract_stage(Repo.at(notes))
    assert (one.extracted, one.skipped) == (1, 1)
    rel = first.parent.relative_to(notes / "library").as_posix()
    # What it published: the planned item's outputs as they are, the rest as it planned.
    published = {name: (notes / manifest.PATHS[name]).read_bytes()
                 for name in ("library", "extracted")}  # fmt: skip
    assert published["library"] != manifest.manifest_bytes(notes, "library", "check-l")
    assert published["extracted"] != manifest.manifest_bytes(notes, "extracted", "check-e")
    planned: list[str] = []
    plan_item = extract_op.plan_item
    monkeypatch.setattr(
        extract_op,
        "plan_item",
        lambda item, *a: planned.append(item.rel.as_posix()) or plan_item(item, *a),
    )
    monkeypatch.setattr(extract_op, "run_extract", real)
    two = extract_op.extract_stage(Repo.at(notes))
    assert sorted(planned) == sorted(p.parent.relative_to(notes / "library").as_posix()
                                     for p in (first, second))  # fmt: skip
    assert (two.extracted, two.skipped) == (1, 1)
    assert claims.read_text(encoding="utf-8").endswith("\nreviewed\n")  # (kept as edited)
    for name in ("library", "extracted"):  # a whole walk's manifests now
        assert (notes / manifest.PATHS[name]).read_bytes() == manifest.manifest_bytes(
            notes, name, f"check-{name}"
        )
    planned.clear()
    assert extract_op.extract_stage(Repo.at(notes)).skipped == 2 and planned == []

    # condense: the first item's transcript was planned; a condensed file of the other item
    # edited while it works is planned by its next run (and kept as edited).
    condensed = sorted((notes / "condensed").rglob("condensed.json"))
    other = next(p for p in condensed if not p.is_relative_to(notes / "condensed" / rel))
    manifest.unseal(notes, "condense")
    condense_op.condense_stage(Repo.at(notes))  # sealed with the library as it is now
    with open(first, "a", encoding="utf-8") as fh:
        fh.write("\nAnd one more.\n")
    extract_op.extract_stage(Repo.at(notes))

    def condensing(repo: Repo, **kw: Any) -> Any:
        out = real_condense(repo, **kw)
        data = json.loads(other.read_text(encoding="utf-8"))
        data["chunks"][0]["summary"] = "A summary a person wrote."
        other.write_text(json.dumps(data), encoding="utf-8")
        return out

    monkeypatch.setattr(condense_op, "condense", condensing)
    assert condense_op.condense_stage(Repo.at(notes)).condensed == 1
    assert (notes / manifest.PATHS["condensed"]).read_bytes() != manifest.manifest_bytes(
        notes, "condensed", "check-c"
    )
    seen: list[Any] = []

    def seeing(repo: Repo, **kw: Any) -> Any:
        seen.append(kw["changes"])
        return real_condense(repo, **kw)

    monkeypatch.setattr(condense_op, "condense", seeing)
    again = condense_op.condense_stage(Repo.at(notes))
    assert [sorted(c.folders) for c in seen] == [
        [other.parent.relative_to(notes / "condensed").as_posix()]
    ]
    assert (again.condensed, again.skipped) == (0, 2)
    assert "A summary a person wrote." in other.read_text(encoding="utf-8")
    assert (notes / manifest.PATHS["condensed"]).read_bytes() == manifest.manifest_bytes(
        notes, "condensed", "check-c"
    )


def test_condense_stage_skips_when_nothing_changed_and_records_hand_edits(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It reads the transcripts through the manifest the extract stage wrote before it.
    library = manifest.PATHS["library"]
    real = condense_op.condense
    calls: list[int] = []
    monkeypatch.setattr(condense_op, "condense", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = condense_op.condense_stage(Repo.at(notes))
    assert (first.items, first.condensed) == (2, 2)
    assert first.shards is None  # the index stage builds the shards
    written = (notes / manifest.PATHS["condensed"]).read_bytes()
    assert written.count(b"condensed.json") == 2
    condense_op.condense_stage(Repo.at(notes))
    assert len(calls) == 2  # no manifest of the library yet: never skipped
    manifest.write(notes, "library", library)
    condense_op.condense_stage(Repo.at(notes))
    assert len(calls) == 3

    monkeypatch.setattr(condense_op, "condense", _no_work)
    again = condense_op.condense_stage(Repo.at(notes))
    assert (again.items, again.skipped, again.condensed) == (2, 2, 0)

    # An edited transcript, once extract has written the library's manifest: one item redone.
    with open(_transcripts(notes)[0], "a", encoding="utf-8") as fh:
        fh.write("\nOne more line about hive scales.\n")
    condense_op.condense_stage(Repo.at(notes))  # (the manifest not rewritten yet: no work)
    manifest.write(notes, "library", library)
    monkeypatch.setattr(condense_op, "condense", real)
    edited = condense_op.condense_stage(Repo.at(notes))
    assert (edited.condensed, edited.skipped) == (1, 1)

    # A condensed file edited by hand: kept, and the manifest records it.
    path = sorted((notes / "condensed").rglob("condensed.json"))[0]
    data = json.loads(path.read_text(encoding="utf-8"))
    data["chunks"][0]["summary"] = "A summary a person wrote."
    path.write_text(json.dumps(data), encoding="utf-8")
    before = (notes / manifest.PATHS["condensed"]).read_bytes()
    hand = condense_op.condense_stage(Repo.at(notes))
    assert (hand.condensed, hand.skipped) == (0, 2)
    assert (notes / manifest.PATHS["condensed"]).read_bytes() != before
    assert "A summary a person wrote." in path.read_text(encoding="utf-8")

    # An item removed: its condensed folder goes, and so does its manifest line.
    shutil.rmtree(_transcripts(notes)[0].parent)
    manifest.write(notes, "library", library)
    gone = condense_op.condense_stage(Repo.at(notes))
    assert (gone.items, gone.removed) == (1, 1)
    assert (notes / manifest.PATHS["condensed"]).read_bytes().count(b"condensed.json") == 1
    # A run while the library differs from its manifest (changed after extract wrote it) is
    # not sealed: the next one works through the items again.
    (notes / "library" / "stray.txt").write_text("x", encoding="utf-8")
    manifest.unseal(notes, "condense")
    calls.clear()
    monkeypatch.setattr(condense_op, "condense", lambda *a, **k: calls.append(1) or real(*a, **k))
    condense_op.condense_stage(Repo.at(notes))
    condense_op.condense_stage(Repo.at(notes))
    assert len(calls) == 2
    manifest.write(notes, "library", library)
    condense_op.condense_stage(Repo.at(notes))
    condense_op.condense_stage(Repo.at(notes))
    assert len(calls) == 3


def test_doctor_says_what_changed_in_the_library_since_the_last_run(
    notes: Path, arkai: Runner
) -> None:
    # `dvc status` no longer shows it (the extract stage is always run; docs/scale.md).
    _, out, _ = arkai("--repo", notes, "doctor", "--json")
    assert json.loads(out)["library_changed"] == []  # no manifest yet: nothing to compare
    manifest.write(notes, "library", manifest.PATHS["library"])
    transcript = _transcripts(notes)[0]
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write("\nedited\n")
    (transcript.parent / "notes.txt").write_text("x", encoding="utf-8")
    _, out, _ = arkai("--repo", notes, "doctor", "--json")
    rel = transcript.relative_to(notes / "library").parent.as_posix()
    assert json.loads(out)["library_changed"] == [
        f"changed: {rel}/transcript.md",
        f"extra: {rel}/notes.txt",
    ]
    _, out, _ = arkai("--repo", notes, "doctor")
    assert "library/ changed since the last `dvc repro` (2 files):" in out
    manifest.write(notes, "library", manifest.PATHS["library"])
    _, out, _ = arkai("--repo", notes, "doctor", "--json")
    assert json.loads(out)["library_changed"] == []


def _tree(root: Path, *folders: str) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for folder in folders
        for p in sorted((root / folder).rglob("*"))
        if p.is_file()
    }


def test_after_a_complete_run_only_the_changed_items_are_planned(
    notes: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 17: one changed transcript plans one item, not the library — and the outputs are
    # those of a run that plans every item (a fixed clock: extractions carry their time).
    monkeypatch.setattr("arkai.adapters.events.utc_now", lambda: "2026-11-24T10:00:00Z")
    code, _, err = arkai("--repo", notes, "add", SAMPLES / "field-notes-on-reproducibility.txt")
    assert code == 0, err
    extract_op.extract_stage(Repo.at(notes))
    assert condense_op.condense_stage(Repo.at(notes)).condensed == 3
    twin = notes.parent / "twin"
    shutil.copytree(notes, twin)
    for stage in ("extract", "condense"):
        manifest.unseal(twin, stage)  # the twin plans every item

    planned: list[str] = []
    keyed: list[int] = []
    plan_item, item_key = extract_op.plan_item, condense_op.item_key
    monkeypatch.setattr(
        extract_op,
        "plan_item",
        lambda item, *a: planned.append(item.rel.as_posix()) or plan_item(item, *a),
    )
    monkeypatch.setattr(condense_op, "item_key", lambda *a: keyed.append(1) or item_key(*a))

    def edit(root: Path) -> tuple[str, str]:
        transcript = _transcripts(root)[0]
        with open(transcript, "a", encoding="utf-8") as fh:
            fh.write("\nOne more line about hive scales.\n")
        deleted = sorted((root / "extracted").rglob("extraction.json"))[-1]
        deleted.unlink()  # an extraction deleted by hand: noticed and redone
        return (transcript.parent.relative_to(root / "library").as_posix(),
                deleted.parent.relative_to(root / "extracted").as_posix())  # fmt: skip

    changed = edit(notes)
    assert edit(twin) == changed
    one = extract_op.extract_stage(Repo.at(notes))
    assert sorted(planned) == sorted(changed)
    assert (one.items, one.extracted, one.skipped) == (3, 2, 1)
    assert condense_op.condense_stage(Repo.at(notes)).condensed == 1 and len(keyed) == 1
    planned.clear(), keyed.clear()
    full = extract_op.extract_stage(Repo.at(twin))
    condense_op.condense_stage(Repo.at(twin))
    assert (len(set(planned)), len(keyed)) == (3, 3)  # (it lists the library twice)
    assert (full.items, full.extracted, full.skipped) == (3, 2, 1)
    folders = ("extracted", "condensed", "index/manifests")
    assert _tree(notes, *folders) == _tree(twin, *folders)

    # A claim edited by hand: that item is planned (and kept as edited); nothing else.
    planned.clear()
    claims = sorted((notes / "extracted").rglob("claims.md"))[0]
    claims.write_text(claims.read_text(encoding="utf-8") + "\nreviewed\n", encoding="utf-8")
    hand = extract_op.extract_stage(Repo.at(notes))
    assert len(planned) == 1 and (hand.extracted, hand.skipped) == (0, 3)
    assert claims.read_text(encoding="utf-8").endswith("\nreviewed\n")
    planned.clear()
    assert extract_op.extract_stage(Repo.at(notes)).skipped == 3 and planned == []

    # A removed item: nothing but its outputs is touched.
    gone = _transcripts(notes)[-1].parent
    shutil.rmtree(gone)
    removed = extract_op.extract_stage(Repo.at(notes))
    assert (removed.items, removed.removed, planned) == (2, 1, [])
    rel = gone.relative_to(notes / "library")
    assert not (notes / "extracted" / rel).exists()
    assert condense_op.condense_stage(Repo.at(notes)).removed == 1
    assert not (notes / "condensed" / rel).exists()

    # A damaged copy of the sealed manifests is not trusted: every item is planned again.
    copy = notes / manifest.CACHE_DIR / "extract.done.extracted.tsv"
    copy.write_bytes(copy.read_bytes().replace(b"claims.md", b"claims.mx", 1))
    with open(_transcripts(notes)[0], "a", encoding="utf-8") as fh:
        fh.write("\nAnd one more.\n")
    assert extract_op.extract_stage(Repo.at(notes)).extracted == 1 and len(set(planned)) == 2


def test_other_params_or_patterns_plan_every_item(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extract_op.extract_stage(Repo.at(notes))
    condense_op.condense_stage(Repo.at(notes))
    seen: list[Any] = []
    monkeypatch.setattr(extract_op, "run_extract", lambda repo, **kw: seen.append(kw["changes"]))
    monkeypatch.setattr(condense_op, "condense", lambda repo, **kw: seen.append(kw["changes"]))
    with open(_transcripts(notes)[0], "a", encoding="utf-8") as fh:
        fh.write("\nOne more line.\n")
    manifest.write(notes, "library", manifest.PATHS["library"])
    for stage in (extract_op.extract_stage, condense_op.condense_stage):
        with pytest.raises(AttributeError):  # (the stub returns no summary)
            stage(Repo.at(notes))
    assert [len(c.folders) for c in seen] == [1, 1]
    seen.clear()
    pattern = notes / "patterns" / "extract_claims" / "system.md"
    pattern.write_text(pattern.read_text(encoding="utf-8") + "\nBe brief.\n", encoding="utf-8")
    with pytest.raises(AttributeError):
        extract_op.extract_stage(Repo.at(notes))
    params = notes / "params.yaml"
    params.write_text(
        params.read_text(encoding="utf-8").replace("max_claims: 100", "max_claims: 99"),
        encoding="utf-8",
    )
    with pytest.raises(AttributeError):
        condense_op.condense_stage(Repo.at(notes))
    assert seen == [None, None]


def test_a_file_name_no_manifest_can_list_stops_the_stage_naming_it(
    notes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose name is not UTF-8 dropped into an item's folder: the extract stage ends
    with a one-line error naming it (it was `unexpected error: UnicodeEncodeError`), loses
    nothing, and runs once it is renamed."""
    from arkai.cli import guarded

    extract_op.extract_stage(Repo.at(notes))
    kept = {p: p.read_bytes() for p in sorted((notes / "extracted").rglob("*")) if p.is_file()}
    folder = _transcripts(notes)[0].parent
    stray = os.path.join(os.fsencode(folder), b"notes-\xe9t\xe9.txt")  # Latin-1, not UTF-8
    with open(stray, "wb") as fh:
        fh.write(b"a note")
    code = guarded(lambda: extract_op.extract_stage(Repo.at(notes)))
    err = capsys.readouterr().err
    assert code != 0 and "notes-\\xe9t\\xe9.txt" in err and "unexpected" not in err
    assert {p: p.read_bytes() for p in kept} == kept
    os.rename(stray, os.fsencode(folder / "notes-ete.txt"))
    after = extract_op.extract_stage(Repo.at(notes))
    assert (after.items, after.failed) == (2, {})  # its item planned, its key unchanged
    assert b"notes-ete.txt" in (notes / manifest.PATHS["library"]).read_bytes()
