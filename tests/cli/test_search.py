"""``arkai search``, ``context``, ``library``, ``show`` and ``topics`` over a small index.

The library is written by hand (metadata, transcripts, evidence with real byte spans, one
review) and indexed with the real ``index`` stage (``run_index``); the vector lane uses a fake
embedder — hashed word stems with a few synonyms folded together — put in place of
``arkai.search.embed.get_embedder``, so no model is loaded.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import yaml

from arkai.core import canonjson
from tests.conftest import Runner, sh

# -- a small library ------------------------------------------------------------------------

TALK = [
    "Good evening and welcome to the rooftop science series in Lisbon.",
    "Tonight we talk about city beehives and the sensors inside them.",
    *(
        f"Hive {n} on the roof of building {n} reported a steady weight and a calm colony "
        f"hum through the spring, with the keeper visiting every second week to check it."
        for n in range(1, 25)
    ),
    "The biggest single factor in our data is the Varroa mite.",
    "Heavy mite loads in August predict losses in March.",
    "The HiveSense Mini costs about 140 euros, plus a scale for the weight.",
    "Green roofs cut the heat on the hives by a lot.",
    *(
        f"Colony {n} was weighed every Sunday and the number written down in a notebook, "
        f"which is real data that anyone with a bathroom scale can collect at home."
        for n in range(1, 15)
    ),
    "Thank you all, and go and look at a flower this week.",
]

ITEMS: list[dict[str, Any]] = [
    {
        "folder": "transcripts",
        "title": "Beekeeping talk",
        "source_id": "aaaa0001",
        "tags": ["bees", "talk"],
        "created_at": "2025-03-01T10:00:00Z",
        "published": "2024-11-20",
        "timed": True,
        "lines": TALK,
        "claims": [
            (
                "Varroa mites are the biggest factor.",
                "The biggest single factor in our data is the Varroa mite.",
            ),
            (
                "The HiveSense Mini costs 140 euros.",
                "The HiveSense Mini costs about 140 euros, plus a scale for the weight.",
            ),
            ("Green roofs cool hives.", "Green roofs cut the heat on the hives by a lot."),
        ],
        "rejected": [2],
    },
    {
        "folder": "notes",
        "title": "Hive sensors note",
        "source_id": "bbbb0002",
        "tags": ["bees"],
        "created_at": "2025-06-01T09:00:00Z",
        "lines": [
            "Hive sensors are build inputs too.",
            "A firmware update changed the temperature calibration of every hive sensor.",
            "Pin the firmware version next to the data, like a lock file.",
        ],
        "claims": [
            (
                "Firmware changes calibration.",
                "A firmware update changed the temperature calibration of every hive sensor.",
            )
        ],
    },
    {
        "folder": "chats/chatgpt",
        "title": "Compiler chat",
        "source_id": "cccc0003",
        "tags": ["code"],
        "created_at": "2023-05-05T08:00:00Z",
        "lines": [
            "### user · 2023-05-05 08:00",
            "How does a register allocator work in a compiler?",
            "### assistant · 2023-05-05 08:01",
            "A register allocator maps virtual registers to machine registers by graph colouring.",
        ],
        "claims": [],
    },
    {
        "folder": "articles",
        "title": "Roof gardens",
        "source_id": "dddd0004",
        "tags": ["city", "bees"],
        "created_at": "2025-08-01T08:00:00Z",
        "published": "2022-07-01",
        "lines": [
            "Green roofs are spreading across European cities.",
            "Planted roofs keep buildings cooler in summer and hold rain water.",
            "Some green roofs even host a hive or two.",
        ],
        "claims": [],
    },
]


def _stamp(n: int) -> str:
    s = 4 + 8 * n
    return f"[{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}]"


def _write_item(root: Path, spec: dict[str, Any]) -> dict[str, Any]:
    timed = spec.get("timed", False)
    lines = [f"{_stamp(n)} Speaker: {t}" if timed else t for n, t in enumerate(spec["lines"])]
    text = "\n".join(lines) + "\n"
    cid = hashlib.sha256(spec["source_id"].encode()).hexdigest()[:16]
    rel = f"{spec['folder']}/{spec['title']} ({spec['source_id']})"
    folder = root / "library" / rel
    folder.mkdir(parents=True)
    (folder / "transcript.md").write_text(text, encoding="utf-8")
    meta = {
        "id": cid,
        "title": spec["title"],
        "content_type": spec["folder"],
        "source_id": spec["source_id"],
        "tags": spec["tags"],
        "created_at": spec["created_at"],
        "url": None,
        "timed": timed,
        "schema_version": 2,
    }
    if spec.get("published"):
        meta["published"] = spec["published"]
    (folder / "metadata.json").write_text(canonjson.dumps(meta), encoding="utf-8")
    data = text.encode("utf-8")
    evidence = []
    for claim, quote in spec["claims"]:
        start = data.index(quote.encode())
        end = start + len(quote.encode())
        line = data[:start].count(b"\n") + 1
        eid = hashlib.sha256(f"{cid}{quote}".encode()).hexdigest()[:16]
        evidence.append(
            {
                "id": eid,
                "content_id": cid,
                "claim": claim,
                "quote": quote,
                "quote_sha256": "sha256:" + hashlib.sha256(quote.encode()).hexdigest(),
                "status": "resolved",
                "resolution": {
                    "method": "exact",
                    "match_count": 1,
                    "match_rank": 1,
                    "reason": None,
                },
                "span": {
                    "artifact": "transcript.md",
                    "utf8_byte_offset": [start, end],
                    "slice_sha256": "sha256:" + hashlib.sha256(data[start:end]).hexdigest(),
                    "line": line,
                    "column": 1,
                    "video_timestamp": _stamp(line - 1)[1:-1] if timed else None,
                },
                "confidence": 0.9,
                "extractor": "extract_claims",
                "ts": "2025-01-01T00:00:00Z",
            }
        )
    out = root / "extracted" / rel
    out.mkdir(parents=True)
    (out / "evidence.jsonl").write_text(canonjson.dumps_lines(evidence), encoding="utf-8")
    (out / "entities.json").write_text(
        canonjson.dumps({"schema_version": 1, "entities": [
            {"name": "HiveSense", "type": "product", "confidence": 0.9, "mentions": []}
        ] if timed else []}),
        encoding="utf-8",
    )  # fmt: skip
    (out / "wisdom.json").write_text(
        canonjson.dumps({"summarize": {"summary": f"About {spec['title'].lower()}.",
                                       "points": []}}),
        encoding="utf-8",
    )  # fmt: skip
    rejected = [evidence[i]["id"] for i in spec.get("rejected", [])]
    if rejected:
        review = {"claims": {eid: {"status": "rejected"} for eid in rejected}}
        (folder / "review.yaml").write_text(yaml.safe_dump(review), encoding="utf-8")
    return {"id": cid, "evidence": [e["id"] for e in evidence], "rejected": rejected}


# -- a fake embedder ------------------------------------------------------------------------

_SYNONYMS = {"price": "cost", "euro": "cost", "cheap": "cost", "device": "sensor",
             "small": "mini", "parasite": "mite"}  # fmt: skip


class FakeEmbedder:
    """Hashed bag of word stems (synonyms folded), L2-normalised: similar words → similar
    vectors, without a model."""

    name = "fake"
    dim = 64

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, kind: str = "passage"
    ) -> npt.NDArray[np.float32]:
        from arkai.search.text import tokenize

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for tok in tokenize(text):
                tok = _SYNONYMS.get(tok, tok)
                h = int(hashlib.md5(tok.encode()).hexdigest(), 16)
                out[row, h % self.dim] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


@pytest.fixture
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> FakeEmbedder:
    from arkai.search import embed

    fake = FakeEmbedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
    return fake


@pytest.fixture
def lib(kr: Path, fake_embedder: FakeEmbedder) -> dict[str, Any]:
    """The library above, indexed (lexical, vectors with the fake embedder, topics)."""
    from arkai.ops import Repo
    from arkai.ops.index import run_index

    info = {spec["title"]: _write_item(kr, spec) for spec in ITEMS}
    run_index(Repo.at(kr))
    assert (kr / "index" / "chunks" / "parts.json").is_file()
    return {"root": kr, **info}


def _search(arkai: Runner, root: Path, *args: Any) -> tuple[int, Any, str]:
    code, out, err = arkai("--repo", root, "search", *args, "--json")
    return code, (json.loads(out) if code == 0 else None), err


def _ids(res: dict[str, Any]) -> list[str]:
    return [r["content_id"] for r in res["results"]]


# -- search ---------------------------------------------------------------------------------


def test_exact_rare_term_finds_the_claim(lib: dict[str, Any], arkai: Runner) -> None:
    code, res, err = _search(arkai, lib["root"], "Varroa", "--mode", "lexical")
    assert code == 0, err
    talk = lib["Beekeeping talk"]
    assert _ids(res) == [talk["id"]]
    top = res["results"][0]
    assert top["title"] == "Beekeeping talk" and top["content_type"] == "transcripts"
    hit = top["hits"][0]
    assert hit["link"] == f"{top['path']}/transcript.md#L{hit['start_line']}"
    assert top["path"] == "library/transcripts/Beekeeping talk (aaaa0001)"
    assert hit["start_line"] <= 27 <= hit["end_line"]
    assert hit["timestamp"] and len(hit["timestamp"]) == 8
    claim = next(c for c in hit["claims"] if c["evidence_id"] == talk["evidence"][0])
    assert claim["matched"] and claim["line"] == 27 and claim["link"].endswith("#L27")
    assert "Varroa" in hit["snippet"] and len(hit["snippet"]) <= 250
    s, e = hit["highlights"][0]
    assert hit["snippet"][s:e].lower() == "varroa"


def test_text_output_marks_terms_bold(lib: dict[str, Any], arkai: Runner) -> None:
    code, out, err = arkai("--repo", lib["root"], "search", "varroa", "mite", "--mode", "lexical")
    assert code == 0, err
    assert "1. Beekeeping talk" in out
    assert "**Varroa**" in out and "**mite**" in out
    assert "#L" in out and "claim " in out


def test_vector_lane_finds_a_paraphrase(lib: dict[str, Any], arkai: Runner) -> None:
    code, res, err = _search(arkai, lib["root"], "price of the small device", "--mode", "vector")
    assert code == 0, err
    top = res["results"][0]
    assert top["content_id"] == lib["Beekeeping talk"]["id"]
    claims = {c["evidence_id"] for h in top["hits"] for c in h["claims"]}
    assert lib["Beekeeping talk"]["evidence"][1] in claims
    assert res["lanes"].keys() == {"vector"}


def test_hybrid_explain_shows_lanes(lib: dict[str, Any], arkai: Runner) -> None:
    code, res, err = _search(arkai, lib["root"], "hive sensor firmware", "--explain")
    assert code == 0, err
    assert set(res["lanes"]) == {"lexical", "vector"}
    hit = res["results"][0]["hits"][0]
    first = hit["explain"][0]
    total = sum(v["contribution"] for v in first["lanes"].values())
    assert total == pytest.approx(first["score"])
    # Every lane scores every candidate (rank 0: scored, not retrieved by that lane).
    assert set(first["lanes"]) == {"lexical", "vector"}
    assert max(lane["rank"] for lane in first["lanes"].values()) >= 1
    code, out, _ = arkai("--repo", lib["root"], "search", "hive sensor firmware", "--explain")
    assert code == 0 and "explain:" in out and "lexical #" in out


def test_no_explain_no_explain_field(lib: dict[str, Any], arkai: Runner) -> None:
    _, res, _ = _search(arkai, lib["root"], "firmware", "--mode", "lexical")
    assert "explain" not in res["results"][0]["hits"][0]


def test_filters(lib: dict[str, Any], arkai: Runner) -> None:
    root = lib["root"]
    talk, note = lib["Beekeeping talk"]["id"], lib["Hive sensors note"]["id"]
    roof, chat = lib["Roof gardens"]["id"], lib["Compiler chat"]["id"]

    def ids(q: str) -> set[str]:
        code, res, err = _search(arkai, root, q, "--mode", "lexical")
        assert code == 0, err
        return set(_ids(res))

    assert ids("hive") == {talk, note, roof}
    assert ids("hive in:notes") == {note}
    assert ids("hive in:note in:articles") == {note, roof}
    assert ids("hive -in:transcripts") == {note, roof}
    assert ids("register in:chats/chatgpt") == {chat}
    assert ids("register in:chats") == {chat}
    assert ids("hive tag:bees tag:city") == {roof}
    assert ids("hive -tag:talk") == {note, roof}
    # Dates: published when known, else created_at.
    assert ids("hive after:2025") == {note}  # talk published 2024-11, roof 2022
    assert ids("hive before:2024-12") == {talk, roof}
    assert ids("hive after:2024-11-20 before:2024-11-21") == {talk}
    assert ids("green roofs before:2023") == {roof}


def test_phrases_and_exclusions(lib: dict[str, Any], arkai: Runner) -> None:
    root = lib["root"]
    code, res, err = _search(arkai, root, '"green roofs"', "--mode", "lexical")
    assert code == 0, err
    for r in res["results"]:
        for h in r["hits"]:
            assert "green roofs" in " ".join(h["snippet"].lower().split()) or h["kind"] == "claim"
    code, res, err = _search(arkai, root, "hive -varroa", "--mode", "lexical", "-k", "20")
    assert code == 0, err
    for r in res["results"]:
        for h in r["hits"]:
            assert "varroa" not in h["snippet"].lower()
    code, res, _ = _search(arkai, root, 'hive -"weighed every sunday"', "--mode", "lexical")
    assert code == 0
    assert all("sunday" not in h["snippet"].lower() for r in res["results"] for h in r["hits"])
    # A phrase that occurs nowhere leaves nothing.
    code, _, err = _search(arkai, root, '"hive weight curve"', "--mode", "lexical")
    assert code == 5 and "no results" in err


def test_grouping_best_first_three_per_item(lib: dict[str, Any], arkai: Runner) -> None:
    code, res, err = _search(arkai, lib["root"], "colony weight", "--mode", "lexical")
    assert code == 0, err
    ids = _ids(res)
    assert len(ids) == len(set(ids))
    top = res["results"][0]
    assert top["content_id"] == lib["Beekeeping talk"]["id"]
    assert 2 <= len(top["hits"]) <= 3
    scores = [h["score"] for h in top["hits"]]
    assert scores == sorted(scores, reverse=True) and top["score"] == scores[0]
    lines = [(h["start_line"], h["end_line"]) for h in top["hits"]]
    assert len(set(lines)) == len(lines)
    assert [r["rank"] for r in res["results"]] == list(range(1, len(ids) + 1))
    code, res, _ = _search(arkai, lib["root"], "hive", "--mode", "lexical", "-k", "1")
    assert code == 0 and len(res["results"]) == 1


def test_rejected_claims_are_left_out(lib: dict[str, Any], arkai: Runner) -> None:
    talk = lib["Beekeeping talk"]
    code, res, err = _search(arkai, lib["root"], "green roofs heat hives", "--mode", "lexical")
    assert code == 0, err
    shown = {c["evidence_id"] for r in res["results"] for h in r["hits"] for c in h["claims"]}
    assert talk["rejected"][0] not in shown
    assert all(h["evidence_id"] not in talk["rejected"] for r in res["results"] for h in r["hits"])


def test_claim_rejected_after_indexing_is_left_out(lib: dict[str, Any], arkai: Runner) -> None:
    talk = lib["Beekeeping talk"]
    review = lib["root"] / "library/transcripts/Beekeeping talk (aaaa0001)/review.yaml"
    claims = {e: {"status": "rejected"} for e in [*talk["rejected"], talk["evidence"][0]]}
    review.write_text(yaml.safe_dump({"claims": claims}), encoding="utf-8")
    code, res, err = _search(arkai, lib["root"], "Varroa", "--mode", "lexical")
    assert code == 0, err
    shown = {c["evidence_id"] for r in res["results"] for h in r["hits"] for c in h["claims"]}
    assert talk["evidence"][0] not in shown


def test_no_results_exit_5(lib: dict[str, Any], arkai: Runner) -> None:
    code, out, err = arkai("--repo", lib["root"], "search", "zebra", "--mode", "lexical")
    assert code == 5 and out == ""
    assert "no results for 'zebra'" in err
    code, _, err = arkai("--repo", lib["root"], "search", "varroa", "in:pdfs")
    assert code == 5 and "after filters" in err


def test_bad_markup_and_empty_queries_exit_2(lib: dict[str, Any], arkai: Runner) -> None:
    code, _, err = arkai("--repo", lib["root"], "search", "hive", "before:2024-13")
    assert code == 2 and "before:2024-13" in err
    code, _, err = arkai("--repo", lib["root"], "search", "in:notes")
    assert code == 2 and "no search terms" in err


def test_missing_index_says_how_to_build(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "search", "hive")
    assert code == 1
    assert "dvc repro" in err and "arkai reindex" in err


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda f: f.write_bytes(f.read_bytes()[:100]), "bm25.npz"),
        (lambda f: f.write_bytes(b""), "bm25.npz"),
        (lambda f: f.with_suffix(".npy").write_bytes(b""), "seg-"),
        (lambda f: f.with_suffix(".npy").write_bytes(f.with_suffix(".npy").read_bytes()[:-40]),
         "seg-"),
        (lambda f: f.with_suffix(".keys").unlink(), "seg-"),
    ],
    ids=["bm25 cut short", "bm25 emptied", "segment emptied", "segment torn", "keys gone"],
)  # fmt: skip
def test_a_damaged_index_file_is_named_with_how_to_mend_it(
    lib: dict[str, Any], arkai: Runner, damage: Callable[[Path], None], named: str
) -> None:
    """A file of index/lexical or index/vectors damaged (a bad pull, a disk error): search
    names it and says to rebuild — it said "unexpected error: BadZipFile", "aborted" (numpy's
    EOFError, which click takes for the end of input) or that no vectors were made."""
    index = lib["root"] / "index"
    if named == "bm25.npz":
        target = index / "lexical" / "bm25.npz"
    else:
        (target,) = (index / "vectors").glob("seg-*.npy")
        target = target.with_suffix(".x")  # (each attack picks its suffix)
    damage(target)
    code, _, err = arkai("--repo", lib["root"], "search", "varroa mite")
    assert code == 1, err
    assert "unexpected" not in err and "aborted" not in err
    line = err.strip().splitlines()[-1]
    assert str(index) in line and named in line, line
    assert "arkai reindex" in line and "dvc repro" in line, line


def test_asof_without_git_is_invalid(lib: dict[str, Any], arkai: Runner) -> None:
    code, _, err = arkai("--repo", lib["root"], "search", "hive", "asof:2025-01-01")
    assert code == 2 and "git" in err


def test_asof_reads_git_history(lib: dict[str, Any], arkai: Runner) -> None:
    """Two commits with fixed dates; asof: between them sees only the first commit's items."""
    root = lib["root"]
    sh(root, "git", "init", "-q")
    note = root / "library/notes/Hive sensors note (bbbb0002)"
    hidden = root / "note-later"  # outside library/ for the first commit
    note.rename(hidden)
    sh(root, "git", "add", "library")
    sh(root, "git", "commit", "-qm", "first", when="2025-01-10T12:00:00Z")
    hidden.rename(note)
    sh(root, "git", "add", "library")
    sh(root, "git", "commit", "-qm", "second", when="2025-03-10T12:00:00Z")
    code, res, err = _search(arkai, root, "hive asof:2025-02", "--mode", "lexical")
    assert code == 0, err
    assert lib["Hive sensors note"]["id"] not in _ids(res)
    assert res["asof"]["items"] == 3 and res["asof"]["committed_at"] == "2025-01-10T12:00:00Z"
    code, res, _ = _search(arkai, root, "hive asof:2025-03-10", "--mode", "lexical")
    assert lib["Hive sensors note"]["id"] in _ids(res)
    code, _, err = _search(arkai, root, "hive asof:2024", "--mode", "lexical")
    assert code == 5


def test_lexical_search_does_not_import_model_libraries(lib: dict[str, Any]) -> None:
    script = (
        "import sys, json\n"
        "from arkai.cli import main\n"
        f"code = main(['--repo', {str(lib['root'])!r}, 'search', '--mode', 'lexical', "
        "'varroa', '--json'])\n"
        "assert code == 0, code\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'onnxruntime', 'transformers')"
        " if m in sys.modules]\n"
        "print('HEAVY', json.dumps(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []"


# -- context --------------------------------------------------------------------------------


def test_context_pack_markdown(lib: dict[str, Any], arkai: Runner) -> None:
    code, out, err = arkai("--repo", lib["root"], "context", "varroa", "mite", "--budget", "400",
                           "--mode", "lexical")  # fmt: skip
    assert code == 0, err
    assert out.startswith("# Context: varroa mite\n")
    assert "1. > The biggest single factor in our data is the Varroa mite." in out
    eid = lib["Beekeeping talk"]["evidence"][0]
    assert f"— Beekeeping talk, evidence {eid}, library/transcripts/Beekeeping talk (aaaa0001)/" \
           "transcript.md#L27 (00:03:32)" in out  # fmt: skip
    assert len(out) <= 400 * 4


@pytest.mark.parametrize("budget", [60, 150, 400, 2000])
def test_context_json_within_budget(lib: dict[str, Any], arkai: Runner, budget: int) -> None:
    code, out, err = arkai("--repo", lib["root"], "context", "hive weight colony", "--budget",
                           budget, "--json", "--mode", "lexical")  # fmt: skip
    assert code == 0, err
    pack = json.loads(out)
    assert pack["budget"] == budget and pack["tokens_used"] <= budget
    assert pack["tokens_used"] == -(-len(pack["markdown"]) // 4)
    entries = pack["entries"]
    assert [e["n"] for e in entries] == list(range(1, len(entries) + 1))
    ids = [e["evidence_id"] for e in entries if e["evidence_id"]]
    assert len(ids) == len(set(ids))
    texts = [" ".join(e["text"].split()) for e in entries]
    assert len(texts) == len(set(texts))
    for e in entries:
        assert e["link"] == f"{e['path']}/transcript.md#L{e['start_line']}"
        assert e["citation"].startswith(f"— {e['title']}")
    if budget >= 150:
        assert entries


def test_context_claims_first_and_no_overlap(lib: dict[str, Any], arkai: Runner) -> None:
    code, out, err = arkai("--repo", lib["root"], "context", "HiveSense price euros",
                           "--json", "--mode", "lexical")  # fmt: skip
    assert code == 0, err
    entries = json.loads(out)["entries"]
    kinds = [e["kind"] for e in entries]
    assert kinds[0] == "claim" and kinds == sorted(kinds)  # claims, then passages
    assert entries[0]["evidence_id"] == lib["Beekeeping talk"]["evidence"][1]
    for n, a in enumerate(entries):
        for b in entries[n + 1 :]:
            if a["content_id"] == b["content_id"] and a["kind"] == b["kind"] == "passage":
                assert a["end_line"] < b["start_line"] or b["end_line"] < a["start_line"]


def test_context_no_results_exit_5(lib: dict[str, Any], arkai: Runner) -> None:
    code, _, err = arkai("--repo", lib["root"], "context", "zebra", "--mode", "lexical")
    assert code == 5 and "no results" in err


# -- library, show, topics ------------------------------------------------------------------


def test_library_lists_from_catalog_and_filters(lib: dict[str, Any], arkai: Runner) -> None:
    code, out, err = arkai("--repo", lib["root"], "library", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["count"] == 4 and {r["listed_from"] for r in res["items"]} == {"catalog"}
    talk = next(r for r in res["items"] if r["title"] == "Beekeeping talk")
    assert talk["claims"] == 2 and talk["tags"] == ["bees", "talk"]
    code, out, _ = arkai("--repo", lib["root"], "library", "--type", "chats", "--json")
    assert [r["title"] for r in json.loads(out)["items"]] == ["Compiler chat"]
    code, out, _ = arkai("--repo", lib["root"], "library", "--tag", "BEES", "--json")
    assert json.loads(out)["count"] == 3
    code, out, _ = arkai("--repo", lib["root"], "library")
    assert code == 0 and "4 items" in out and "Roof gardens" in out


def test_library_without_index_scans(kr: Path, arkai: Runner) -> None:
    _write_item(kr, ITEMS[1])
    code, out, err = arkai("--repo", kr, "library", "--json")
    assert code == 0, err
    (row,) = json.loads(out)["items"]
    assert row["listed_from"] == "library" and row["claims"] == 1


def test_library_never_hides_items_behind_a_stale_catalog(
    lib: dict[str, Any], arkai: Runner
) -> None:
    root = Path(lib["root"])
    extra = {**ITEMS[1], "title": "Added after indexing", "source_id": "ffff0009"}
    _write_item(root, extra)
    code, out, err = arkai("--repo", root, "library", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["count"] == 5
    new = next(r for r in res["items"] if r["title"] == "Added after indexing")
    assert new["listed_from"] == "library" and new["claims"] == 1
    assert any("stale" in w and "1 item(s) not indexed" in w for w in res["warnings"])
    code, out, err = arkai("--repo", root, "library")
    assert code == 0 and "5 items" in out and "Added after indexing" in out
    assert "stale" in err and "dvc repro" in err


def test_show_item(lib: dict[str, Any], arkai: Runner) -> None:
    talk = lib["Beekeeping talk"]
    code, out, err = arkai("--repo", lib["root"], "show", talk["id"][:8], "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["id"] == talk["id"] and info["title"] == "Beekeeping talk"
    assert info["claims"]["total"] == 3
    assert info["claims"]["by_status"] == {"resolved": 3}
    assert info["claims"]["by_review"] == {"rejected": 1, "unreviewed": 2}
    assert info["entities"]["top"][0]["name"] == "HiveSense"
    assert info["summary"] == "About beekeeping talk."
    assert "list" not in info["claims"] and "transcript" not in info
    code, out, _ = arkai("--repo", lib["root"], "show", "aaaa0001", "--full", "--json")
    full = json.loads(out)
    assert full["transcript"] == "library/transcripts/Beekeeping talk (aaaa0001)/transcript.md"
    rows = {c["evidence_id"]: c for c in full["claims"]["list"]}
    assert rows[talk["rejected"][0]]["review"] == "rejected"
    assert rows[talk["evidence"][0]]["link"].endswith("#L27")
    code, out, _ = arkai("--repo", lib["root"], "show", talk["id"], "--full")
    assert code == 0 and "Beekeeping talk" in out and "transcript:" in out


def test_show_unknown_exit_5(lib: dict[str, Any], arkai: Runner) -> None:
    code, _, err = arkai("--repo", lib["root"], "show", "ffffffffffff")
    assert code == 5 and "no item" in err


def test_topics_index_then_grep(lib: dict[str, Any], arkai: Runner) -> None:
    root = lib["root"]
    code, out, err = arkai("--repo", root, "topics", "HiveSense", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["source"] == "topics"
    assert lib["Beekeeping talk"]["id"] in {h["content_id"] for h in res["results"]}
    code, out, err = arkai("--repo", root, "topics", "lock file", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["source"] == "grep" and res["reason"] == "not in the topic index"
    (line,) = res["results"]
    assert line["content_id"] == lib["Hive sensors note"]["id"] and line["line"] == 3
    assert line["link"].endswith("transcript.md#L3")
    code, out, _ = arkai("--repo", root, "topics", "lock", "file")
    assert code == 0 and "not in the topic index; grep found 1 lines" in out
    code, _, err = arkai("--repo", root, "topics", "zebra")
    assert code == 5 and "no results" in err
