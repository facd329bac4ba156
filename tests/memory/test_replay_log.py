"""The persisted replay log (``index/beliefs/replay.json``) is used only when it can be trusted
to describe a replay: its digest, format and key match and it is well formed — a log that
points a candidate at a later episode or names an unknown action is ignored even when its
digest was recomputed to match."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.core.hashing import sha256_hex
from arkai.memory.replay import ReplayLog
from arkai.memory.resume import LOG_FILE, load_log, save_log

KEY = "sha256:" + "0" * 64


def a_log() -> ReplayLog:
    return ReplayLog(
        fingerprints=["f0", "f1", "f2"],
        actions=[("c",), ("r", "b0", 0.91), ("x", "b0", 0.75, "numbers: 5 / 9")],
        owners=["b0", "b0", "b2"],
        cands=[[], [0], [1, 0]],
        kth=[0, 0, 0],
    )


def _decoded(folder: Path) -> tuple[dict[str, Any], dict[str, Any], list[int]]:
    """The saved log's header, its JSON line and its candidates array."""
    head, _, body = (folder / LOG_FILE).read_bytes().partition(b"\n")
    meta, _, tail = body.partition(b"\n")
    return json.loads(head), json.loads(meta), np.frombuffer(tail, dtype="<i4").tolist()


def _seal(folder: Path, header: dict[str, Any], body: bytes, fmt: int) -> None:
    """Write ``body`` under ``header`` with a matching digest, as a careful forger would."""
    header = {**header, "format": fmt, "digest": "sha256:" + sha256_hex(body)}
    (folder / LOG_FILE).write_bytes(json.dumps(header).encode() + b"\n" + body)


def forge(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """The saved log rewritten as format 2 (its candidates JSON lists), changed."""
    header, meta, flat = _decoded(folder)
    counts = meta.pop("cand_counts")
    ends = list(itertools.accumulate(counts))
    data = {**meta, "cands": [flat[e - c : e] for c, e in zip(counts, ends, strict=True)]}
    change(data)
    _seal(folder, header, json.dumps(data, sort_keys=True, separators=(",", ":")).encode(), 2)


def forge_array(folder: Path, change: Callable[[dict[str, Any], list[int]], bytes | None]) -> None:
    """The saved log (format 3) with its JSON line or candidates changed (``change`` may
    return the array's bytes itself)."""
    header, meta, flat = _decoded(folder)
    raw = change(meta, flat)
    tail = raw if raw is not None else np.array(flat, dtype="<i4").tobytes()
    _seal(folder, header, json.dumps(meta).encode() + b"\n" + tail, 3)


def test_a_saved_log_loads_back_equal(tmp_path: Path) -> None:
    save_log(tmp_path, KEY, a_log())
    assert load_log(tmp_path, KEY) == a_log()
    assert load_log(tmp_path, "sha256:" + "1" * 64) is None  # another key: other params


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["cands"].__setitem__(1, [1]),  # a candidate that is not earlier
        lambda d: d["cands"].__setitem__(2, [0, 7]),  # past the end
        lambda d: d["cands"].__setitem__(1, [-1]),
        lambda d: d["cands"].__setitem__(1, [0.0]),  # numbers of episodes only
        lambda d: d["cands"].__setitem__(1, ["0"]),
        lambda d: d["cands"].__setitem__(1, [True]),
        lambda d: d["cands"].__setitem__(1, 0),
        lambda d: d.__setitem__("cands", {"1": [0]}),
        lambda d: d["actions"].__setitem__(1, ["z", "b0"]),  # no such action
        lambda d: d["actions"].__setitem__(1, []),
        lambda d: d["actions"].__setitem__(1, [5]),
        lambda d: d["actions"].__setitem__(1, ["r", "b0"]),  # a reinforcement without its score
        lambda d: d["actions"].__setitem__(1, ["r", 7, 0.9]),
        lambda d: d["actions"].__setitem__(0, ["c", "extra"]),
        lambda d: d["owners"].pop(),  # lengths differ
        lambda d: d["kth"].append(3),
        lambda d: d.pop("owners"),
        lambda d: d.__setitem__("kth", "many"),
    ],
)
def test_a_forged_log_with_a_matching_digest_is_ignored(
    tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    save_log(tmp_path, KEY, a_log())
    forge(tmp_path, change)
    assert load_log(tmp_path, KEY) is None


def test_an_unchanged_log_rewritten_as_format_2_is_read(tmp_path: Path) -> None:
    """The format before the candidates array (JSON lists) is still read, equal."""
    save_log(tmp_path, KEY, a_log())
    forge(tmp_path, lambda d: None)
    assert load_log(tmp_path, KEY) == a_log()


@pytest.mark.parametrize(
    "change",
    [
        lambda m, f: f.__setitem__(0, 1) or None,  # cands[1] = [1]: not earlier
        lambda m, f: f.__setitem__(2, 7) or None,  # past the end
        lambda m, f: f.__setitem__(0, -1) or None,
        lambda m, f: m["cand_counts"].__setitem__(2, 1) or None,  # counts and array differ
        lambda m, f: m["cand_counts"].__setitem__(1, 2) or None,
        lambda m, f: m["cand_counts"].__setitem__(0, -1) or None,
        lambda m, f: m["cand_counts"].__setitem__(1, 1.0) or None,
        lambda m, f: m["cand_counts"].__setitem__(1, True) or None,
        lambda m, f: m.__setitem__("cand_counts", {"1": 1}) or None,
        lambda m, f: m["cand_counts"].pop() and None,  # fewer rows than episodes
        lambda m, f: np.array(f, dtype="<i4").tobytes()[:-1],  # not whole numbers
        lambda m, f: np.array(f, dtype="<i4").tobytes() + b"\0\0\0\0",
        lambda m, f: m["actions"].__setitem__(1, ["z", "b0"]) or None,
        lambda m, f: m["kth"].append(3) or None,
    ],
)
def test_a_forged_candidates_array_with_a_matching_digest_is_ignored(
    tmp_path: Path, change: Callable[[dict[str, Any], list[int]], bytes | None]
) -> None:
    save_log(tmp_path, KEY, a_log())
    forge_array(tmp_path, lambda m, f: None)
    assert load_log(tmp_path, KEY) == a_log()  # the forger's encoding is the saver's
    forge_array(tmp_path, change)
    assert load_log(tmp_path, KEY) is None


def test_a_torn_or_missing_log_is_ignored(tmp_path: Path) -> None:
    assert load_log(tmp_path, KEY) is None
    save_log(tmp_path, KEY, a_log())
    raw = (tmp_path / LOG_FILE).read_bytes()
    (tmp_path / LOG_FILE).write_bytes(raw[: len(raw) // 2])
    assert load_log(tmp_path, KEY) is None
    (tmp_path / LOG_FILE).write_bytes(b"\xff\xfe not json")
    assert load_log(tmp_path, KEY) is None


def test_candidates_read_back_share_one_object_per_number(tmp_path: Path) -> None:
    """Read back, a number named by many episodes' candidates is one object (the log of
    80,000 episodes names millions), and the log equals the one saved."""
    many = ReplayLog(
        fingerprints=[f"f{i}" for i in range(400)],
        actions=[("c",)] * 400,
        owners=[f"b{i}" for i in range(400)],
        cands=[[] if i < 300 else [299, 298] for i in range(400)],
        kth=[0] * 400,
    )
    save_log(tmp_path, KEY, many)
    got = load_log(tmp_path, KEY)
    assert got == many and got is not None
    assert got.cands[300][0] is got.cands[399][0] and got.cands[301][1] is got.cands[350][1]
