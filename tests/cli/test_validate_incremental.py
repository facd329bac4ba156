"""`arkai validate` is incremental (issue 17): an item whose checked files are unchanged takes
its cached verdict; any changed byte, a damaged cache entry or a new validator version re-checks
it; the report always equals `arkai validate --full` (every span re-checked from scratch)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters import itemtable, manifest
from arkai.adapters.repo import Repo
from arkai.cli import main
from arkai.core import canonjson
from arkai.ops import validate as op
from arkai.ops.init import init_repo
from tests.cli.test_receipts import SENTENCES, srt
from tests.conftest import Runner, as_stage

OTHER = [
    "The garden committee met on a rainy Tuesday in March.",
    "Beekeepers inspect every hive once a week during the summer.",
    "Tomatoes need full sun and steady watering to ripen well.",
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two extracted items, made once."""
    base = tmp_path_factory.mktemp("validate-incremental")
    kr = base / "kr"
    init_repo(kr, git=False)
    for name, sentences in (("review.srt", SENTENCES), ("garden.srt", OTHER)):
        source = base / name
        source.write_text(srt(sentences), encoding="utf-8")
        assert main(["--repo", str(kr), "add", "-q", str(source)]) == 0
    assert main(["--repo", str(kr), "extract", "--quiet"]) == 0
    return kr


@pytest.fixture
def lib(template: Path, tmp_path: Path) -> Path:
    kr = tmp_path / "kr"
    shutil.copytree(template, kr, symlinks=True)
    shutil.rmtree(kr / ".arkai" / "index-cache", ignore_errors=True)
    return kr


def run(arkai: Runner, kr: Path, *flags: str) -> tuple[int, dict[str, Any], bytes]:
    code, out, _ = arkai("--repo", kr, "validate", "--json", "--report", "m.json", *flags)
    return code, json.loads(out), (kr / "m.json").read_bytes()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The content IDs :func:`validate_item` actually re-checks (cache misses)."""
    seen: list[str] = []
    real = op.validate_item

    def spy(item: Any) -> op.ItemReport:
        seen.append(item.id)
        return real(item)

    monkeypatch.setattr(op, "validate_item", spy)
    return seen


def same_as_full(arkai: Runner, kr: Path) -> tuple[int, dict[str, Any]]:
    code, report, metric = run(arkai, kr)
    full_code, full, full_metric = run(arkai, kr, "--full")
    assert (code, report, metric) == (full_code, full, full_metric)
    return code, report


def item_folders(kr: Path, index: int) -> tuple[Path, Path]:
    items = list(Repo.at(kr).items())
    return items[index].path, items[index].extracted


def test_unchanged_items_are_not_checked_again(lib: Path, arkai: Runner, checks: list[str]) -> None:
    code, first, _ = run(arkai, lib)
    assert code == 0 and first["summary"]["valid"] > 0 and len(checks) == 2
    checks.clear()
    assert same_as_full(arkai, lib)[1] == first
    assert len(checks) == 2  # only the --full run re-checked; the incremental one hit both
    checks.clear()
    library, _ = item_folders(lib, 0)
    (library / "transcript.md").write_bytes((library / "transcript.md").read_bytes() + b"\n")
    run(arkai, lib)
    assert checks == [next(iter(Repo.at(lib).items())).id]


FORGERIES: dict[str, Callable[[Path, Path], None]] = {
    # A duplicated sentence: every claim on it is now ambiguous (stale, a drift).
    "transcript": lambda library, _: (library / "transcript.md").write_bytes(
        (library / "transcript.md").read_bytes() + SENTENCES[3].encode() + b"\n"
    ),
    "evidence": lambda _, out: (out / "evidence.jsonl").write_text(
        (out / "evidence.jsonl").read_text().replace('"line":2', '"line":3', 1)
    ),
    "wisdom": lambda _, out: (out / "wisdom.json").write_text(
        (out / "wisdom.json").read_text().replace('"quote": "', '"quote": "never ', 1)
    ),
    "entities": lambda _, out: (out / "entities.json").write_text(
        (out / "entities.json").read_text().replace('"line": ', '"line": 9', 1)
    ),
    "extraction": lambda _, out: (out / "extraction.json").write_text(
        (out / "extraction.json")
        .read_text()
        .replace('"transcript_digest": "sha256:', '"transcript_digest": "sha256:0', 1)
    ),
    "metadata": lambda library, _: (library / "metadata.json").write_text(
        (library / "metadata.json").read_text().replace('"title": "', '"title": "Renamed ', 1)
    ),
}


@pytest.mark.parametrize("forged", sorted(FORGERIES))
def test_a_forged_file_under_a_cached_item_changes_its_verdict(
    lib: Path, arkai: Runner, forged: str
) -> None:
    code, before, _ = run(arkai, lib)
    assert code == 0 and before["summary"]["ok"]
    library, out = item_folders(lib, 1)  # the review: it has entities and wisdom
    snapshot = {p: p.read_bytes() for p in (*library.iterdir(), *out.iterdir())}
    FORGERIES[forged](library, out)
    assert {p: p.read_bytes() for p in snapshot} != snapshot, "the forgery changed nothing"
    _, after = same_as_full(arkai, lib)
    assert after["items"][1] != before["items"][1]
    assert after["items"][0] == before["items"][0]
    if forged == "extraction":  # digest_ok turns false; the spans themselves still hold
        assert not after["items"][1]["digest_ok"]
    elif forged != "metadata":
        assert not after["summary"]["ok"]


def table_rows(kr: Path) -> tuple[Path, list[bytes]]:
    path = kr / itemtable.CACHE_DIR / f"{op.TABLE}.tsv"
    return path, path.read_bytes().split(b"\n")


def in_force(lines: list[bytes], cid: str) -> int:
    """The index of the item's line in force: its last (a save appends changed rows)."""
    return max(i for i, line in enumerate(lines) if line.split(b"\t")[1:2] == [cid.encode()])


def resealed(lines: list[bytes]) -> list[bytes]:
    """The lines with each appended batch's first line sealed again for the lines that follow
    it (what a forger who knows the format writes after changing a row of a batch)."""
    out = list(lines)
    for h, line in enumerate(out):
        fields = line.split(b"\t")
        if fields[1:3] == [b"", b"+"]:
            count = int(fields[3])
            digest = hashlib.sha256(b"".join(x + b"\n" for x in out[h + 1 : h + 1 + count]))
            out[h] = itemtable.seal_row(b"\t".join([*fields[1:4], digest.hexdigest().encode()]))
    return out


def test_a_damaged_cache_entry_is_ignored_and_recomputed(
    lib: Path, arkai: Runner, checks: list[str]
) -> None:
    _, first, metric = run(arkai, lib)
    item = list(Repo.at(lib).items())[1]
    path, lines = table_rows(lib)
    n = next(i for i, line in enumerate(lines) if item.id.encode() in line)
    # A forged verdict whose row no longer matches its digest, then a truncated row, then none.
    for damage in (
        lines[n].replace(b'"invalid":0', b'"invalid":1', 1),
        lines[n][:-7],
        b"",
    ):
        assert damage != lines[n]
        path.write_bytes(b"\n".join([*lines[:n], damage, *lines[n + 1 :]]))
        checks.clear()
        assert run(arkai, lib)[1:] == (first, metric)
        assert checks == [item.id]
    checks.clear()
    run(arkai, lib)
    assert checks == []  # rewritten intact: a hit again
    path.write_bytes(b"garbage\n" + path.read_bytes())  # another format: every row ignored
    checks.clear()
    assert run(arkai, lib)[1:] == (first, metric) and len(checks) == 2


def test_a_forged_verdict_passes_no_changed_file_and_not_ci(
    lib: Path, arkai: Runner, checks: list[str]
) -> None:
    """A row sealed with a valid digest is trusted only for the bytes it was made from: a
    verdict copied from another item, or kept from before a file changed, is not used; one
    forged for the current bytes fools the local cache, never `--full` (what CI runs)."""
    run(arkai, lib)
    review, garden = (i.id for i in list(Repo.at(lib).items())[::-1])
    library, out = item_folders(lib, 1)
    FORGERIES["evidence"](library, out)  # the review's evidence now fails
    code, forged, _ = run(arkai, lib)
    assert code == 1 and not forged["summary"]["ok"]
    path, lines = table_rows(lib)
    good = lines[in_force(lines, garden)]
    n = in_force(lines, review)
    # Seal the garden's clean verdict under the review's ID and key: the stat, key and
    # content ID no longer agree with the files, so the review is checked again and fails.
    mine = lines[n].split(b"\t")
    theirs = good.split(b"\t")
    lines[n] = itemtable.seal_row(b"\t".join([*mine[1:4], theirs[4]]))
    path.write_bytes(b"\n".join(resealed(lines)))
    checks.clear()
    assert run(arkai, lib)[0] == 1 and checks == [review]
    # A forger who rewrites the verdict for the current bytes (the counts of a clean run)
    # fools only the local cache: --full re-checks every span.
    _, lines = table_rows(lib)
    n = in_force(lines, review)
    row = lines[n].split(b"\t")
    verdict = json.loads(row[4])
    verdict["problems"] = []
    verdict["counts"]["evidence"] = {**verdict["counts"]["evidence"], "invalid": 0}
    row[4] = canonjson.dumps_line(verdict).rstrip("\n").encode()
    lines[n] = itemtable.seal_row(b"\t".join(row[1:]))  # a forger's seal
    path.write_bytes(b"\n".join(resealed(lines)))
    assert run(arkai, lib)[0] == 0  # the local cache believed it
    assert run(arkai, lib, "--full")[0] == 1


def test_a_moved_item_folder_is_reported_at_its_new_path(
    lib: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Moving a folder keeps every file's size, mtime, ctime and inode: the verdict's path
    must still be the new one (the paths are part of the stat digest and the key)."""
    monkeypatch.setattr(itemtable, "SETTLED_NS", -(10**12))  # stats trusted at once
    _, before, _ = run(arkai, lib)
    library, out = item_folders(lib, 0)
    moved = library.with_name(library.name + " moved")
    library.rename(moved)
    out.rename(out.with_name(moved.name))  # its outputs move along
    _, report = same_as_full(arkai, lib)
    assert report["summary"] == before["summary"]
    assert str(moved.relative_to(lib)) in [i["path"] for i in report["items"]]


def test_a_new_validator_version_rechecks_everything(
    lib: Path, arkai: Runner, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(arkai, lib)
    monkeypatch.setattr(op, "VALIDATOR_VERSION", op.VALIDATOR_VERSION + 1)
    checks.clear()
    run(arkai, lib)
    assert len(checks) == 2


def test_ci_rechecks_everything_from_scratch() -> None:
    """CI keeps the guarantee "every digest and span re-checked": it runs --full, in the
    project's script and in the one a new knowledge repo gets."""
    root = Path(__file__).resolve().parents[2]
    for script in ("scripts/ci/validate.sh", "src/arkai/scaffold/scripts/ci/validate.sh"):
        text = (root / script).read_text(encoding="utf-8")
        assert "if arkai validate --full; then" in text, script


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The content IDs whose files are read and hashed for the cache key."""
    seen: list[str] = []
    real = op.cache_key

    def spy(item: Any) -> str | None:
        seen.append(item.id)
        return real(item)

    monkeypatch.setattr(op, "cache_key", spy)
    return seen


def test_unchanged_stats_skip_reading_and_a_write_is_seen(
    lib: Path, arkai: Runner, checks: list[str], hashed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files written just now are "racy": their stats are not trusted yet, they are hashed.
    _, first, _ = run(arkai, lib)
    hashed.clear()
    run(arkai, lib)
    assert len(hashed) == 2
    monkeypatch.setattr(itemtable, "SETTLED_NS", -(10**12))  # as if the files were written long ago
    run(arkai, lib)
    checks.clear()
    hashed.clear()
    assert run(arkai, lib)[1] == first
    assert checks == [] and hashed == []  # a stat per file, nothing read
    library, out = item_folders(lib, 1)
    FORGERIES["wisdom"](library, out)
    code, forged = same_as_full(arkai, lib)
    assert code == 1 and forged["items"][1] != first["items"][1]
    review = list(Repo.at(lib).items())[1].id
    assert checks.count(review) == 2 and hashed == [review]  # incremental, then --full


def _logged(kr: Path) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The latest run's ``EvidenceValidated`` events (content ID, valid count) in order, and
    its ``items`` step's ``StepCompleted`` event."""
    from arkai.adapters import events

    log = kr / events.RUNS_DIR / events.list_runs(kr)[-1] / "events.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert (lines[0]["type"], lines[-1]["type"]) == ("RunStarted", "RunCompleted")
    step = [e for e in lines if e["type"] == "StepCompleted" and e["step"] == "items"]
    assert len(step) == 1
    got = [(e["content_id"], e["valid_count"]) for e in lines
           if e["type"] == "EvidenceValidated"]  # fmt: skip
    return got, step[0]


def test_events_for_items_checked_afresh_and_for_problems(
    lib: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``EvidenceValidated`` event per item checked afresh and per verdict reporting a
    problem, in the report's order and appended in batches; an unchanged clean item's kept
    verdict is not logged again (the log of a daily run does not grow with the library)."""
    monkeypatch.setattr(op, "EVENT_BATCH", 1)  # a batch per item, then the rest
    counts = ("checked", "kept", "logged")

    def expect(flags: tuple[str, ...], logged: list[int], checked: int) -> dict[str, Any]:
        _, report, _ = run(arkai, lib, *flags)
        got, step = _logged(lib)
        items = report["items"]
        assert got == [(items[k]["content_id"], items[k]["valid"]) for k in logged]
        assert [step[c] for c in counts] == [checked, len(items) - checked, len(logged)]
        return report

    expect((), [0, 1], 2)  # the first run: both checked
    expect((), [], 0)  # both kept, both clean: nothing logged
    library, _ = item_folders(lib, 1)
    FORGERIES["transcript"](library, library)  # item 1 now has stale claims
    stale = expect((), [1], 1)
    assert stale["items"][1]["stale"] > 0 and stale["items"][0]["stale"] == 0
    expect((), [1], 0)  # kept, but it reports a problem: logged on every run
    expect(("--full",), [0, 1], 2)


# -- the stage: planned from the manifests the stages before it wrote (issue 17) -------------


def stage(kr: Path, *, manifests: bool = True) -> op.ValidateResult:
    """The ``validate`` stage as ``dvc repro`` runs it: after the stages before it wrote the
    manifests of library/, extracted/ and condensed/ (``manifests``)."""
    return as_stage(kr, op.STAGE_FOLDERS,
                    lambda: op.validate(Repo.at(kr, stage=op.STAGE), report=Path("m.json")),
                    manifests=manifests)  # fmt: skip


def full(kr: Path) -> dict[str, Any]:
    return op.validate(Repo.at(kr), full=True).to_dict()


def test_the_stage_looks_at_changed_items_only_and_says_what_the_full_check_says(
    lib: Path, checks: list[str]
) -> None:
    first = stage(lib)
    assert len(checks) == 2 and first.summary["ok"]  # no complete run yet: every item
    checks.clear()
    assert stage(lib).to_dict() == first.to_dict() and checks == []
    ids = [i.id for i in Repo.at(lib).items()]
    # Each forgery in turn on the review (index 1): that item alone is looked at, and the
    # verdicts are exactly those of a check of every span from scratch.
    for name in sorted(FORGERIES):
        library, out = item_folders(lib, 1)
        FORGERIES[name](library, out)
        checks.clear()
        got = stage(lib).to_dict()
        assert checks == [ids[1]], name
        assert got == full(lib), name
        metric = json.loads((lib / "m.json").read_text(encoding="utf-8"))
        assert metric == got["summary"], name
    # An item removed, then one moved: the same, and the other item is not looked at.
    library, out = item_folders(lib, 1)
    moved = library.with_name(library.name + " moved")
    library.rename(moved)
    out.rename(out.with_name(moved.name))
    checks.clear()
    got = stage(lib).to_dict()
    assert checks == [ids[1]] and got == full(lib)
    assert str(moved.relative_to(lib)) in [i["path"] for i in got["items"]]
    shutil.rmtree(moved)
    shutil.rmtree(out.with_name(moved.name))
    checks.clear()
    got = stage(lib).to_dict()
    assert checks == [] and got == full(lib) and got["summary"]["items"] == 1


def test_the_stage_trusts_the_manifests_and_the_next_run_sees_the_change(
    lib: Path, arkai: Runner, checks: list[str]
) -> None:
    # The stage's dependencies are the manifests: a transcript edited after they were
    # written (`dvc repro --single-item validate`) is not looked at by the stage — the
    # command and CI look at every file — and is the next time they are written.
    stage(lib)
    library, out = item_folders(lib, 1)  # the review: its claims' sentence duplicated
    FORGERIES["transcript"](library, out)
    checks.clear()
    assert stage(lib, manifests=False).summary["ok"] and checks == []
    code, cli, _ = run(arkai, lib)
    assert code == 1 and not cli["summary"]["ok"]
    assert not stage(lib).summary["ok"]


def test_a_forged_or_damaged_sealed_result_makes_the_stage_look_at_everything(
    lib: Path,
) -> None:
    first = stage(lib).to_dict()
    path = lib / manifest.CACHE_DIR / f"{op.STAGE}.done.result"
    data = path.read_bytes()
    # A clean verdict given to a failing item, by someone who does not redo the seal's digest;
    # then a result whose digest was redone but is not a result.
    library, out = item_folders(lib, 1)
    FORGERIES["evidence"](library, out)
    manifest.write_all(lib, *op.STAGE_FOLDERS)
    stage(lib)
    for forged in (data, b"{}"):
        path.write_bytes(forged)
        if forged == b"{}":
            seal = lib / manifest.CACHE_DIR / f"{op.STAGE}.done.json"
            record = json.loads(seal.read_text(encoding="utf-8"))
            record["result"] = hashlib.sha256(forged).hexdigest()
            seal.write_text(json.dumps(record), encoding="utf-8")
        # Trusted, the clean verdict would pass the failing item (nothing changed since).
        got = stage(lib, manifests=False).to_dict()
        assert not got["summary"]["ok"] and got != first and got == full(lib)


def test_after_an_unreadable_item_the_stage_looks_at_everything_again(
    lib: Path, checks: list[str]
) -> None:
    # What could not be read (a malformed metadata.json, a linked transcript) is not kept:
    # the manifests follow links, so they may not say when it can be read again.
    stage(lib)
    library, _ = item_folders(lib, 0)
    meta = library / "metadata.json"
    good = meta.read_bytes()
    meta.write_text("{not json", encoding="utf-8")
    broken = stage(lib)
    assert broken.summary["errors"] == 1 and broken.to_dict() == full(lib)
    meta.write_bytes(good)
    transcript = library / "transcript.md"
    real = library.parent / "elsewhere.md"
    transcript.rename(real)
    transcript.symlink_to(real)
    linked = stage(lib)
    assert linked.summary["errors"] == 1 and linked.to_dict() == full(lib)
    # The link replaced by the same bytes: every manifest line as it was, and yet the stage
    # looks again and finds it readable.
    transcript.unlink()
    real.rename(transcript)
    assert stage(lib).summary["ok"] and stage(lib).to_dict() == full(lib)


def test_a_verdict_as_kept_holds_every_field_of_the_report(lib: Path) -> None:
    # The verdicts are kept field by field (not through asdict): a field added to a report,
    # its counts or its problems and not to the kept form fails here.
    library, out = item_folders(lib, 1)
    FORGERIES["evidence"](library, out)
    FORGERIES["wisdom"](library, out)
    reports = op.validate(Repo.at(lib), full=True).reports
    assert any(r.problems for r in reports)
    for rep in reports:
        kept = op._to_cache(rep)
        generic = {f.name: getattr(rep, f.name) for f in dataclasses.fields(rep)}
        generic["counts"] = {k: c.to_dict() for k, c in rep.counts.items()}
        generic["problems"] = [p.to_dict() for p in rep.problems]
        assert kept == generic
        assert op._report_of(json.loads(json.dumps(kept))) == rep
