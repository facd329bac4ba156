"""A replay resumed from its log equals a replay from scratch (issue 17): only the episodes whose
outcome can differ are decided afresh, every other one takes its recorded outcome."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from arkai.adapters.fs import RowFile
from arkai.memory import replay as rp
from arkai.memory.contradict import check
from arkai.memory.replay import Decisions, ReplayParams, ReplayResult, replay
from arkai.model.belief import Episode

TOPICS = [
    ("Remote build caches cut the clean build time to {n} minutes.", "caches"),
    ("The hive sensors report their weight every {n} minutes.", "hives"),
    ("Lavender near the apiary blooms in week {n} of summer.", "lavender"),
    ("Our nightly backups finish within {n} hours.", "backups"),
]


def library(n: int, seed: int = 3) -> tuple[list[Episode], np.ndarray]:
    """``n`` episodes on a few topics: near-copies reinforce, changed numbers contradict."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(TOPICS), 16))
    eps, rows = [], []
    for i in range(n):
        t = int(rng.integers(len(TOPICS)))
        number = int(rng.choice([5, 5, 5, 9]))
        eps.append(ep(i, TOPICS[t][0].format(n=number), f"2026-{1 + i * 12 // n:02d}-01"))
        rows.append(centres[t] + rng.normal(scale=0.15, size=16) + (number == 9) * 0.3)
    return eps, unit(np.stack(rows))


def ep(i: int, text: str, day: str) -> Episode:
    return Episode(id=f"{i:016x}", statement=text, date=day, item=f"item{i % 7}", position=i)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def run(eps: list[Episode], rows: np.ndarray, resume: rp.ReplayLog | None = None,
        checker: Callable[[str, str], object] = check) -> ReplayResult:  # fmt: skip
    return replay(eps, rows, params=ReplayParams(), decisions=Decisions(), check=checker,  # type: ignore[arg-type]
                  resume=resume)  # fmt: skip


def same(a: ReplayResult, b: ReplayResult) -> None:
    assert [x.to_dict() for x in a.beliefs] == [x.to_dict() for x in b.beliefs]
    assert [x.to_dict() for x in a.changes] == [x.to_dict() for x in b.changes]
    assert a.vectors[:].tobytes() == b.vectors[:].tobytes() and a.as_of == b.as_of
    assert a.log == b.log


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidate blocks of 16 rows, so a resume starts at a block boundary, not at row 1."""
    monkeypatch.setattr(rp, "BLOCK_CELLS", 4000)  # 16 rows for 199 to 201 episodes


def edits() -> dict[str, Callable[[list[Episode], np.ndarray], tuple[list[Episode], np.ndarray]]]:
    def change(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        e = eps[100]
        eps = [*eps[:100], Episode(e.id, "Remote build caches never cut build times.", e.date,
                                   e.item, e.position), *eps[101:]]  # fmt: skip
        rows = rows.copy()
        rows[100] = rows[3]
        return eps, rows

    def insert(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        new = Episode("f" * 16, "Our nightly backups finish within 9 hours.", eps[120].date,
                      "item-new", 10_000)  # fmt: skip
        return [*eps[:121], new, *eps[121:]], np.insert(rows, 121, rows[7], axis=0)

    def remove(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        return [*eps[:90], *eps[91:]], np.delete(rows, 90, axis=0)

    def append(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        new = Episode("e" * 16, eps[5].statement, "2027-01-01", "item-new", 0)
        return [*eps, new], np.vstack([rows, rows[5:6]])

    return {"change": change, "insert": insert, "remove": remove, "append": append}


@pytest.mark.parametrize("edit", sorted(edits()))
def test_resumed_replay_equals_a_replay_from_scratch(edit: str) -> None:
    eps, rows = library(200)
    before = run(eps, rows)
    assert before.log is not None
    kinds = {before.log.action(o)[0] for o in range(len(before.log))}
    assert kinds >= {"c", "r", "x"}, kinds  # the data exercises create, reinforce, contradict
    eps2, rows2 = edits()[edit](eps, rows)
    calls: list[str] = []

    def counted(old: str, new: str) -> object:
        calls.append(new)
        return check(old, new)

    resumed = run(eps2, rows2, before.log, counted)
    resumed_calls = len(calls)
    scratch = run(eps2, rows2, None, counted)
    same(resumed, scratch)
    assert resumed_calls < len(calls) - resumed_calls  # the reused prefix asked nothing
    assert resumed.beliefs != before.beliefs or edit == "remove"
    first_changed = next(
        (i for i, (a, b) in enumerate(zip(eps, eps2, strict=False)) if a != b), len(eps)
    )
    assert resumed.resumed_at == first_changed
    later = len(eps2) - first_changed
    assert resumed.decided < later or later == 1  # not every later episode


def test_nothing_changed_replays_nothing() -> None:
    eps, rows = library(200)
    before = run(eps, rows)

    def refuse(old: str, new: str) -> object:
        raise AssertionError("an unchanged library needs no contradiction check")

    again = run(eps, rows, before.log, refuse)
    assert again.resumed_at == len(eps) and again.decided == 0
    same(again, before)


def repeated(n: int, seed: int = 5) -> tuple[list[Episode], np.ndarray]:
    """``n`` episodes drawn from 12 statements, each repeat with exactly the same vector (as in
    a library where talks repeat a claim word for word): candidates tie by the dozen."""
    rng = np.random.default_rng(seed)
    texts = [TOPICS[t % 4][0].format(n=5 + t) for t in range(12)]
    base = unit(rng.normal(size=(12, 16)) + np.repeat(np.eye(4, 16) * 3, 3, axis=0))
    pick = rng.integers(0, 12, size=n)
    eps = [ep(i, texts[t], f"2026-{1 + i * 12 // n:02d}-01") for i, t in enumerate(pick)]
    return eps, base[pick]


def test_a_log_from_other_blocks_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidates do not depend on the block height, so a log from other blocks still holds."""
    eps, rows = repeated(240)
    before = run(eps, rows)
    monkeypatch.setattr(rp, "BLOCK_CELLS", 240 * 3)
    eps2, rows2 = [*eps[:50], *eps[51:]], np.delete(rows, 50, axis=0)
    resumed = run(eps2, rows2, before.log)
    assert resumed.resumed_at == 50 and resumed.decided < len(eps2) - 50
    same(resumed, run(eps2, rows2))


def test_candidates_do_not_depend_on_the_block_height(monkeypatch: pytest.MonkeyPatch) -> None:
    """Smaller blocks (less memory) rank the same earlier rows, nearest first — also when
    exact repeats tie (the float32 ranking before picked among ties by block shape)."""
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    _, reps = repeated(400)
    for data in (vecs, reps):
        got = []
        for cells in (1 << 25, 300 * 64, 300 * 2, 1):
            monkeypatch.setattr(rp, "BLOCK_CELLS", cells)
            got.append(rp._candidates(data, 8, range(len(data))))
        assert got[0] == got[1] == got[2] == got[3]
        exact = rp.grid(data) @ rp.grid(data).T
        for i in (1, 5, 41, 299):
            want = sorted(range(i), key=lambda j: (-exact[i, j], j))[:8]
            assert got[0][i][0] == want
            assert got[0][i][1] == (int(exact[i, want[-1]]) if len(want) == 8 else 0)


def test_exact_repeats_rank_the_earliest_first() -> None:
    rows = np.repeat(unit(np.ones((1, 16))), 50, axis=0)
    got = rp._candidates(rows, 8, [0, 3, 49])
    assert got[0] == ([], 0) and got[3] == ([0, 1, 2], 0)
    assert got[49][0] == list(range(8))


def test_rows_just_under_the_float32_kth_are_still_ranked_on_the_grid() -> None:
    """Near-copies whose float32 similarities differ from the grid's in the last bits: the
    margin keeps every row that could be among the best on the grid."""
    rng = np.random.default_rng(11)
    rows = unit(rng.normal(size=16) + rng.normal(scale=1e-4, size=(200, 16)))
    got = rp._candidates(rows, 8, range(200))
    exact = rp.grid(rows) @ rp.grid(rows).T
    for i in range(9, 200):
        assert got[i][0] == sorted(range(i), key=lambda j: (-exact[i, j], j))[:8]


def test_too_many_dimensions_are_refused() -> None:
    with pytest.raises(ValueError, match="4097 dimensions"):
        rp.grid(np.zeros((2, 4097), dtype=np.float32))


Library = tuple[list[Episode], np.ndarray]


def mutate(lib: Library, rng: np.random.Generator, pool: Library) -> Library:
    """A few random edits: statements changed (to another's), episodes removed or added."""
    eps, rows = list(lib[0]), lib[1].copy()
    for _ in range(int(rng.integers(1, 5))):
        what = int(rng.integers(3))
        i = int(rng.integers(1, len(eps) - 1))
        t = int(rng.integers(len(pool[0])))
        if what == 0 and eps[i].statement != pool[0][t].statement:  # a vector per statement
            e = eps[i]
            eps[i] = Episode(e.id, pool[0][t].statement, e.date, e.item, e.position)
            rows[i] = pool[1][t]
        elif what == 1:
            del eps[i]
            rows = np.delete(rows, i, axis=0)
        else:
            new = Episode(f"{int(rng.integers(1 << 60)):016x}", pool[0][t].statement,
                          eps[i].date, "item-new", i)  # fmt: skip
            eps.insert(i, new)
            rows = np.insert(rows, i, pool[1][t], axis=0)
    return eps, rows


@pytest.mark.parametrize("make", [library, repeated])
def test_a_chain_of_random_edits_stays_equal_to_scratch(make: Callable[..., Library]) -> None:
    """Each replay resumes from the log of the one before (itself resumed): after every edit
    the result, the log included, equals a replay from scratch."""
    rng = np.random.default_rng(23)
    lib = make(220)
    pool = make(60, seed=9)
    log = run(*lib).log
    fresh = later = 0
    for _ in range(12):
        lib = mutate(lib, rng, pool)
        resumed = run(*lib, log)
        same(resumed, run(*lib))
        log = resumed.log
        fresh += resumed.decided
        later += len(lib[0]) - resumed.resumed_at
    assert fresh < later  # outcomes after the first change were reused too


@pytest.mark.parametrize("seed", [6, 14, 25, 30])
def test_what_a_fresh_decision_changed_is_decided_afresh_after_it(seed: int) -> None:
    """Chains (found by searching seeds) in which an episode decided afresh changes a belief
    that later episodes took from the log: the rows of a belief a fresh decision made or
    changed are decided again (without that, seeds 6 and 25 diverge from scratch), and so is
    an episode later taken from the log into such a belief (seeds 14 and 30)."""
    rng = np.random.default_rng(seed)
    lib = library(220, seed=seed % 7 + 1)
    pool = library(60, seed=seed + 100)
    log = run(*lib).log
    for _ in range(12):
        lib = mutate(lib, rng, pool)
        resumed = run(*lib, log)
        same(resumed, run(*lib))
        log = resumed.log


def test_a_belief_a_kept_episode_no_longer_contradicts_is_read_afresh() -> None:
    """Episode 40 (kept) contradicted belief B in the log; an episode inserted before it now
    takes it elsewhere, so B stays active. Episode 41, whose candidates are B's rows alone
    (the same as recorded), created a belief in the log because B was invalidated; now it
    reinforces B. B's rows must be marked by what the kept episode's recorded outcome made."""
    rng = np.random.default_rng(4)
    a, e1 = np.eye(16)[0], np.eye(16)[1]
    five, nine = TOPICS[3][0].format(n=5), TOPICS[3][0].format(n=9)
    texts = [five] * 40 + [nine, five]
    rows = [a + rng.normal(scale=0.002, size=16) for _ in range(40)]
    rows += [0.78 * a + 0.626 * e1, a]  # 40: similar enough to B to contradict it, not more
    eps = [ep(i, t, "2026-03-01") for i, t in enumerate(texts)]
    before = run(eps, unit(np.stack(rows)))
    assert before.log is not None
    assert [before.log.action(o)[0] for o in (0, 40, 41)] == ["c", "x", "c"]
    # Inserted before 40: the same claim, nearer to 40 than B is, too far from B to contradict.
    new = Episode("f" * 16, nine, "2026-03-01", "item-new", 1_000)
    eps2 = [*eps[:40], new, *eps[40:]]
    rows2 = unit(np.stack([*rows[:40], 0.55 * a + 0.835 * e1, *rows[40:]]))
    resumed, scratch = run(eps2, rows2, before.log), run(eps2, rows2)
    same(resumed, scratch)
    assert scratch.log is not None
    b = scratch.beliefs[0]  # B: made by episode 0
    assert b.status == "active" and scratch.log.action(42)[:2] == ("r", b.id)


def test_an_episode_decided_afresh_into_another_belief_is_marked() -> None:
    """Episode 41 (kept) reinforced C in the log; belief D, made by an episode inserted before
    it, now takes it. Episode 42's candidates are the recorded ones (41 and C's rows, not D's
    own row): it created a belief in the log, where no candidate's belief was near enough,
    and now reinforces D through 41 — so 41 must be marked though its belief's rows were not.
    (The directions were found by solving the inequalities the story needs; one statement
    throughout, so nothing contradicts.)"""
    a, u, d, v, w = (np.pad(np.asarray(x), (0, 12)) for x in (
        [1.0, 0.0, 0.0, 0.0],
        [0.9562, 0.0859, 0.233, -0.1549],  # C's other 40 rows: reinforce C
        [0.7908, -0.3867, 0.4742, 0.0123],  # the inserted episode: too far from C, makes D
        [0.8879, -0.1677, 0.4284, -0.0055],  # episode 41: nearer D than C, D nearer than u
        [0.8151, 0.0819, 0.5734, -0.0049],  # episode 42: v, then u, then d; C's vector far
    ))  # fmt: skip
    rng = np.random.default_rng(8)
    rows = [a, *(u + rng.normal(scale=0.001, size=16) for _ in range(40)), v, w]
    text = TOPICS[0][0].format(n=5)
    eps = [ep(i, text, "2026-03-01") for i in range(len(rows))]
    before = run(eps, unit(np.stack(rows)))
    assert before.log is not None
    assert [before.log.action(o)[0] for o in (0, 40, 41, 42)] == ["c", "r", "r", "c"]
    new = Episode("f" * 16, text, "2026-03-01", "item-new", 1_000)
    eps2 = [*eps[:41], new, *eps[41:]]
    rows2 = unit(np.stack([*rows[:41], d, *rows[41:]]))
    resumed, scratch = run(eps2, rows2, before.log), run(eps2, rows2)
    same(resumed, scratch)
    assert scratch.log is not None
    made_d = scratch.log.owner(41)
    assert scratch.log.action(42)[:2] == ("r", made_d) == scratch.log.action(43)[:2]


def test_decisions_on_resume() -> None:
    """With the same people's decisions (forget, pin, prune) a resumed replay equals scratch."""
    eps, rows = repeated(200)
    ids = [b.id for b in run(eps, rows).beliefs[:3]]
    decided = Decisions(forget={ids[0]: ""}, pin={ids[1]: ""}, prune={ids[2]: ""})

    def go(lib: Library, log: rp.ReplayLog | None) -> ReplayResult:
        return replay(*lib, params=ReplayParams(), decisions=decided, check=check, resume=log)

    before = go((eps, rows), None)
    assert {c.kind for c in before.changes} >= {"forget", "pin", "prune"}
    after = ([*eps[:30], *eps[31:]], np.delete(rows, 30, axis=0))
    same(go(after, before.log), go(after, None))


def test_a_recorded_outcome_naming_an_unknown_belief_is_decided_afresh() -> None:
    """A log that does not fit the replay it claims to record (here: episode 5 reinforced a
    belief no episode made) costs a fresh decision, not a crash or a wrong belief."""
    eps, rows = library(200)
    before = run(eps, rows)
    assert before.log is not None
    log, n = before.log, range(len(before.log))
    actions = [log.action(o) for o in n]
    actions[5] = ("r", "0" * 16, 0.99)
    forged = rp.ReplayLog.of([log.fingerprints[o : o + 1].tobytes() for o in n], actions,
                             [log.owner(o) for o in n], [log.candidates(o) for o in n],
                             log.kth.tolist())  # fmt: skip
    again = run(eps, rows, forged)
    assert again.decided >= 1
    same(again, before)


def test_candidates_do_not_depend_on_the_column_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Earlier rows scored a chunk at a time (a row's pool cut to its final k-th at the end)
    rank the same rows as one pass over all of them, with any block height."""
    rng = np.random.default_rng(13)
    vecs = unit(rng.normal(size=(260, 16)))
    _, reps = repeated(260)
    for data in (vecs, reps):
        want = rp._candidates(data, 8, range(len(data)))
        for cols, cells in ((1, 1 << 25), (3, 1 << 25), (8, 40), (37, 1), (100, 300 * 64)):
            monkeypatch.setattr(rp, "COLUMN_ROWS", cols)
            monkeypatch.setattr(rp, "BLOCK_CELLS", cells)
            assert rp._candidates(data, 8, range(len(data))) == want, (cols, cells)


def test_a_replay_over_rows_in_a_file_equals_one_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The beliefs step reads the statement vectors by row from a file: the same beliefs,
    changes, vectors and log as the rows in memory, from scratch and resumed, with passes of
    a few rows at a time."""
    monkeypatch.setattr(rp, "COLUMN_ROWS", 16)
    monkeypatch.setattr(rp, "INSIGHT_ROWS", 4)
    eps, rows = library(200)
    in_file = RowFile.written(tmp_path, [rows[:70], rows[70:]], len(rows), rows.shape[1])
    assert in_file[:].tobytes() == rows.tobytes()
    before = run(eps, rows)
    same(run(eps, in_file), before)  # type: ignore[arg-type]
    eps2, rows2 = edits()["change"](eps, rows)
    in_file2 = RowFile.written(tmp_path, [rows2], len(rows2), rows2.shape[1])
    same(run(eps2, in_file2, before.log), run(eps2, rows2))  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())  # the files have no name


#: The start of a measuring subprocess: its peak memory (``hwm``) and ``n`` random unit rows of
#: ``dim`` columns written to a file in the folder ``sys.argv[1]`` (``unit_rows``).
ROWS_IN_A_FILE = """
import sys
from pathlib import Path
import numpy as np
from arkai.adapters.fs import RowFile
from arkai.memory import replay as rp

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

def unit_rows(n, dim, seed):
    rng = np.random.default_rng(seed)
    def blocks():
        for lo in range(0, n, 1_000):
            b = rng.normal(size=(1_000, dim)).astype(np.float32)
            yield b / np.linalg.norm(b, axis=1, keepdims=True)
    return RowFile.written(Path(sys.argv[1]), blocks(), n, dim)
"""

SCAN = (
    ROWS_IN_A_FILE
    + """
rp.COLUMN_ROWS = 4096
n, dim = 200_000, 64
rows = unit_rows(n, dim, 1)
if sys.argv[2] == "mapped":
    rows = np.memmap(rows._fh, dtype=np.float32, mode="r", shape=(n, dim))
rp._candidates(rows, 2, [1, 2, 3, 9_000])  # warm up: numpy's and BLAS's own buffers
before = hwm()
got = rp._candidates(rows, 32, [n - 1, n - 2, 150_000])
print(hwm() - before, len(got[n - 1][0]))
"""
)


@pytest.mark.parametrize("mode", ["file", "mapped"])
def test_a_pass_over_rows_in_a_file_holds_about_a_chunk(tmp_path: Path, mode: str) -> None:
    """Scoring rows against 200,000 rows in a file (51 MB) holds about one chunk of them (4,096
    rows: 1 MB) besides the scores; the same file memory-mapped (``mapped``) ends up holding
    every page — the measurement tells the two apart."""
    proc = subprocess.run([sys.executable, "-c", SCAN, str(tmp_path), mode],
                          capture_output=True, text=True, check=True)  # fmt: skip
    grew, found = map(int, proc.stdout.split())
    assert found == 32
    if mode == "file":
        assert grew < 12 * 2**20, grew
    else:
        assert grew > 30 * 2**20, grew


def test_a_library_grown_tenfold_resumes_equal_to_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A log of every tenth episode, then all of them (most episodes new, the kept ones
    among them): with the new rows taken a few at a time or all at once, the resumed replay
    equals one from scratch."""
    for make in (library, repeated):
        eps, rows = make(230)
        kept = list(range(0, len(eps), 10))
        log = run([eps[i] for i in kept], rows[kept]).log
        want = run(eps, rows)
        for cols in (1, 3, 16, 4096):
            monkeypatch.setattr(rp, "COLUMN_ROWS", cols)
            same(run(eps, rows, log), want)


NEAR = (
    ROWS_IN_A_FILE
    + """
n, dim, checked = 250_000, 64, 200
rows = unit_rows(n, dim, 2)
resume = rp._Resume.__new__(rp._Resume)
resume.vectors, resume.from_log = rows, np.ones(n, dtype=bool)
check = np.arange(n - checked, n)
changed = np.arange(0, n - checked)
kth = np.full(n, int(0.95 * rp.GRID**2), dtype=np.int64)
kth[-1] = 0  # any earlier row is nearer than nothing: this one's list is ranked again
cands = np.zeros((n, rp.CANDIDATES), dtype=np.int32)  # (a full list of kept rows)
resume._near_changed(check[:3], changed[:5_000], cands, kth)  # warm up: numpy's and BLAS's buffers
before = hwm()
hit = resume._near_changed(check, changed, cands, kth)
print(hwm() - before, hit.tolist())
"""
)


def test_the_changed_rows_are_checked_a_chunk_at_a_time(tmp_path: Path) -> None:
    """A resume where 249,800 of 250,000 rows are new (64 dimensions, in a file) holds about
    a chunk of the new rows while it checks the kept ones against them — every new row's
    vector and grid copy at once were ≈ 320 MB here (826 MB for 79,500 statements of 384
    dimensions at 10,000 items)."""
    proc = subprocess.run([sys.executable, "-c", NEAR, str(tmp_path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    grew, hit = proc.stdout.split(maxsplit=1)
    assert hit.strip() == "[249999]"
    assert int(grew) < 64 * 2**20, grew


@pytest.mark.parametrize("near_rows", [1, 3, 256])
def test_rows_a_new_episode_is_near_are_ranked_again_without_a_search(
    monkeypatch: pytest.MonkeyPatch, near_rows: int
) -> None:
    """Episodes inserted early (near copies of many later ones): each later kept row whose
    weakest candidate a new row beats gets its list from its recorded one and the new rows
    ranked together — only the new rows are searched against every earlier row — and the
    replay equals one from scratch (lists, outcomes, log). Those rows' recorded candidates are
    scored :data:`~arkai.memory.replay.NEAR_ROWS` rows at a time (their vectors read
    together): one, a few and all in one chunk alike."""
    monkeypatch.setattr(rp, "NEAR_ROWS", near_rows)
    eps, rows = library(200)
    before = run(eps, rows)
    assert before.log is not None
    new = [Episode(f"{9000 + j:016x}", eps[110 + j].statement, eps[100].date, "item-new",
                   20_000 + j) for j in range(6)]  # fmt: skip
    eps2 = [*eps[:101], *new, *eps[101:]]  # (every later row has a full list: 32 before it)
    rows2 = np.insert(rows, 101, rows[110:116], axis=0)
    searched: list[list[int]] = []
    real = rp._each_candidates

    def spy(vectors: object, k: int, todo: object) -> object:
        searched.append(list(todo))  # type: ignore[call-overload]
        return real(vectors, k, todo)  # type: ignore[arg-type]

    monkeypatch.setattr(rp, "_each_candidates", spy)
    merged: list[int] = []
    real_near = rp._Resume._near_changed

    def near(self: rp._Resume, *args: object) -> object:
        got = real_near(self, *args)  # type: ignore[arg-type]
        merged.extend(got.tolist())  # type: ignore[attr-defined]
        return got

    monkeypatch.setattr(rp._Resume, "_near_changed", near)
    resumed = run(eps2, rows2, before.log)
    monkeypatch.undo()
    assert searched[0] == list(range(101, 107))  # the new rows alone
    assert len(merged) > 10 and all(m > 106 for m in merged)
    same(resumed, run(eps2, rows2))
