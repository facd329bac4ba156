"""The beliefs step resumes from its persisted replay log (issue 17): a changed item in the
middle of the timeline gives the same files as a replay from scratch, and an unchanged library
loads no embedder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.adapters import itemtable, manifest
from arkai.adapters import memory as files
from arkai.adapters.repo import Repo
from arkai.cli import main
from arkai.memory import episodes
from arkai.memory import replay as rp
from arkai.memory.resume import LOG_FILE
from arkai.model.belief import Episode
from arkai.ops import memory as op
from arkai.search import embed
from tests.conftest import as_stage, init_repo
from tests.memory.test_memory_cli import JANUARY, MARCH, _date

FEBRUARY = """# Build caches, February

Remote build caches cut our clean build time to 11 minutes across the whole team.
The hive sensors report their weight to the server every ten minutes.
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("beliefs-inc")
    kr = base / "kr"
    init_repo(kr, git=False)
    notes = (("caches-january.md", JANUARY), ("caches-february.md", FEBRUARY),
             ("caches-march.md", MARCH))  # fmt: skip
    for name, text in notes:
        (base / name).write_text(text)
        assert main(["--repo", str(kr), "add", "--quiet", str(base / name)]) == 0
    assert main(["--repo", str(kr), "extract", "--quiet"]) == 0
    for title, day in (("January", "2026-01-15"), ("February", "2026-02-15"),
                       ("March", "2026-03-15")):  # fmt: skip
        _date(kr, title, day)
    return kr


@pytest.fixture
def kr(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(rp, "BLOCK_CELLS", 1)  # one-row blocks: resume at the changed episode
    monkeypatch.setattr(itemtable, "SETTLED_NS", -(10**12))  # trust stats of files written now
    path = tmp_path / "kr"
    shutil.copytree(built, path, symlinks=True)
    return path


def outputs(kr: Path) -> dict[str, bytes]:
    """The beliefs' files, with the statement store as its rows by key (the store's segment
    files are laid out by the order it grew in)."""
    from arkai.search.vectors import VectorStore

    store_dir = files.cache_dir(kr) / files.STORE
    folders = (files.beliefs_dir(kr), files.cache_dir(kr))
    got = {str(p.relative_to(kr)): p.read_bytes() for d in folders for p in d.rglob("*")
           if p.is_file() and store_dir not in p.parents}  # fmt: skip
    store = VectorStore.load(store_dir, "minilm-onnx")
    keys = store.keys
    rows = store.get(keys) if keys else []
    return got | {f"store:{k}": row.tobytes() for k, row in zip(keys, rows, strict=True)}


def from_scratch(kr: Path, tmp_path: Path) -> dict[str, bytes]:
    """The same inputs replayed from the first episode in a copy without beliefs/, the replay
    log, the beliefs' vectors and the statement store: every statement embedded again, in
    other batches (a statement's row is what the model gives for its text alone)."""
    copy = tmp_path / "scratch"
    shutil.copytree(kr, copy, symlinks=True)
    shutil.rmtree(files.beliefs_dir(copy))
    (files.cache_dir(copy) / LOG_FILE).unlink()
    (files.cache_dir(copy) / files.VECTORS).unlink()
    shutil.rmtree(files.cache_dir(copy) / files.STORE)
    (copy / itemtable.CACHE_DIR / f"{episodes.TABLE}.tsv").unlink(missing_ok=True)
    op.build(Repo.at(copy))
    return outputs(copy)


def reject_februarys_first_claim(kr: Path) -> None:
    """A person rejects February's first claim in review: the timeline changes from there."""
    evidence = next((kr / "extracted").rglob("*February*/evidence.jsonl"))
    claim = json.loads(evidence.read_text().splitlines()[0])
    (next((kr / "library").glob("*/*February*")) / "review.yaml").write_text(
        f"claims:\n  {claim['id']}: {{status: rejected}}\n"
    )


def test_a_changed_item_mid_timeline_equals_a_replay_from_scratch(kr: Path, tmp_path: Path) -> None:
    first = op.build(Repo.at(kr))
    assert first.resumed_at == 0 and first.episodes >= 6
    # A person rejects February's first claim: the timeline changes from February on.
    reject_februarys_first_claim(kr)
    again = op.build(Repo.at(kr))
    assert again.episodes == first.episodes - 1
    assert 0 < again.resumed_at < again.episodes  # January's outcome reused, the rest replayed
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_statement_store_made_by_another_recipe_is_embedded_again_whole(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later arkai that exports the model another way gives other rows: its first replay
    embeds every statement again — also when no statement is new — and never mixes rows."""
    first = op.build(Repo.at(kr))
    assert 0 < first.embedded <= first.episodes  # (two episodes may say the same)
    store_meta = files.cache_dir(kr) / files.STORE / "meta.json"
    assert json.loads(store_meta.read_text())["recipe"] == embed.OnnxMiniLMEmbedder.recipe
    monkeypatch.setattr(embed, "recipe_of", lambda _e: "onnx-int8-v999")
    # A rejected claim: the episodes change, every statement left is in the store already.
    reject_februarys_first_claim(kr)
    again = op.build(Repo.at(kr))
    assert again.episodes == first.episodes - 1
    meta = json.loads(store_meta.read_text())
    assert meta["recipe"] == "onnx-int8-v999"
    assert again.embedded == meta["count"] >= first.embedded - 1
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_build_logs_its_steps_with_their_peak_memory(kr: Path) -> None:
    """The run's events name the build's steps in order, each with the process's peak memory
    when it ended (what sets the stage's peak) and what it did."""
    from arkai.adapters.events import list_runs, read_events

    def steps() -> list[dict[str, Any]]:
        events = read_events(kr / ".arkai" / "runs" / list_runs(kr)[-1] / "events.jsonl")
        assert events[0]["pipeline"] == "beliefs"
        return [e for e in events if e["type"] == "StepCompleted"]

    for n in range(2):  # a replay from scratch, then one from the log
        if n:  # (an output edited since: the last write does not stand)
            with (files.beliefs_dir(kr) / files.BELIEFS).open("a") as fh:
                fh.write(" ")
        result = op.build(Repo.at(kr))
        done = steps()
        assert [e["step"] for e in done] == ["episodes", "vectors", "replay", "write"]
        peaks = [e["maxrss_mb"] for e in done]
        assert all(isinstance(m, float) and m > 0 for m in peaks) and peaks == sorted(peaks)
        assert done[0]["episodes"] == result.episodes
        assert done[1]["embedded"] == result.embedded
        assert (done[2]["beliefs"], done[2]["decided"]) == (result.beliefs, result.decided)
    assert result.decided == 0  # (the second build: every outcome from the log)
    kept = op.build(Repo.at(kr))  # nothing changed: the last write stands
    done = steps()
    assert [e["step"] for e in done] == ["episodes", "kept"]
    assert done[1]["beliefs"] == kept.beliefs == result.beliefs


def test_a_decision_replays_everything(kr: Path, tmp_path: Path) -> None:
    op.build(Repo.at(kr))
    state = op.load(Repo.at(kr))
    op.decide(Repo.at(kr), "forget", state.beliefs[0].id, "wrong")
    again = op.build(Repo.at(kr))
    assert again.resumed_at == 0
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_damaged_log_is_ignored(kr: Path, tmp_path: Path) -> None:
    op.build(Repo.at(kr))
    log = files.cache_dir(kr) / LOG_FILE
    log.write_bytes(log.read_bytes().replace(b'"r"', b'"c"', 1)[:-3])
    again = op.build(Repo.at(kr))
    assert again.resumed_at == 0
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_an_unchanged_library_loads_no_embedder(kr: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = op.build(Repo.at(kr))
    before = outputs(kr)
    monkeypatch.setattr(embed, "_instances", {})

    def refuse(name: str = "default") -> object:
        raise AssertionError("every statement is in the store: no model to load")

    monkeypatch.setattr(embed, "get_embedder", refuse)
    again = op.build(Repo.at(kr))
    assert again.embedded == 0 and again.resumed_at == first.episodes
    assert outputs(kr) == before


def test_a_build_lets_go_of_the_model_it_loaded(kr: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay after the statements are embedded never embeds: a model the build loaded is
    let go (the stage's peak memory), one the process held before is kept."""
    monkeypatch.setattr(embed, "_instances", {})
    assert op.build(Repo.at(kr)).embedded > 0
    assert embed.held_embedders() == set()
    held = op._embedder(Repo.at(kr))
    names = embed.held_embedders()
    shutil.rmtree(files.cache_dir(kr))  # every statement to embed again
    assert op.build(Repo.at(kr)).embedded > 0
    assert op._embedder(Repo.at(kr)) is held and embed.held_embedders() == names


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The items whose evidence and review are read and parsed into episodes."""
    seen: list[str] = []
    real = episodes.item_episodes

    def spy(item: Any) -> list[Episode]:
        seen.append(item.title)
        return real(item)

    monkeypatch.setattr(episodes, "item_episodes", spy)
    return seen


def test_only_a_changed_item_is_read_again(kr: Path, tmp_path: Path, parsed: list[str]) -> None:
    op.build(Repo.at(kr))
    assert len(parsed) == 3
    parsed.clear()
    op.build(Repo.at(kr))
    assert parsed == []  # a lstat per file, nothing parsed
    evidence = next((kr / "extracted").rglob("*February*/evidence.jsonl"))
    lines = evidence.read_text().splitlines(keepends=True)
    evidence.write_text("".join(lines[1:]))  # a claim removed by hand
    again = op.build(Repo.at(kr))
    assert parsed == ["Build caches, February"] and 0 < again.resumed_at < again.episodes
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_damaged_or_stale_episode_row_is_not_trusted(
    kr: Path, tmp_path: Path, parsed: list[str]
) -> None:
    op.build(Repo.at(kr))
    before = outputs(kr)
    table = kr / itemtable.CACHE_DIR / f"{episodes.TABLE}.tsv"
    lines = table.read_bytes().split(b"\n")
    february = next(i.id for i in Repo.at(kr).items() if "February" in i.title)
    n = next(i for i, line in enumerate(lines) if february.encode() in line)
    # A statement edited in the table: its digest no longer matches, the item is read again.
    row = lines[n].split(b"\t")
    forged = json.loads(row[4])
    forged[0][1] = "The hive robots forged this statement."
    lines[n] = b"\t".join([*row[:4], json.dumps(forged).encode()])
    table.write_bytes(b"\n".join(lines))
    parsed.clear()
    op.build(Repo.at(kr))
    assert parsed == ["Build caches, February"] and outputs(kr) == before
    # A row sealed again but kept from before the item's review changed: the review's lstat
    # and bytes differ from the row's, so the item is read again and the claim leaves.
    table.write_bytes(
        b"\n".join([*lines[:n], itemtable.seal_row(lines[n].partition(b"\t")[2]), *lines[n + 1 :]])
    )
    reject_februarys_first_claim(kr)
    parsed.clear()
    op.build(Repo.at(kr))
    assert parsed == ["Build caches, February"]
    assert b"hive robots" not in b"".join(outputs(kr).values())
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_the_stage_reads_episodes_without_their_quotes(kr: Path) -> None:
    """The replay reads no quote, so the stage's episodes carry none (fresh or from the table);
    the table keeps them for a read that wants them."""
    repo = Repo.at(kr)
    full = [e for item in repo.items() for e in episodes.item_episodes(item)]
    assert full and all(e.quote for e in full)
    for _ in range(2):  # items read fresh, then from the table
        bare = episodes.library_episodes(kr, repo.items(), quotes=False)
        assert bare == [Episode(e.id, e.statement, e.date, e.item, e.position) for e in full]
    assert episodes.library_episodes(kr, repo.items()) == full


# -- the stage: planned from the manifests the extract stage wrote (issue 17) ------------------


def stage_build(kr: Path, *, manifests: bool = True) -> op.BuildResult:
    """The ``beliefs`` stage as ``dvc repro`` runs it, after the extract stage wrote the
    manifests of library/ and extracted/ (``manifests``)."""
    return as_stage(kr, op.STAGE_FOLDERS, lambda: op.build(Repo.at(kr, stage=op.STAGE)),
                    manifests=manifests)  # fmt: skip


@pytest.fixture
def looked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The content IDs whose files the episodes' read looks at."""
    seen: list[str] = []
    real = episodes._of

    def spy(table: Any, item: Any, quotes: bool) -> Any:
        seen.append(item.id)
        return real(table, item, quotes)

    monkeypatch.setattr(episodes, "_of", spy)
    return seen


def _reject_first_claim(kr: Path, title: str) -> bytes:
    evidence = next((kr / "extracted").rglob(f"*{title}*/evidence.jsonl"))
    claim = json.loads(evidence.read_text().splitlines()[0])
    review = next((kr / "library").glob(f"*/*{title}*")) / "review.yaml"
    old = review.read_bytes() if review.exists() else b""
    review.write_text(f"claims:\n  {claim['id']}: {{status: rejected}}\n")
    return old


def test_the_stage_reads_the_changed_items_only_and_equals_a_replay_from_scratch(
    kr: Path, tmp_path: Path, looked: list[str]
) -> None:
    february = next(i.id for i in Repo.at(kr).items() if "February" in i.title)
    stage_build(kr)
    assert len(looked) == 3  # no complete read yet: every item
    looked.clear()
    stage_build(kr)
    assert looked == []
    _reject_first_claim(kr, "February")
    again = stage_build(kr)
    assert looked == [february] and again.resumed_at > 0
    assert outputs(kr) == from_scratch(kr, tmp_path)
    # An item removed: none looked at, its episodes gone.
    shutil.rmtree(next((kr / "library").glob("*/*March*")))
    shutil.rmtree(next((kr / "extracted").glob("*/*March*")))
    looked.clear()
    gone = stage_build(kr)
    assert looked == [] and gone.episodes < again.episodes
    shutil.rmtree(tmp_path / "scratch")
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_row_another_build_wrote_for_other_bytes_is_not_taken(
    kr: Path, tmp_path: Path, looked: list[str]
) -> None:
    # The stage's last read sealed February's key. `arkai memory build` (which looks at every
    # file) then keeps February's row for an edited review; the edit is undone, so every
    # manifest line is what the stage sealed — and the row in the table is not for these
    # bytes: the stage reads the library whole rather than take it.
    stage_build(kr)
    old = _reject_first_claim(kr, "February")
    op.build(Repo.at(kr))
    review = next((kr / "library").glob("*/*February*")) / "review.yaml"
    if old:
        review.write_bytes(old)
    else:
        review.unlink()
    looked.clear()
    stage_build(kr)
    assert len(looked) == 3
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_forged_seal_or_an_unreadable_item_makes_the_stage_read_everything(
    kr: Path, looked: list[str]
) -> None:
    first = stage_build(kr)
    result = kr / manifest.CACHE_DIR / f"{op.EPISODES_SEAL}.done.result"
    doc = json.loads(result.read_text(encoding="utf-8"))
    doc["items"] = doc["items"][:1]  # two items "forgotten": their episodes would be lost
    result.write_text(json.dumps(doc), encoding="utf-8")
    looked.clear()
    stage_build(kr)
    assert len(looked) == 3
    # A malformed metadata.json: that item is left out (as `arkai memory build` leaves it),
    # and the read after it looks at every item again.
    meta = next((kr / "library").glob("*/*January*")) / "metadata.json"
    good = meta.read_bytes()
    meta.write_text("{not json")
    looked.clear()
    broken = stage_build(kr)
    assert len(looked) == 2 and broken.episodes < first.episodes
    meta.write_bytes(good)
    looked.clear()
    assert stage_build(kr).episodes == first.episodes and len(looked) == 3


# -- a build with nothing changed keeps the last write ------------------------------------


def _refuse_replay(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the replays (and still run them)."""
    calls: list[int] = []
    real = op.replay

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(op, "replay", counted)
    return calls


def test_nothing_changed_keeps_the_last_write(kr: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same episodes, parameters, decisions, check and embedder, and every output as the
    last build wrote it: nothing is looked up, replayed or written, and the result reports
    the beliefs as the last build did."""
    first = op.build(Repo.at(kr))
    before = {p: (kr / p).stat().st_mtime_ns for p in files.written_digests(kr)}
    snapshot = outputs(kr)
    calls = _refuse_replay(monkeypatch)
    monkeypatch.setattr(op, "embed_statements", None)  # (calling it would fail)
    again = op.build(Repo.at(kr))
    assert calls == [] and outputs(kr) == snapshot
    assert {p: (kr / p).stat().st_mtime_ns for p in files.written_digests(kr)} == before
    assert (again.episodes, again.beliefs, again.by_status) == (
        first.episodes, first.beliefs, first.by_status)  # fmt: skip
    assert (again.embedded, again.changed, again.resumed_at, again.decided) == (
        0, False, first.episodes, 0)  # fmt: skip


def _edit(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-2] + (b"X" if data[-2:-1] != b"X" else b"Y") + data[-1:])


def _symlink(path: Path) -> None:
    outside = path.parent.parent.parent / f"outside-{path.name}"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


@pytest.mark.parametrize("name", sorted(files.written_digests(Path("/kr"))))
@pytest.mark.parametrize(
    "attack", [_edit, Path.unlink, _symlink], ids=["edited", "removed", "symlinked"]
)
def test_an_output_changed_since_is_written_again(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, attack: Any
) -> None:
    """Each file the replay writes, edited at the same size, removed or replaced by a link
    to a copy outside the library: the last write does not stand, the replay runs (from its
    log) and the files are a replay from scratch's."""
    op.build(Repo.at(kr))
    attack(kr / name)
    calls = _refuse_replay(monkeypatch)
    again = op.build(Repo.at(kr))
    assert calls == [1] and again.decided == 0
    assert not (kr / name).is_symlink()
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_a_byte_of_a_stored_statement_row_altered_is_embedded_again(kr: Path) -> None:
    """The statement store (index/beliefs/store, a DVC output pushed to a remote) with a byte
    of one row altered: the store loads (its keys are right) and nothing else changed, so the
    last write stood and the damage stayed. Now the segment is found not to be what its name
    says: its statements are embedded again and the files are as before."""
    store_dir = files.cache_dir(kr) / files.STORE
    op.build(Repo.at(kr))
    before = outputs(kr)
    seg = sorted(store_dir.glob("seg-*.npy"))[-1]
    good = seg.read_bytes()
    data = bytearray(good)
    data[-7] ^= 0x01
    seg.write_bytes(bytes(data))
    rows = int(np.load(seg, mmap_mode="r").shape[0])
    again = op.build(Repo.at(kr))
    assert again.embedded == rows
    assert seg.read_bytes() == good and outputs(kr) == before
    assert op.build(Repo.at(kr)).embedded == 0


def test_a_write_stopped_before_its_log_is_not_kept(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that wrote new outputs and was stopped before it saved its log, then the
    library put back as it was: the log's episodes match again, its outputs do not — the
    replay runs and the files are the first build's again (and a replay from scratch's)."""
    op.build(Repo.at(kr))
    first = outputs(kr)
    _date(kr, "February", "2026-04-15")  # February's claims after March's

    def stopped(*args: Any, **kw: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(op, "save_log", stopped)
        with pytest.raises(KeyboardInterrupt):
            op.build(Repo.at(kr))
    assert outputs(kr) != first
    _date(kr, "February", "2026-02-15")
    calls = _refuse_replay(monkeypatch)
    op.build(Repo.at(kr))
    assert calls == [1]
    assert outputs(kr) == first == from_scratch(kr, tmp_path)


def test_a_log_without_a_record_of_its_write_is_replayed(
    kr: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log saved without what was written (an earlier arkai's, or a forged record of the
    wrong shape) is used to resume, never to keep: the replay runs; the next build keeps."""
    from arkai.memory import resume

    op.build(Repo.at(kr))
    folder = files.cache_dir(kr)
    real = resume.load_saved

    for forged in (None, [], {"files": {}}, {"beliefs": "3", "by_status": {}, "files": {}}):

        def loaded(f: Path, key: str, forged: Any = forged) -> Any:
            got = real(f, key)
            return None if got is None else resume.SavedLog(got.log, forged)

        calls = _refuse_replay(monkeypatch)
        with monkeypatch.context() as m:
            m.setattr(op, "load_saved", loaded)
            again = op.build(Repo.at(kr))
        assert calls == [1] and again.decided == 0, forged
    key = json.loads((folder / LOG_FILE).read_bytes().split(b"\n", 1)[0])["key"]
    saved = real(folder, key)
    assert saved is not None and saved.written is not None
    assert saved.written["files"] == files.written_digests(kr)
    calls = _refuse_replay(monkeypatch)
    op.build(Repo.at(kr))
    assert calls == []


# -- the stage: episodes made from the last replay's files are not read ----------------------


@pytest.fixture
def bodies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The content IDs whose episodes are taken from the table's rows (parsed)."""
    seen: list[str] = []
    real = episodes._from_row

    def spy(content_id: str, *args: Any) -> Any:
        seen.append(content_id)
        return real(content_id, *args)

    monkeypatch.setattr(episodes, "_from_row", spy)
    return seen


def _last_steps(kr: Path) -> list[dict[str, Any]]:
    from arkai.adapters.events import list_runs, read_events

    events = read_events(kr / ".arkai" / "runs" / list_runs(kr)[-1] / "events.jsonl")
    return [e for e in events if e["type"] == "StepCompleted"]


def test_the_stage_keeps_the_last_write_without_reading_the_episodes(
    kr: Path, monkeypatch: pytest.MonkeyPatch, bodies: list[str], looked: list[str]
) -> None:
    first = stage_build(kr)
    snapshot = outputs(kr)
    calls = _refuse_replay(monkeypatch)
    bodies.clear()
    again = stage_build(kr)
    assert calls == [] and bodies == [] and outputs(kr) == snapshot
    assert (again.episodes, again.beliefs, again.by_status) == (
        first.episodes, first.beliefs, first.by_status)  # fmt: skip
    steps = _last_steps(kr)
    assert [e["step"] for e in steps] == ["episodes", "kept"]
    assert steps[0]["read"] is False and steps[0]["episodes"] == first.episodes
    # An item's transcript edited around its claims and extracted again: its evidence file
    # changed (it pins the transcript's digest), its episodes did not. Only it is looked at;
    # no other item's episodes are read, nothing is replayed.
    transcript = next((kr / "library").glob("*/*February*")) / "transcript.md"
    evidence = next((kr / "extracted").rglob("*February*/evidence.jsonl"))
    was = evidence.read_bytes()
    transcript.write_text(transcript.read_text(encoding="utf-8") + "\nOne more line.\n")
    assert main(["--repo", str(kr), "extract", "--quiet"]) == 0
    assert evidence.read_bytes() != was
    looked.clear()
    stage_build(kr)
    assert len(looked) == 1 and bodies in ([], looked) and calls == []  # (its own row only)
    assert outputs(kr) == snapshot


def test_the_stage_reads_and_replays_when_the_episodes_source_changed(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bodies: list[str]
) -> None:
    stage_build(kr)
    calls = _refuse_replay(monkeypatch)
    # A claim rejected: that item's key, so the source, changed.
    _reject_first_claim(kr, "February")
    bodies.clear()
    stage_build(kr)
    assert calls == [1] and len(set(bodies)) == 3  # every item's episodes, for the replay
    assert outputs(kr) == from_scratch(kr, tmp_path)
    # Imported episodes: part of the source too.
    files.write_imported(kr, [{"id": "imp-1", "statement": "Hives weigh more in June.",
                               "date": "2026-06-01", "type": "fact"}])  # fmt: skip
    calls.clear()
    stage_build(kr)
    assert calls == [1]
    shutil.rmtree(tmp_path / "scratch")
    assert outputs(kr) == from_scratch(kr, tmp_path)
    calls.clear()
    bodies.clear()
    stage_build(kr)
    assert calls == [] and bodies == []


def test_a_log_without_a_source_is_read_once_then_records_it(
    kr: Path, monkeypatch: pytest.MonkeyPatch, bodies: list[str]
) -> None:
    """A log saved before sources were recorded (or for episodes made from other files):
    the episodes are read and compared by fingerprint; equal, the write stands and the source
    is recorded, so the next run reads nothing."""
    from arkai.memory import resume

    stage_build(kr)
    folder = files.cache_dir(kr)
    key = json.loads((folder / LOG_FILE).read_bytes().split(b"\n", 1)[0])["key"]
    saved = resume.load_saved(folder, key)
    assert saved is not None and saved.written is not None and saved.written["source"]
    resume.save_log(folder, key, saved.log, {k: v for k, v in saved.written.items()
                                             if k != "source"})  # fmt: skip
    calls = _refuse_replay(monkeypatch)
    bodies.clear()
    stage_build(kr)
    assert calls == [] and len(bodies) == 3
    assert _last_steps(kr)[0].get("read") is None
    again = resume.load_saved(folder, key)
    assert again is not None and again.written == saved.written
    bodies.clear()
    stage_build(kr)
    assert calls == [] and bodies == []
    assert _last_steps(kr)[0]["read"] is False


def test_an_output_changed_since_is_written_again_by_the_stage(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without reading the episodes the stage still checks every output's bytes."""
    stage_build(kr)
    _edit(files.beliefs_dir(kr) / files.BELIEFS)
    calls = _refuse_replay(monkeypatch)
    stage_build(kr)
    assert calls == [1]
    assert outputs(kr) == from_scratch(kr, tmp_path)


def test_an_item_whose_files_have_no_key_leaves_the_source_unknown(
    kr: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item whose files could not be read safely has no key: nothing says its episodes are
    the last replay's, so they are read and compared (here they changed: replayed)."""
    real = episodes._key
    monkeypatch.setattr(episodes, "_key", lambda item: None if "February" in item.title
                        else real(item))  # fmt: skip
    op.build(Repo.at(kr))
    _reject_first_claim(kr, "February")
    calls = _refuse_replay(monkeypatch)
    op.build(Repo.at(kr))
    assert calls == [1]


# -- the beliefs stage's build started by the index stage, beside its own work (issue 17) -----


def _runs(kr: Path) -> list[list[dict[str, Any]]]:
    """Every run's events, oldest first."""
    from arkai.adapters.events import RUNS_DIR, list_runs, read_events

    return [read_events(kr / RUNS_DIR / r / "events.jsonl") for r in list_runs(kr)]


def _index_then_beliefs(
    kr: Path, shown: list[str] | None = None
) -> tuple[Any, list[list[dict[str, Any]]]]:
    """The index stage, then the beliefs stage, as ``dvc repro`` runs them (the extract and
    condense stages' manifests written first); the index stage's summary and the runs the
    two made. ``shown``: what the index stage's progress named."""
    from arkai.ops.index import STAGE, STAGE_FOLDERS, run_index

    def progress(done: int, total: int, what: str) -> None:
        if shown is not None:
            shown.append(what)

    before = len(_runs(kr))
    summary = as_stage(
        kr, STAGE_FOLDERS, lambda: run_index(Repo.at(kr, stage=STAGE), progress=progress)
    )
    stage_build(kr, manifests=False)
    return summary, _runs(kr)[before:]


def _steps(run: list[dict[str, Any]]) -> list[str]:
    return [e["step"] for e in run if e["type"] == "StepCompleted"]


def test_the_index_stage_builds_the_beliefs_beside_and_the_beliefs_stage_takes_that_build(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two CPUs the index stage forks the beliefs stage's build beside its own work; the
    beliefs stage then finds that replay standing (no episode read, nothing replayed or
    written), and the files are those the two stages write one after the other without a
    fork — built first, then after a claim was rejected. The beliefs run is started before
    the index run, so that the index run is the latest."""
    from arkai.adapters import beside

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")
    other = tmp_path / "other"
    shutil.copytree(kr, other, symlinks=True)
    for change in (False, True):
        if change:
            _reject_first_claim(kr, "February")
            _reject_first_claim(other, "February")
        monkeypatch.setenv(beside.ENV, "1")
        shown: list[str] = []
        summary, runs = _index_then_beliefs(kr, shown)
        ahead, index, stage = runs
        # The first build embeds every statement: its progress is the index stage's.
        assert ("embedding beliefs" in shown) is not change
        beliefs = json.loads((files.beliefs_dir(kr) / files.BELIEFS).read_text())["beliefs"]
        assert summary.beliefs_beside == f"{len(beliefs)} beliefs"
        assert ahead[0]["pipeline"] == "beliefs" and ahead[0]["started_by"] == "index"
        assert ahead[-1]["type"] == "RunCompleted" and ahead[-1]["status"] == "success"
        assert "replay" in _steps(ahead) and index[0]["pipeline"] == "index"
        assert _steps(stage) == ["episodes", "kept"]
        monkeypatch.setenv(beside.ENV, "0")
        summary, runs = _index_then_beliefs(other)
        assert summary.beliefs_beside is None and len(runs) == 2
        assert "replay" in _steps(runs[1])
        assert outputs(kr) == outputs(other)


def test_a_beliefs_build_beside_that_fails_leaves_the_index_stage_done_and_the_stage_says_why(
    kr: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arkai.adapters import beside
    from arkai.errors import LibraryError

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")
    decisions = files.decisions_path(kr)
    decisions.parent.mkdir(parents=True, exist_ok=True)
    decisions.write_text("remember: {}\n")
    from arkai.ops.index import STAGE, STAGE_FOLDERS, run_index

    summary = as_stage(kr, STAGE_FOLDERS, lambda: run_index(Repo.at(kr, stage=STAGE)))
    said = summary.beliefs_beside or ""
    assert said.startswith("failed: ") and "unknown section 'remember'" in said
    with pytest.raises(LibraryError, match="unknown section 'remember'"):
        stage_build(kr, manifests=False)
    ahead, index, stage = _runs(kr)[-3:]
    assert [r[-1]["status"] for r in (ahead, index, stage)] == ["failed", "success", "failed"]
    assert [r[0]["pipeline"] for r in (ahead, index, stage)] == ["beliefs", "index", "beliefs"]


def test_the_beliefs_build_beside_is_stopped_when_the_index_stage_fails(
    kr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index stage's error ends its beliefs child too (no process left writing): the
    child, still at work, is gone when the error reaches the caller."""
    import os
    import time

    from arkai.adapters import beside
    from arkai.ops import index as index_op
    from arkai.ops.index import STAGE, run_index

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")
    pid_file = tmp_path / "child.pid"

    def slow(*_: Any, **__: Any) -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(600)

    def failing(*_: Any, **__: Any) -> None:
        for _ in range(6000):  # the child has started (at most a minute)
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.01)
        raise RuntimeError("the index stage failed")

    monkeypatch.setattr(op, "build", slow)  # (the child is a fork: it has this one)
    monkeypatch.setattr(index_op, "_run_index", failing)
    with pytest.raises(RuntimeError, match="the index stage failed"):
        run_index(Repo.at(kr, stage=STAGE))
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


def test_no_fork_to_be_had_leaves_the_beliefs_build_to_its_stage(
    kr: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork failing (out of memory, a process limit) is not the index stage's failure: the
    run started for the build is ended as failed, and the beliefs stage replays itself."""
    import errno

    from arkai.adapters import beside

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")

    from arkai.ops import index as index_op

    class NoForkForBeliefs(beside.Beside[Any]):
        def start(self, report: Any = None) -> None:
            if "beliefs" in self.name:
                raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
            super().start(report)

    monkeypatch.setattr(index_op, "Beside", NoForkForBeliefs)
    summary, (ahead, index, stage) = _index_then_beliefs(kr)
    assert summary.beliefs_beside is None and index[-1]["status"] == "success"
    assert ahead[-1]["status"] == "failed" and "temporarily unavailable" in ahead[-1]["error"]
    assert "replay" in _steps(stage) and stage[-1]["status"] == "success"


@pytest.mark.parametrize("edit", ["frozen", "other command", "no stage", "not YAML"])
def test_no_beliefs_build_beside_where_dvc_would_not_run_the_stage(
    kr: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    """Only the beliefs stage as DVC will run it gets its build beside the index stage: not a
    frozen one (its outputs stay as they are), one running another command, none at all, or a
    ``dvc.yaml`` that cannot be read — then the index stage starts no child and logs no run."""
    import yaml

    from arkai.adapters import beside
    from arkai.ops.index import STAGE, STAGE_FOLDERS, run_index

    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU")
    pipeline = kr / "dvc.yaml"
    doc = yaml.safe_load(pipeline.read_text())
    if edit == "frozen":
        doc["stages"]["beliefs"]["frozen"] = True
    elif edit == "other command":
        doc["stages"]["beliefs"]["cmd"] = "python stages/my_beliefs.py"
    elif edit == "no stage":
        del doc["stages"]["beliefs"]
    pipeline.write_text(yaml.safe_dump(doc) if edit != "not YAML" else "stages: [unclosed\n")
    before = beliefs_files(kr)
    runs = len(_runs(kr))
    summary = as_stage(kr, STAGE_FOLDERS, lambda: run_index(Repo.at(kr, stage=STAGE)))
    assert summary.beliefs_beside is None
    assert [r[0]["pipeline"] for r in _runs(kr)[runs:]] == ["index"]
    assert beliefs_files(kr) == before


def beliefs_files(kr: Path) -> dict[str, bytes]:
    """The beliefs stage's output files as they are (none before its first build)."""
    folders = (files.beliefs_dir(kr), files.cache_dir(kr))
    return {str(p.relative_to(kr)): p.read_bytes() for d in folders if d.is_dir()
            for p in d.rglob("*") if p.is_file()}  # fmt: skip
