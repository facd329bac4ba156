"""The persisted replay log (``index/beliefs/replay.json``) is used only when it can be trusted
to describe a replay: its digest, format and key match and it is well formed — a log that
points a candidate at a later episode or names an unknown action or belief is ignored even
when its digest was recomputed to match. Read, it is arrays over the file's bytes, not Python
objects per episode."""

from __future__ import annotations

import hashlib
import itertools
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.memory.replay import CANDIDATES, ReplayLog
from arkai.memory.resume import _ARRAYS, LOG_FILE, load_log, save_log

KEY = "sha256:" + "0" * 64


def a_log() -> ReplayLog:
    return ReplayLog.of(
        fingerprints=[bytes([i]) * 16 for i in range(3)],
        actions=[("c",), ("r", "b0", 0.91), ("x", "b0", 0.75, "numbers: 5 / 9")],
        owners=["b0", "b0", "b2"],
        cands=[[], [0], [1, 0]],
        kth=[0, 0, 0],
    )


def lists(log: ReplayLog) -> dict[str, Any]:
    """The log as the JSON of formats 2 and 3 held it."""
    n = range(len(log))
    return {
        "fingerprints": [log.fingerprints[o : o + 1].tobytes().hex() for o in n],
        "actions": [list(log.action(o)) for o in n],
        "owners": [log.owner(o) for o in n],
        "cands": [log.candidates(o) for o in n],
        "kth": log.kth.tolist(),
    }


def _seal(folder: Path, header: dict[str, Any], body: bytes, fmt: int) -> None:
    """Write ``body`` under ``header`` with a matching digest, as a careful forger would."""
    header = {**header, "format": fmt, "digest": "sha256:" + hashlib.sha256(body).hexdigest()}
    (folder / LOG_FILE).write_bytes(json.dumps(header).encode() + b"\n" + body)


def forge(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """``a_log`` written as format 2 (everything JSON), changed."""
    data = lists(a_log())
    change(data)
    _seal(folder, {"key": KEY}, json.dumps(data, sort_keys=True).encode(), 2)


def forge_array(folder: Path, change: Callable[[dict[str, Any], list[int]], bytes | None]) -> None:
    """``a_log`` written as format 3 (its candidates an array after the JSON line), its JSON
    line or candidates changed (``change`` may return the array's bytes itself)."""
    meta = lists(a_log())
    cands = meta.pop("cands")
    meta["cand_counts"] = [len(c) for c in cands]
    flat = list(itertools.chain.from_iterable(cands))
    raw = change(meta, flat)
    tail = raw if raw is not None else np.array(flat, dtype="<i4").tobytes()
    _seal(folder, {"key": KEY}, json.dumps(meta).encode() + b"\n" + tail, 3)


def decoded(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """The saved (format 4) log's header, JSON line and arrays (writable copies)."""
    head, _, body = (folder / LOG_FILE).read_bytes().partition(b"\n")
    header = json.loads(head)
    meta_line, _, rest = body.partition(b"\n")
    n, at, arrays = header["episodes"], 0, {}
    for name, dtype, per in _ARRAYS:
        arr = np.frombuffer(rest, dtype=dtype, count=n * per, offset=at).copy()
        arrays[name] = arr.reshape(n, per) if per > 1 else arr
        at += arr.nbytes
    assert at == len(rest)
    return header, json.loads(meta_line), arrays


Change = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Any]


def forge4(folder: Path, change: Change) -> None:
    """The saved log (format 4) with its header, JSON line or arrays changed, sealed again."""
    header, meta, arrays = decoded(folder)
    change(header, meta, arrays)
    body = json.dumps(meta).encode() + b"\n"
    body += b"".join(np.ascontiguousarray(arrays[name], dtype=dtype).tobytes()
                     for name, dtype, _ in _ARRAYS)  # fmt: skip
    body += arrays.get("extra", b"")
    _seal(folder, header, body[: arrays["cut"]] if "cut" in arrays else body, 4)


def test_a_saved_log_loads_back_equal(tmp_path: Path) -> None:
    save_log(tmp_path, KEY, a_log())
    got = load_log(tmp_path, KEY)
    assert got == a_log() and got is not None
    assert [got.action(o) for o in range(3)] == [
        ("c",), ("r", "b0", 0.91), ("x", "b0", 0.75, "numbers: 5 / 9"),
    ]  # fmt: skip
    assert [got.candidates(o) for o in range(3)] == [[], [0], [1, 0]]
    assert load_log(tmp_path, "sha256:" + "1" * 64) is None  # another key: other params


def test_a_log_of_no_episodes_loads_back(tmp_path: Path) -> None:
    empty = ReplayLog.of([], [], [], [], [])
    save_log(tmp_path, KEY, empty)
    got = load_log(tmp_path, KEY)
    assert got == empty and got is not None and len(got) == 0


def test_logs_differ_where_an_episode_does() -> None:
    base = lists(a_log())
    for field, o, value in [("actions", 1, ["r", "b0", 0.92]), ("owners", 2, "b0"),
                            ("cands", 2, [0, 1]), ("kth", 1, 3)]:  # fmt: skip
        data = {k: list(v) for k, v in base.items()}
        data[field][o] = value
        other = ReplayLog.of([bytes.fromhex(f) for f in data.pop("fingerprints")], **data)
        assert other != a_log(), field


def _set(name: str, where: Any, value: Any) -> Callable[[Any, Any, dict[str, Any]], None]:
    return lambda h, m, a: a[name].__setitem__(where, value)


@pytest.mark.parametrize(
    "change",
    [
        _set("cands", (1, 0), 1),  # a candidate that is not earlier
        _set("cands", (2, 1), 7),  # past the end
        _set("cands", (1, 0), -2),
        _set("cands", (2, 0), -1),  # padding before a candidate
        _set("kinds", 1, 9),  # no such action
        _set("targets", 0, 0),  # a creation naming a belief
        _set("targets", 1, 5),  # no such belief
        _set("targets", 1, -1),  # a reinforcement naming none
        _set("owners", 2, 3),
        _set("owners", 2, -1),
        _set("scores", 1, float("nan")),
        _set("scores", 0, 0.5),  # a creation with a similarity
        lambda h, m, a: m.__setitem__("notes", {}),  # a conflict without its note
        lambda h, m, a: m["notes"].__setitem__("1", "why"),  # a note on a reinforcement
        lambda h, m, a: m.__setitem__("ids", [1, 2]),
        lambda h, m, a: m.pop("ids"),
        lambda h, m, a: h.__setitem__("episodes", 4),  # more rows than the arrays hold
        lambda h, m, a: h.__setitem__("episodes", 2),
        lambda h, m, a: h.__setitem__("episodes", "3"),
        lambda h, m, a: h.__setitem__("width", 16),
        lambda h, m, a: a.__setitem__("extra", b"\0"),
        lambda h, m, a: a.__setitem__("cut", -1),
    ],
)
def test_a_forged_log_with_a_matching_digest_is_ignored(
    tmp_path: Path, change: Callable[[Any, Any, dict[str, Any]], None]
) -> None:
    save_log(tmp_path, KEY, a_log())
    forge4(tmp_path, lambda h, m, a: None)
    assert load_log(tmp_path, KEY) == a_log()  # the forger's encoding is the saver's
    forge4(tmp_path, change)
    assert load_log(tmp_path, KEY) is None


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
        lambda d: d["cands"].__setitem__(2, [0] * (CANDIDATES + 1)),
        lambda d: d.__setitem__("cands", {"1": [0]}),
        lambda d: d["actions"].__setitem__(1, ["z", "b0"]),  # no such action
        lambda d: d["actions"].__setitem__(1, []),
        lambda d: d["actions"].__setitem__(1, [5]),
        lambda d: d["actions"].__setitem__(1, ["r", "b0"]),  # a reinforcement without its score
        lambda d: d["actions"].__setitem__(1, ["r", 7, 0.9]),
        lambda d: d["actions"].__setitem__(0, ["c", "extra"]),
        lambda d: d["owners"].pop(),  # lengths differ
        lambda d: d["owners"].__setitem__(0, 3),
        lambda d: d["kth"].append(3),
        lambda d: d["kth"].__setitem__(0, 0.5),
        lambda d: d["fingerprints"].__setitem__(0, "f0"),
        lambda d: d.pop("owners"),
        lambda d: d.__setitem__("kth", "many"),
    ],
)
def test_a_forged_format_2_log_is_ignored(
    tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    forge(tmp_path, change)
    assert load_log(tmp_path, KEY) is None


def test_a_format_2_log_is_read(tmp_path: Path) -> None:
    """The format before the candidates array (JSON lists) is still read, equal."""
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
def test_a_forged_format_3_log_is_ignored(
    tmp_path: Path, change: Callable[[dict[str, Any], list[int]], bytes | None]
) -> None:
    forge_array(tmp_path, lambda m, f: None)
    assert load_log(tmp_path, KEY) == a_log()  # format 3 is still read, equal
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
    (tmp_path / LOG_FILE).write_bytes(b"")
    assert load_log(tmp_path, KEY) is None


def big_log(n: int) -> ReplayLog:
    """``n`` episodes, every other one reinforcing the belief before it, full candidates."""
    actions: list[tuple[Any, ...]] = []
    owners = []
    for o in range(n):
        actions.append(("c",) if o % 2 == 0 else ("r", f"b{o - 1:015d}", 0.9 + o / n / 100))
        owners.append(f"b{o - o % 2:015d}")
    cands = [list(range(o - 1, max(-1, o - 1 - CANDIDATES), -1)) for o in range(n)]
    prints = [hashlib.sha256(str(o).encode()).digest()[:16] for o in range(n)]
    return ReplayLog.of(prints, actions, owners, cands, [o * 7 for o in range(n)])


def test_reading_a_log_holds_about_the_file_and_no_object_per_number(tmp_path: Path) -> None:
    """Read back, each array is read into a buffer of its own (no object per number):
    reading a log of 20,000 episodes (640,000 candidate numbers) peaks at about the file's
    size (formats 2 and 3 made an object per number: several times it)."""
    log = big_log(20_000)
    save_log(tmp_path, KEY, log)
    size = (tmp_path / LOG_FILE).stat().st_size
    tracemalloc.start()
    try:
        got = load_log(tmp_path, KEY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == log and got is not None
    assert peak < size * 1.25 + 2_000_000, (peak, size)


@pytest.mark.parametrize("episodes", [4, 10**12])
def test_a_log_whose_header_claims_other_episodes_is_ignored_before_it_is_read(
    tmp_path: Path, episodes: int
) -> None:
    """The arrays' size follows from the header's episode count: a count the file's size does
    not match (a forged header, sealed again) is refused before any array is made — a
    trillion episodes is no allocation error."""
    save_log(tmp_path, KEY, a_log())
    forge4(tmp_path, lambda header, meta, arrays: header.update(episodes=episodes))
    assert load_log(tmp_path, KEY) is None


def test_a_large_format_3_log_reads_back_equal(tmp_path: Path) -> None:
    log = big_log(500)
    meta = lists(log)
    cands = meta.pop("cands")
    meta["cand_counts"] = [len(c) for c in cands]
    tail = np.array(list(itertools.chain.from_iterable(cands)), dtype="<i4").tobytes()
    _seal(tmp_path, {"key": KEY}, json.dumps(meta).encode() + b"\n" + tail, 3)
    assert load_log(tmp_path, KEY) == log
