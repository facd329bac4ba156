"""The belief memory end to end: real extraction, the packaged embedder, the CLI and files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from arkai.cli import main
from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401
from tests.conftest import Runner, init_repo

JANUARY = """# Build caches, January

Remote build caches cut our clean build time to 9 minutes across the whole team.
Content hashes of every input must be part of the cache key.
The hive sensors report their weight to the server every ten minutes.
"""
MARCH = (
    "# Build caches, March\n\n"
    "After the toolchain upgrade, remote build caches cut our clean build time to 14 minutes"
    " across the whole team.\n"
    "Every input's content hash must be part of the cache key.\n"
    "Lavender fields near the apiary bloom in late June.\n"
)


def _json(arkai: Runner, kr: Path, *args: object, code: int = 0) -> dict:  # type: ignore[type-arg]
    got, out, err = arkai("--repo", kr, *args, "--json")
    assert got == code, err
    return json.loads(out) if out.strip() else {}


def _date(kr: Path, title: str, day: str) -> None:
    """A person sets the item's date in its metadata (the ID does not change)."""
    meta = next(p for p in (kr / "library").rglob("metadata.json") if title in str(p))
    data = json.loads(meta.read_text())
    data["published"] = day
    meta.write_text(json.dumps(data, indent=2))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two dated notes, extracted and replayed once; each test works on a copy."""
    base = tmp_path_factory.mktemp("mem")
    kr = base / "kr"
    init_repo(kr, git=False)
    for name, text in (("caches-january.md", JANUARY), ("caches-march.md", MARCH)):
        (base / name).write_text(text)
        assert main(["--repo", str(kr), "add", "--quiet", str(base / name)]) == 0
    assert main(["--repo", str(kr), "extract", "--quiet"]) == 0
    _date(kr, "January", "2026-01-15")
    _date(kr, "March", "2026-03-15")
    assert main(["--repo", str(kr), "memory", "build", "--quiet"]) == 0
    return kr


@pytest.fixture
def mem(built: Path, tmp_path: Path) -> Path:
    kr = tmp_path / "mem"
    shutil.copytree(built, kr, symlinks=True)
    return kr


def _by_text(arkai: Runner, kr: Path, needle: str) -> dict:  # type: ignore[type-arg]
    found = _json(arkai, kr, "beliefs", "--status", "all")["beliefs"]
    return next(b for b in found if needle in b["statement"])


def test_reinforce_and_contradict_from_real_claims(mem: Path, arkai: Runner) -> None:
    old = _by_text(arkai, mem, "9 minutes")
    new = _by_text(arkai, mem, "14 minutes")
    assert old["status"] == "invalidated" and old["replaced_by"] == new["id"]
    key = _by_text(arkai, mem, "cache key")
    assert key["status"] == "active" and len(key["episodes"]) == 2 and key["confidence"] > 0.6
    hist = _json(arkai, mem, "belief", "history", old["id"][:8])
    kinds = [c["kind"] for c in hist["changes"]]
    assert kinds[0] == "create" and "contradict" in kinds
    contra = next(c for c in hist["changes"] if c["kind"] == "contradict")
    assert contra["note"].startswith("numbers") and contra["date"] == "2026-03-15"
    # Every belief's episodes carry byte-exact receipts.
    quotes = hist["quotes"]
    assert {q["quote"] for q in quotes} >= {old["statement"]}
    assert all(q["valid"] for q in quotes)
    code, out, _ = arkai("--repo", mem, "belief", "history", old["id"][:8])
    assert code == 0 and "contradict" in out and "numbers" in out and "transcript.md:" in out


def test_decay_is_read_time_and_clock_is_an_input(mem: Path, arkai: Runner) -> None:
    key = _by_text(arkai, mem, "cache key")["id"]
    at = {b["id"]: b for b in _json(arkai, mem, "beliefs", "--as-of", "2026-03-15")["beliefs"]}
    later = {b["id"]: b for b in _json(arkai, mem, "beliefs", "--as-of", "2026-04-14")["beliefs"]}
    assert at[key]["effective_confidence"] == pytest.approx(at[key]["confidence"])
    assert later[key]["effective_confidence"] == pytest.approx(at[key]["confidence"] / 2)
    stats = _json(arkai, mem, "memory", "stats", "--as-of", "2026-03-15")
    claims = sum(
        len(p.read_text().splitlines()) for p in (mem / "extracted").rglob("evidence.jsonl")
    )
    assert stats["by_status"]["invalidated"] == 1 and stats["episodes"] == claims


def test_recall_semantic_then_lexical(mem: Path, arkai: Runner) -> None:
    got = _json(arkai, mem, "recall", "how", "long", "does", "a", "clean", "build", "take")
    assert got["beliefs"][0]["statement"].startswith("After the toolchain upgrade")
    assert got["beliefs"][0]["method"] == "semantic"
    assert all(b["status"] == "active" for b in got["beliefs"])
    got = _json(arkai, mem, "recall", "apiary", "--threshold", "0.99")
    assert got["beliefs"][0]["method"] == "lexical" and "apiary" in got["beliefs"][0]["statement"]
    _json(arkai, mem, "recall", "zzzqqq", "--threshold", "0.99", code=5)


def test_forget_and_pin_are_files_the_replay_respects(mem: Path, arkai: Runner) -> None:
    lav = _by_text(arkai, mem, "Lavender")["id"]
    key = _by_text(arkai, mem, "cache key")["id"]
    _json(arkai, mem, "forget", lav[:8], "--note", "not about builds")
    _json(arkai, mem, "belief", "pin", key[:8])
    decisions = yaml.safe_load((mem / "memory" / "decisions.yaml").read_text())
    assert decisions["forget"] == {lav: "not about builds"} and key in decisions["pin"]
    _json(arkai, mem, "memory", "build")
    assert _by_text(arkai, mem, "Lavender")["status"] == "forgotten"
    pinned = {b["id"]: b for b in _json(arkai, mem, "beliefs", "--as-of", "2030-01-01")["beliefs"]}
    assert (
        pinned[key]["pinned"] and pinned[key]["effective_confidence"] == pinned[key]["confidence"]
    )
    # Same inputs → byte-identical outputs.
    before = (mem / "beliefs" / "beliefs.json").read_bytes()
    changes = (mem / "beliefs" / "changes.jsonl").read_bytes()
    assert _json(arkai, mem, "memory", "build")["changed"] is False
    assert (mem / "beliefs" / "beliefs.json").read_bytes() == before
    assert (mem / "beliefs" / "changes.jsonl").read_bytes() == changes


def test_rejected_claim_never_supports_a_belief(mem: Path, arkai: Runner) -> None:
    lav = _by_text(arkai, mem, "Lavender")
    code, _, err = arkai("--repo", mem, "review", lav["episodes"][0][:8], "--reject")
    assert code == 0, err
    _json(arkai, mem, "memory", "build")
    found = _json(arkai, mem, "beliefs", "--status", "all")["beliefs"]
    assert not any("Lavender" in b["statement"] for b in found)


def test_prune_lists_then_applies(mem: Path, arkai: Runner) -> None:
    got = _json(arkai, mem, "prune", "--threshold", "0.5", "--as-of", "2026-06-01")
    assert got["beliefs"] and all(b["effective_confidence"] < 0.5 for b in got["beliefs"])
    assert yaml.safe_load((mem / "memory" / "decisions.yaml").read_text())["prune"] == {}
    _json(arkai, mem, "prune", "--threshold", "0.5", "--as-of", "2026-06-01", "--apply")
    _json(arkai, mem, "memory", "build")
    assert _json(arkai, mem, "beliefs", code=5) == {"beliefs": []}
    refl = _json(arkai, mem, "reflect", "--as-of", "2026-03-15")
    assert refl == {"clusters": [], "stale": []}


def test_memory_context_pack_cites_evidence(mem: Path, arkai: Runner) -> None:
    pack = _json(arkai, mem, "memory", "context", "cache", "key", "--as-of", "2026-03-15")
    assert "## Beliefs" in pack["markdown"] and "## Recent episodes" in pack["markdown"]
    first = pack["beliefs"][0]
    assert f"belief {first['id'][:8]}" in pack["markdown"]
    assert first["episodes"][0][:8] in pack["markdown"]


def test_export_import_dedups_and_keeps_decisions(
    mem: Path, arkai: Runner, kr: Path, tmp_path: Path
) -> None:
    lav = _by_text(arkai, mem, "Lavender")["id"]
    _json(arkai, mem, "forget", lav[:8])
    _json(arkai, mem, "memory", "build")
    dump = tmp_path / "export.json"
    out = _json(arkai, mem, "memory", "export", dump)
    assert out["beliefs"] == len(
        json.loads((mem / "beliefs" / "beliefs.json").read_text())["beliefs"]
    )
    # Importing into the same library adds nothing and changes no decision.
    decisions = (mem / "memory" / "decisions.yaml").read_bytes()
    got = _json(arkai, mem, "memory", "import", dump)
    assert got["beliefs_added"] == 0 and got["decisions_added"] == 0
    assert (mem / "memory" / "decisions.yaml").read_bytes() == decisions
    # A person's decision on the same belief wins over the import's.
    doc = json.loads(dump.read_text())
    doc["decisions"]["forget"][lav] = "imported note"
    new = dict(doc["beliefs"][0], id="f" * 16, statement="A brand new belief.", status="active")
    doc["beliefs"].append(new)
    dump.write_text(json.dumps(doc))
    got = _json(arkai, mem, "memory", "import", dump)
    assert got["beliefs_added"] == 1
    assert yaml.safe_load((mem / "memory" / "decisions.yaml").read_text())["forget"][lav] == ""
    _json(arkai, mem, "memory", "build")
    assert _by_text(arkai, mem, "A brand new belief")["status"] == "active"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("forget: [a, b]\n", "'forget' must map belief IDs to notes"),
        ("remember: {}\n", "unknown section 'remember'"),
        ("forget: {x: [1]}\n", "must be a note"),
        ("forget: {\n", "not valid YAML"),
    ],
)
def test_malformed_decisions_named(mem: Path, arkai: Runner, content: str, problem: str) -> None:
    path = mem / "memory" / "decisions.yaml"
    path.write_text(content)
    before = (mem / "beliefs" / "beliefs.json").read_bytes()
    code, _, err = arkai("--repo", mem, "memory", "build")
    assert code != 0 and "decisions.yaml" in err and problem in err, err
    assert "Traceback" not in err
    assert path.read_text() == content
    assert (mem / "beliefs" / "beliefs.json").read_bytes() == before


def test_bad_ids_and_imports(mem: Path, arkai: Runner, tmp_path: Path) -> None:
    code, _, err = arkai("--repo", mem, "belief", "history", "abc")
    assert code == 2 and "too short" in err
    code, _, err = arkai("--repo", mem, "forget", "00000000")
    assert code == 5 and "no belief" in err
    for body in ("[]", '{"format": "other"}', '{"format": "arkai-memory/1", "beliefs": [{}]}',
                 "\xff"):  # fmt: skip
        bad = tmp_path / "bad.json"
        bad.write_text(body, errors="surrogateescape")
        code, _, err = arkai("--repo", mem, "memory", "import", bad)
        assert code == 2 and "bad.json: not an arkai memory export" in err, err
    assert not (mem / "memory" / "imported.jsonl").exists()


def test_no_beliefs_yet(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "beliefs")
    assert code == 5 and "no beliefs yet" in err


def test_contradiction_check_through_a_provider(
    mem: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    """memory.provider: openai sends the check_contradiction pattern to the (local) server;
    its verdict decides, and the replay is cached like every provider call."""
    seen: list[str] = []

    def judge(text: str, req: object) -> dict[str, object]:
        seen.append(text)
        return {"contradicts": "Lavender" in text, "reason": "the server says so"}

    fake_llm.answer("check_contradiction", judge)
    params = mem / "params.yaml"
    data = yaml.safe_load(params.read_text())
    data["memory"]["provider"] = "openai"
    data["providers"]["openai"] = {"base_url": fake_llm.base_url, "model": "fake-1"}
    params.write_text(yaml.safe_dump(data))
    out = _json(arkai, mem, "memory", "build")
    assert seen and all("OLDER:" in t and "NEWER:" in t for t in seen)
    # The server found no conflict between the build times: the January belief stays active.
    assert _by_text(arkai, mem, "9 minutes")["status"] == "active"
    assert out["by_status"]["invalidated"] == 0
    header = json.loads((mem / "beliefs" / "beliefs.json").read_text())
    assert header["contradiction_check"] == "openai:fake-1"
    calls = len(fake_llm.chat_requests)
    _json(arkai, mem, "memory", "build")
    assert len(fake_llm.chat_requests) == calls, "a second replay must come from the cache"
    fake_llm.set_mode("malformed")
    shutil.rmtree(mem / ".arkai" / "responses")
    # Nothing changed, so the replay reuses its log and asks nothing; without the log it asks.
    code, _, err = arkai("--repo", mem, "memory", "build")
    assert code == 0 and len(fake_llm.chat_requests) == calls
    (mem / "index" / "beliefs" / "replay.json").unlink()
    code, _, err = arkai("--repo", mem, "memory", "build")
    assert code == 3 and "check_contradiction via openai" in err, err


def test_context_and_task_suggest_use_the_memory(mem: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", mem, "reindex", "--quiet")
    assert code == 0, err
    pack = _json(arkai, mem, "context", "clean", "build", "time")
    assert pack["beliefs"] and "## Beliefs" in pack["markdown"]
    assert pack["beliefs"][0]["id"][:8] in pack["markdown"]
    key = _by_text(arkai, mem, "cache key")
    plain = _json(arkai, mem, "task", "add", "Tidy the attic", "--priority", "high")
    linked = _json(arkai, mem, "task", "add", "Add hashes to the cache key", "--priority",
                   "high", "--evidence", key["episodes"][0][:8])  # fmt: skip
    got = _json(arkai, mem, "task", "suggest", "--as-of", "2026-03-15")["suggestions"]
    assert [s["task"]["id"] for s in got] == [linked["id"], plain["id"]]
    assert any(r.startswith(f"supports belief {key['id'][:8]}") for r in got[0]["reasons"])


def test_cold_recall_from_the_index_ranks_as_the_full_path(mem: Path) -> None:
    """A cold process answers from index/beliefs/ (no parse of beliefs.json); the result is
    the full path's, and a beliefs.json the index does not mirror is never answered from it."""
    from datetime import date

    from arkai.adapters import memory as files
    from arkai.ops import Repo
    from arkai.ops import memory as ops

    repo = Repo.at(mem)
    day = date(2026, 3, 15)
    ops._STATES.clear()
    cold = ops._recall_from_index(repo, "clean build time", day, 10, 0.3, False)
    assert cold, "the recall index must answer a cold recall"
    ops.load(repo)  # warm: the full path
    warm = ops.recall(repo, "clean build time", as_of=day, k=10)
    assert [s.to_dict() for s in cold] == [s.to_dict() for s in warm]
    # Edit beliefs.json by hand: the index no longer mirrors it and is not used.
    path = mem / "beliefs" / "beliefs.json"
    path.write_text(path.read_text().replace("clean build", "clean  build"))
    assert files.read_recall_index(mem) is None
    ops._STATES.clear()
    assert ops._recall_from_index(repo, "clean build time", day, 10, 0.3, False) == []


def test_task_suggest_prose_advice_through_a_provider(
    mem: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    """tasks.provider: openai adds the suggest_tasks pattern's advice; the request carries the
    ranked tasks and the memory context; a broken answer exits 3 and writes nothing."""
    seen: list[str] = []

    def advise(text: str, req: object) -> dict[str, object]:
        seen.append(text)
        return {"advice": "Start with the cache key: your memory backs it.", "order": []}

    fake_llm.answer("suggest_tasks", advise)
    key = _by_text(arkai, mem, "cache key")
    _json(arkai, mem, "task", "add", "Add hashes to the cache key", "--evidence",
          key["episodes"][0][:8])  # fmt: skip
    params = mem / "params.yaml"
    data = yaml.safe_load(params.read_text())
    data["tasks"]["provider"] = "openai"
    data["providers"]["openai"] = {"base_url": fake_llm.base_url, "model": "fake-1"}
    params.write_text(yaml.safe_dump(data))
    got = _json(arkai, mem, "task", "suggest", "--as-of", "2026-03-15")
    assert got["advice"] == "Start with the cache key: your memory backs it."
    assert seen and "TASKS:" in seen[0] and "Add hashes to the cache key" in seen[0]
    assert "## Beliefs" in seen[0] and key["id"][:8] in seen[0]
    tasks = sorted((mem / "tasks").iterdir())
    fake_llm.set_mode("malformed")
    shutil.rmtree(mem / ".arkai" / "responses")
    code, _, err = arkai("--repo", mem, "task", "suggest", "--as-of", "2026-03-15")
    assert code == 3 and "suggest_tasks via openai" in err, err
    assert sorted((mem / "tasks").iterdir()) == tasks
