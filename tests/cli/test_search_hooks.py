"""``arkai search`` with the expand and rerank hooks of ``params.yaml`` (real executables
written to a temporary folder) and with feedback votes.

The library and fake embedder are those of ``tests/cli/test_search.py``, indexed once per module
and copied for each test.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.adapters.repo import Repo
from arkai.ops.index import run_index
from arkai.ops.init import init_repo
from arkai.search import embed
from tests.cli.test_search import ITEMS, FakeEmbedder, _write_item
from tests.conftest import Runner


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("hooks") / "kr"
    init_repo(root, git=False)
    fake = FakeEmbedder()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
        info = {spec["title"]: _write_item(root, spec) for spec in ITEMS}
        run_index(Repo.at(root))
    return root, info


@pytest.fixture
def lib(
    built: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """A fresh copy of the indexed library (the fake embedder in place)."""
    root = tmp_path / "kr"
    shutil.copytree(built[0], root, symlinks=True)
    fake = FakeEmbedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
    return {"root": root, **built[1]}


def script(folder: Path, name: str, body: str) -> Path:
    """An executable Python script with a shebang (a real hook)."""
    path = folder / name
    path.write_text(f"#!{sys.executable}\nimport json, sys, os, time\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def set_hooks(root: Path, **hooks: Any) -> None:
    path = root / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["hooks"] = {"expand": [], "rerank": [], "timeout_s": 10, **hooks}
    path.write_text(yaml.safe_dump(params), encoding="utf-8")


def search(arkai: Runner, root: Path, *args: Any) -> tuple[int, Any, str]:
    code, out, err = arkai("--repo", root, "search", *args, "--json")
    return code, (json.loads(out) if out.strip() else None), err


def ids(res: dict[str, Any]) -> list[str]:
    return [r["content_id"] for r in res["results"]]


# -- expansion ------------------------------------------------------------------------------


def test_expand_variants_are_searched_and_explained(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    root = lib["root"]
    seen = tmp_path / "seen.json"
    hook = script(
        tmp_path,
        "expand.py",
        f"req = json.load(sys.stdin)\nopen({str(seen)!r}, 'w').write(json.dumps(req))\n"
        "print(json.dumps({'lex': ['register allocator'], 'vec': ['graph colouring']}))",
    )
    # Without the hook nothing matches this word.
    code, _, _ = search(arkai, root, "zyzzyva", "--mode", "lexical")
    assert code == 5
    set_hooks(root, expand=[str(hook)])
    code, res, err = search(arkai, root, "zyzzyva", "--explain")
    assert code == 0, err
    assert json.loads(seen.read_text()) == {
        "query": "zyzzyva",
        "mode": "hybrid",
        "max_expansions": 4,
    }
    assert lib["Compiler chat"]["id"] in ids(res)
    assert res["lanes"]["lexical:1"] >= 1 and "vector:1" in res["lanes"]
    assert res["hooks"]["expand"]["lanes"] == {
        "lexical:1": "register allocator",
        "vector:1": "graph colouring",
    }
    chat = next(r for r in res["results"] if r["content_id"] == lib["Compiler chat"]["id"])
    explain = chat["hits"][0]["explain"][0]["lanes"]
    assert {"lexical", "vector", "lexical:1", "vector:1"} <= set(explain)
    assert explain["lexical:1"]["rank"] == 1 and explain["lexical"]["rank"] == 0
    code, res, err = search(arkai, root, "zyzzyva", "--mode", "lexical")
    assert code == 0, err
    assert ids(res) == [lib["Compiler chat"]["id"]] and set(res["lanes"]) == {
        "lexical",
        "lexical:1",
    }
    code, out, _ = arkai("--repo", root, "search", "zyzzyva", "--explain")
    assert code == 0
    assert "expand hook: lex ['register allocator']" in out and "lexical:1 #1" in out


def test_variants_weigh_less_than_the_query(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    """The original query keeps the first place it earns on its own: a variant that matches
    another item lifts that item, but not above the query's own best match."""
    root = lib["root"]
    code, plain, _ = search(arkai, root, "firmware calibration", "--mode", "lexical")
    assert code == 0 and ids(plain)[0] == lib["Hive sensors note"]["id"]
    hook = script(tmp_path, "expand.py", "print(json.dumps({'lex': ['green roofs'], 'vec': []}))")
    set_hooks(root, expand=[str(hook)])
    code, res, err = search(arkai, root, "firmware calibration", "--mode", "lexical")
    assert code == 0, err
    assert ids(res)[0] == lib["Hive sensors note"]["id"]
    assert lib["Roof gardens"]["id"] in ids(res)
    assert lib["Roof gardens"]["id"] not in ids(plain)


FAILURES = {
    "nonzero": "sys.stderr.write('model not loaded\\n'); sys.exit(3)",
    "bad_json": "print('this is not json')",
    "wrong_shape": "print(json.dumps({'lex': 'not a list'}))",
    "not_object": "print(json.dumps(['a', 'b']))",
    "timeout": "time.sleep(60)",
}
EXPECT = {
    "nonzero": "exited with status 3; stderr: model not loaded",
    "bad_json": "output is not JSON",
    "wrong_shape": "'lex' must be a list of strings",
    "not_object": "must be a JSON object",
    "timeout": "no answer within 1s",
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_failing_expand_hook_degrades_with_a_warning(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path, failure: str
) -> None:
    root = lib["root"]
    code, plain, _ = search(arkai, root, "varroa mite")
    hook = script(tmp_path, "expand.py", FAILURES[failure])
    set_hooks(root, expand=[str(hook)], timeout_s=1)
    code, res, err = search(arkai, root, "varroa mite")
    assert code == 0, err
    assert ids(res) == ids(plain)
    assert res["lanes"] == plain["lanes"]
    (warning,) = [w for w in res["warnings"] if w.startswith("hook expand failed: ")]
    assert EXPECT[failure] in warning and "the query alone is searched" in warning
    code, out, err = arkai("--repo", root, "search", "varroa mite")
    assert code == 0 and "1. Beekeeping talk" in out
    assert "arkai: warning: hook expand failed: hook expand.py: " in err and EXPECT[failure] in err


def test_missing_hook_program_degrades(lib: dict[str, Any], arkai: Runner, tmp_path: Path) -> None:
    set_hooks(lib["root"], rerank=[str(tmp_path / "no-such-hook")])
    code, res, err = search(arkai, lib["root"], "varroa")
    assert code == 0, err
    assert any(
        w.startswith("hook rerank failed: hook no-such-hook: cannot run") for w in res["warnings"]
    )


def test_bad_hook_setting_is_a_clear_error(lib: dict[str, Any], arkai: Runner) -> None:
    set_hooks(lib["root"], expand="python hook.py")
    code, _, err = search(arkai, lib["root"], "varroa")
    assert code == 2
    assert "params.yaml: hooks.expand must be a list of strings" in err


# -- rerank ---------------------------------------------------------------------------------

RERANK = """
req = json.load(sys.stdin)
open(sys.argv[1], 'w').write(json.dumps(req))
# Prefer the candidates whose text mentions planted roofs; score every candidate.
scores = {c['key']: (10.0 if 'planted' in c['snippet'].lower() else 0.0) for c in req['candidates']}
snips = {c['key']: 'RERANKED ' + c['key'] for c in req['candidates']
         if 'planted' in c['snippet'].lower()}
print(json.dumps({'scores': scores, 'snippets': snips}))
"""


def test_rerank_reorders_the_top_and_is_explained(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    root = lib["root"]
    code, plain, _ = search(arkai, root, "hive", "--mode", "lexical", "-k", "4")
    assert code == 0
    assert ids(plain)[0] != lib["Roof gardens"]["id"]
    seen = tmp_path / "seen.json"
    hook = script(tmp_path, "rerank.py", RERANK)
    set_hooks(root, rerank=[str(hook), str(seen)])
    code, res, err = search(arkai, root, "hive", "--mode", "lexical", "-k", "4", "--explain")
    assert code == 0, err
    req = json.loads(seen.read_text())
    assert req["query"] == "hive" and 1 <= len(req["candidates"]) <= 20
    first = req["candidates"][0]
    assert set(first) == {"key", "item", "title", "snippet", "score"}
    assert first["key"].startswith(first["item"] + ":L")
    top = res["results"][0]
    assert top["content_id"] == lib["Roof gardens"]["id"]
    assert top["snippet"].startswith("RERANKED " + top["content_id"])
    lanes = top["hits"][0]["explain"][0]["lanes"]
    assert lanes["rerank"]["score"] == 10.0 and lanes["rerank"]["rank"] >= 1
    assert res["hooks"]["rerank"]["candidates"] == len(req["candidates"])
    # The same items come back, only their order changed.
    assert sorted(ids(res)) == sorted(ids(plain))
    code, out, _ = arkai("--repo", root, "search", "hive", "--mode", "lexical", "--explain")
    assert code == 0 and "rerank hook:" in out and "rerank #" in out


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        ("sys.exit(1)", "exited with status 1"),
        ("print('{')", "output is not JSON"),
        ("print(json.dumps({'scores': {'k': 'high'}}))", "the score of 'k' is not a finite number"),
        ("print(json.dumps({'scores': {'unknown:L1-2': 1.0}}))", "none of the scored keys"),
        ("time.sleep(60)", "no answer within 1s"),
    ],
)
def test_failing_rerank_hook_keeps_the_fused_order(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path, body: str, expect: str
) -> None:
    root = lib["root"]
    _, plain, _ = search(arkai, root, "hive", "--mode", "lexical")
    set_hooks(root, rerank=[str(script(tmp_path, "rerank.py", body))], timeout_s=1)
    code, res, err = search(arkai, root, "hive", "--mode", "lexical")
    assert code == 0, err
    assert ids(res) == ids(plain)
    assert [r["score"] for r in res["results"]] == [r["score"] for r in plain["results"]]
    (warning,) = [w for w in res["warnings"] if w.startswith("hook rerank failed: ")]
    assert expect in warning and "the fused order is kept" in warning


def test_relative_hook_path_is_taken_from_the_repo(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = lib["root"]
    (root / "hooks").mkdir()
    script(root / "hooks", "expand.py", "print(json.dumps({'lex': ['green roofs']}))")
    set_hooks(root, expand=["hooks/expand.py"])
    monkeypatch.chdir(tmp_path)  # not the repo: the path must still resolve
    code, res, err = search(arkai, root, "zyzzyva", "--mode", "lexical", "--explain")
    assert code == 0, err
    assert ids(res)[0] == lib["Roof gardens"]["id"]


def test_context_packs_use_the_builtin_pipeline(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    hook = script(tmp_path, "expand.py", f"open({str(marker)!r}, 'w').write('x'); sys.exit(1)")
    set_hooks(lib["root"], expand=[str(hook)], rerank=[str(hook)])
    code, out, err = arkai("--repo", lib["root"], "context", "varroa", "--json")
    assert code == 0, err
    assert json.loads(out)["entries"] and not marker.exists() and err == ""


def test_variants_are_bounded_and_bad_timeouts_refused(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    root = lib["root"]
    words = ["hive", "roof", "mite", "sensor", "firmware", "colony"]
    hook = script(tmp_path, "expand.py", f"print(json.dumps({{'lex': {words!r}}}))")
    set_hooks(root, expand=[str(hook)])
    code, res, err = search(arkai, root, "zyzzyva", "--mode", "lexical", "--explain")
    assert code == 0, err
    assert list(res["hooks"]["expand"]["lanes"]) == [f"lexical:{n}" for n in range(1, 5)]
    assert res["hooks"]["expand"]["lanes"]["lexical:4"] == "sensor"
    assert any(
        "more than 4 lexical variants; the first ones are used" in w for w in res["warnings"]
    )
    set_hooks(root, expand=[str(hook)], timeout_s=0)
    code, _, err = search(arkai, root, "zyzzyva")
    assert code == 2 and "params.yaml: hooks.timeout_s must be a positive number, got 0" in err
