"""``beliefs/`` and the beliefs' vectors are written in pieces, never held whole, with the bytes
the whole document had: ``beliefs.json`` as ``json.dumps(indent=1, sort_keys=True)`` of it,
``changes.jsonl`` a line a change, ``vectors.npy`` as ``np.save`` writes it, and the recall
index mirroring ``beliefs.json`` (its digest)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from arkai.adapters import memory as files
from arkai.model.belief import Belief, Change

HEADER = {"format": 1, "as_of": "2026-05-01", "episodes": 9, "contradiction_check": "builtin",
          "params": {"reinforce": 0.85, "half_life_days": 30.0}}  # fmt: skip


def beliefs(n: int) -> list[Belief]:
    return [
        Belief(id=f"{i:016x}", statement=f"Claim «{i}»\nwith a \"quote\" and a tab\t.",
               type="fact" if i % 3 else "insight", confidence=0.6 + i / 1000, status="active",
               created="2026-01-01", reinforced="2026-02-0" + str(1 + i % 9),
               episodes=tuple(f"e{i}-{k}" for k in range(i % 4 + 1)), items=("a", "b")[: i % 3],
               contradicted_by=("x",) if i % 5 == 0 else (), pinned=i % 7 == 0)
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, 2, 1023, 1024, 1025, 2500])
def test_the_files_have_the_bytes_of_the_whole_document(tmp_path: Path, n: int) -> None:
    got = beliefs(n)
    changes = [Change(k + 1, "create", b.id, b.created, episode=b.episodes[0], confidence=0.6)
               for k, b in enumerate(got)] * 3  # fmt: skip
    rows = np.random.default_rng(n).normal(size=(n, 8)).astype(np.float32)
    assert files.write_state(tmp_path, HEADER, got, changes, rows)
    doc = HEADER | {"beliefs": [b.to_dict() for b in got]}
    want = (json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()
    written = (tmp_path / "beliefs" / "beliefs.json").read_bytes()
    assert written == want
    lines = (tmp_path / "beliefs" / "changes.jsonl").read_text(encoding="utf-8").splitlines()
    assert [Change.from_dict(json.loads(ln)) for ln in lines] == changes
    buf = io.BytesIO()
    np.save(buf, rows, allow_pickle=False)
    assert (files.cache_dir(tmp_path) / "vectors.npy").read_bytes() == buf.getvalue()
    meta = json.loads((files.cache_dir(tmp_path) / "recall.json").read_bytes())
    assert meta["beliefs_sha256"] == hashlib.sha256(want).hexdigest()
    index = files.read_recall_index(tmp_path)
    assert index is not None and index.beliefs(list(range(n))[::-1]) == got[::-1]
    assert files.read_state(tmp_path) == (HEADER, got)
    assert not files.write_state(tmp_path, HEADER, got, changes, rows)  # the same bytes


def test_the_change_log_is_read_a_line_at_a_time(tmp_path: Path) -> None:
    """``iter_changes`` gives the changes one at a time from the open file (its bytes are
    never whole in memory: a 20 MB log read through peaks far below its size); a bad line
    or byte is an error naming the file with the line or the byte's offset; a missing log is
    no changes; a link in its place is refused."""
    import os
    import tracemalloc

    from arkai.errors import LibraryError

    folder = tmp_path / "beliefs"
    folder.mkdir()
    log = folder / "changes.jsonl"
    line = json.dumps({"seq": 1, "kind": "reinforce", "belief": "b" * 16, "date": "2026-01-01",
                       "episode": "e" * 40, "note": "n" * 60}) + "\n"  # fmt: skip
    count = 20_000_000 // len(line) + 1
    with log.open("w") as fh:
        fh.writelines(line for _ in range(count))
    assert log.stat().st_size >= 20_000_000
    tracemalloc.start()
    try:
        seen = sum(1 for c in files.iter_changes(tmp_path) if c.kind == "reinforce")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == count
    assert peak < 4_000_000, peak

    log.write_bytes(line.encode() * 2 + b'{"seq": 3, "kind"\n' + line.encode())
    with pytest.raises(LibraryError, match=r"changes\.jsonl:3: not a belief change"):
        list(files.iter_changes(tmp_path))
    log.write_bytes(line.encode() * 2 + b"\xff" + line.encode())
    with pytest.raises(LibraryError, match=rf"changes\.jsonl: not valid UTF-8 .* at byte "
                                           rf"{2 * len(line)}\)"):  # fmt: skip
        list(files.iter_changes(tmp_path))
    log.unlink()
    assert list(files.iter_changes(tmp_path)) == [] == files.read_changes(tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(line)
    os.symlink(outside, log)
    with pytest.raises(LibraryError, match=r"changes\.jsonl"):
        list(files.iter_changes(tmp_path))


@pytest.mark.parametrize("seed", range(10))
def test_a_change_line_is_the_canonical_line_of_its_dict(seed: int) -> None:
    """Each change's line of ``changes.jsonl``, made field by field, is the canonical line of
    its dict — for every field present or absent, strings JSON must escape, and the values no
    change holds but the encoder writes (ints, NaN, infinities, non-strings)."""
    import math
    import random

    from arkai.adapters.memory import _change_line
    from arkai.core.canonjson import dumps_line
    from arkai.model.belief import Change

    rnd = random.Random(seed)
    texts = ["b" * 16, "", 'a "quoted" \\ back', "line\nbreak\ttab\x01", "Zoë ✓ 𝄞", "\u2028"]
    numbers = [None, 0.6, 1.0, 0.1 + 0.2, 1e-7, 123456789.125, -0.0, 5e300,
               math.nan, math.inf, -math.inf, 1, True]  # fmt: skip
    for _ in range(300):
        c = Change(
            seq=rnd.choice([1, 80_000, 2**40, True]) if rnd.random() < 0.1 else rnd.randint(1, 9),
            kind=rnd.choice(["create", "reinforce", *texts]),
            belief=rnd.choice(texts),
            date=rnd.choice(["2024-01-02", *texts]),
            episode=rnd.choice([None, *texts]),
            other=rnd.choice([None, *texts, 7]),  # type: ignore[arg-type]
            confidence=rnd.choice(numbers),
            similarity=rnd.choice(numbers),
            note=rnd.choice([None, *texts]),
        )
        assert _change_line(c) == dumps_line(c.to_dict()), c


def _folded_here(root: Path) -> dict[str, tuple[int, list[tuple[str, str, str | None]]]]:
    """Each belief's history folded from the change log as written (its lines parsed one by
    one, no cache): count and latest steps."""
    out: dict[str, tuple[int, list[tuple[str, str, str | None]]]] = {}
    for c in files.iter_changes(root):
        for bid in dict.fromkeys(b for b in (c.belief, c.other) if b is not None):
            count, steps = out.get(bid, (0, []))
            out[bid] = (count + 1, [*steps, (c.date, c.kind, c.note)][-files.HISTORY_LATEST :])
    return out


def _plain(got: dict[str, files.History] | None) -> object:
    return (
        None
        if got is None
        else {b: (h.count, [tuple(s) for s in h.latest]) for b, h in got.items()}
    )


@pytest.mark.parametrize("seed", range(6))
def test_each_beliefs_history_mirrors_the_change_log_it_was_folded_from(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write_state`` keeps each belief's history (count, latest ``HISTORY_LATEST`` steps) in
    ``index/beliefs/history.json`` with the digest of the ``changes.jsonl`` it wrote, and
    ``read_histories`` gives exactly what folding the written log line by line gives — a
    change naming another belief counts for both, a belief naming itself once."""
    import random

    monkeypatch.setattr(files, "HISTORY_BATCH", (1, 2, 3, 4096)[seed % 4])
    rnd = random.Random(seed)
    ids = [f"{i:016x}" for i in range(rnd.randint(1, 12))]
    changes = [
        Change(seq=n, kind=rnd.choice(["create", "reinforce", "invalidate", "Zoë ✓"]),
               belief=rnd.choice(ids), date=f"2026-0{rnd.randint(1, 9)}-1{rnd.randint(0, 9)}",
               other=rnd.choice([None, None, *ids]),
               note=rnd.choice([None, "", "a \"note\"\nwith a break", f"change {n}"]))
        for n in range(rnd.choice([0, 1, 9, 10, 11, 400]))
    ]  # fmt: skip
    rows = np.zeros((len(ids), 4), dtype=np.float32)
    files.write_state(tmp_path, HEADER, beliefs(len(ids)), changes, rows)
    got = files.read_histories(tmp_path)
    assert got is not None
    assert _plain(got) == _folded_here(tmp_path)
    assert _plain(files.histories(files.iter_changes(tmp_path))) == _plain(got)
    for h in got.values():  # appended to as the fold does: still the latest HISTORY_LATEST
        count = h.count
        h.add(files.Step("2027-01-01", "reinforce", None))
        assert h.count == count + 1 and len(h.latest) == min(count + 1, files.HISTORY_LATEST)
        assert tuple(h.latest[-1]) == ("2027-01-01", "reinforce", None)
    # Written a batch of beliefs at a time: the bytes of the whole document's compact dump.
    log = (tmp_path / "beliefs" / "changes.jsonl").read_bytes()
    doc = {"changes_sha256": hashlib.sha256(log).hexdigest(), "latest": files.HISTORY_LATEST,
           "beliefs": {b: [h.count, [list(s) for s in h.latest]]
                       for b, h in files.histories(changes).items()}}  # fmt: skip
    want = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert (files.cache_dir(tmp_path) / "history.json").read_bytes() == want


def test_a_history_that_does_not_mirror_the_log_is_not_read(tmp_path: Path) -> None:
    """``read_histories`` is None — the reader folds the log itself — when ``history.json`` is
    missing, damaged or of another form, or names another change log (the log edited by
    hand, a line added, removed or changed, or ``history.json`` of an older log left behind);
    and when the log is missing or a link out of the library."""
    import os

    changes = [Change(seq=n, kind="reinforce", belief="b" * 16, date="2026-01-02",
                      note=f"change {n}") for n in range(14)]  # fmt: skip
    rows = np.zeros((1, 4), dtype=np.float32)
    files.write_state(tmp_path, HEADER, beliefs(1), changes, rows)
    side = files.cache_dir(tmp_path) / "history.json"
    log = tmp_path / "beliefs" / "changes.jsonl"
    good, log_bytes = side.read_bytes(), log.read_bytes()
    assert files.read_histories(tmp_path) is not None
    doc = json.loads(good)
    (count, steps) = doc["beliefs"]["b" * 16]
    assert count == 14 and [s[2] for s in steps] == [f"change {n}" for n in range(4, 14)]

    def forged(**change: object) -> bytes:
        return json.dumps(doc | change).encode()

    bad_forms = [
        b"", b"{", b"[]", b"\xff\xfe", forged(latest=files.HISTORY_LATEST + 1),
        forged(changes_sha256=None), forged(beliefs=[]),
        forged(beliefs={"b" * 16: [14, steps[:-1]]}),  # fewer steps than kept
        forged(beliefs={"b" * 16: [3, steps]}),  # more steps than its count
        forged(beliefs={"b" * 16: [14.0, steps]}),
        forged(beliefs={"b" * 16: [14, [*steps[:-1], ["2026-01-02", "reinforce", 7]]]}),
        forged(beliefs={"b" * 16: [14, [*steps[:-1], ["2026-01-02", "reinforce"]]]}),
        forged(beliefs={"b" * 16: "x"}),
    ]  # fmt: skip
    for data in bad_forms:
        side.write_bytes(data)
        assert files.read_histories(tmp_path) is None, data
    side.write_bytes(good)
    assert files.read_histories(tmp_path) is not None
    # The log edited by hand: a line added, one removed, one changed in place (same size).
    for edited in (
        log_bytes + log_bytes.splitlines(keepends=True)[0],
        b"".join(log_bytes.splitlines(keepends=True)[1:]),
        log_bytes.replace(b"change 13", b"change 31"),
    ):
        log.write_bytes(edited)
        assert files.read_histories(tmp_path) is None
    # An older history left behind after a newer log: not read either.
    log.write_bytes(log_bytes)
    assert files.read_histories(tmp_path) is not None
    files.write_state(tmp_path, HEADER, beliefs(1), changes[:5], rows)
    newer = side.read_bytes()
    side.write_bytes(good)
    assert files.read_histories(tmp_path) is None
    side.write_bytes(newer)
    assert _plain(files.read_histories(tmp_path)) == _folded_here(tmp_path)
    # No log, or a link in its place to the very bytes the history mirrors: none.
    mirrored = log.read_bytes()
    log.unlink()
    assert files.read_histories(tmp_path) is None
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    outside.write_bytes(mirrored)
    os.symlink(outside, log)
    assert files.read_histories(tmp_path) is None
    side.unlink()
    assert files.read_histories(tmp_path) is None
