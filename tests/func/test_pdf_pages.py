"""A real PDF through ``arkai add`` → extract → index → validate, search, context, evidence
show, ``claims.md`` and the site: every span and citation carries its page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.site.build import build_site
from tests.adapters.test_pdf import make_pdf
from tests.conftest import Runner

pytestmark = pytest.mark.slow

PAGES = [
    [
        "Keeping bees in a small garden.",
        "The hive stands on a low stand near the fence.",
        "Beekeepers open the hive every week in spring.",
    ],
    [
        "The queen lays about two thousand eggs a day in early summer.",
        "Worker bees build the comb from wax made in their bodies.",
        "A strong colony stores more honey than it needs for winter.",
    ],
    [
        "Varroa mites are the most serious pest of honey bees in Europe.",
        "Oxalic acid treatment against Varroa works best in late autumn.",
        "Sugar syrup feeding helps a weak colony through the first frost.",
    ],
]


def _pages_of(transcript: bytes) -> dict[int, int]:
    """Line number → page, read from the ``[p. N]`` lines (independently of arkai's code)."""
    out: dict[int, int] = {}
    page = 0
    for n, line in enumerate(transcript.decode().split("\n"), 1):
        m = re.fullmatch(r"\[p\. (\d+)\]", line)
        page = int(m[1]) if m else page
        out[n] = page
    return out


def _spans(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found = [value] if "utf8_byte_offset" in value else []
        return found + [s for v in value.values() for s in _spans(v)]
    if isinstance(value, list):
        return [s for v in value for s in _spans(v)]
    return []


def test_pdf_pages_reach_every_output(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params["index"]["embedder"] = "none"  # lexical lane only: no model to load
    (kr / "params.yaml").write_text(yaml.safe_dump(params))
    pdf = tmp_path / "hive-notes.pdf"
    pdf.write_bytes(make_pdf(PAGES, title="Hive notes"))
    note = tmp_path / "note.md"
    note.write_text("# Varroa check\n\nVarroa mites were counted on the sticky board today.\n")
    assert arkai("--repo", kr, "add", "-q", pdf, note)[0] == 0
    assert arkai("--repo", kr, "extract", "-q")[0] == 0

    [pdf_out] = [p for p in (kr / "extracted" / "pdfs").iterdir()]
    [pdf_lib] = [p for p in (kr / "library" / "pdfs").iterdir()]
    pages = _pages_of((pdf_lib / "transcript.md").read_bytes())
    evidence = [json.loads(x) for x in (pdf_out / "evidence.jsonl").read_text().splitlines()]
    spans = _spans(evidence)
    spans += _spans(json.loads((pdf_out / "entities.json").read_text()))
    spans += _spans(json.loads((pdf_out / "wisdom.json").read_text()))
    assert len(spans) >= 10
    for span in spans:  # evidence, entity mentions and wisdom quotes alike
        assert span["page"] == pages[span["line"]] >= 1, span
    assert {s["page"] for s in _spans(evidence)} >= {2, 3}
    # Other items: no page field at all.
    for path in (kr / "extracted" / "notes").rglob("*.json*"):
        assert '"page"' not in path.read_text(), path

    # evidence show: "p. N" beside the location.
    on_p3 = next(e for e in evidence if e["span"] and e["span"]["page"] == 3)
    code, out, _ = arkai("--repo", kr, "evidence", "show", on_p3["id"])
    assert code == 0 and re.search(r"transcript\.md:\d+:\d+  \(p\. 3\)", out), out
    code, out, _ = arkai("--repo", kr, "evidence", "show", on_p3["id"], "--json")
    assert json.loads(out)["page"] == 3
    assert f"p. 3, [L{on_p3['span']['line']}]" in (pdf_out / "claims.md").read_text()
    cid = json.loads((pdf_lib / "metadata.json").read_text())["id"]
    code, out, _ = arkai("--repo", kr, "evidence", "resolve", cid, on_p3["quote"])
    assert code == 0 and f"line {on_p3['span']['line']} column 1 (p. 3)" in out, out
    code, out, _ = arkai("--repo", kr, "show", cid, "--full")
    assert code == 0 and f"p. 3, L{on_p3['span']['line']}" in out, out
    code, out, _ = arkai("--repo", kr, "show", cid, "--full", "--json")
    listed = {c["evidence_id"]: c for c in json.loads(out)["claims"]["list"]}
    assert listed[on_p3["id"]]["page"] == 3

    # validate checks the page like line and column: a forged one fails.
    assert arkai("--repo", kr, "validate")[0] == 0
    forged = [
        {**e, "span": {**e["span"], "page": 1}} if e["id"] == on_p3["id"] else e for e in evidence
    ]
    original = (pdf_out / "evidence.jsonl").read_text()
    (pdf_out / "evidence.jsonl").write_text("".join(json.dumps(e) + "\n" for e in forged))
    code, out, err = arkai("--repo", kr, "validate")
    assert code != 0 and "page 1 should be 3" in out + err
    (pdf_out / "evidence.jsonl").write_text(original)

    # index → search (JSON and text) and context, for the words of the claim on page 3.
    assert arkai("--repo", kr, "reindex", "-q")[0] == 0
    query = on_p3["quote"].rstrip(".")
    code, out, _ = arkai("--repo", kr, "search", query, "--mode", "lexical", "--json")
    assert code == 0
    top = json.loads(out)["results"][0]
    assert top["title"] == "Hive notes"
    for hit in top["hits"]:  # the page a hit starts on (a title line belongs to page 1)
        assert hit["page"] == max(1, pages[hit["start_line"]]), hit
    assert top["page"] == top["hits"][0]["page"]
    claims = [c for h in top["hits"] for c in h["claims"]]
    assert all(c["page"] == pages[c["line"]] for c in claims)
    assert any(c["evidence_id"] == on_p3["id"] and c["page"] == 3 for c in claims), claims
    code, out, _ = arkai("--repo", kr, "search", "varroa", "--mode", "lexical", "--json")
    notes = [r for r in json.loads(out)["results"] if r["content_type"] == "notes"]
    assert notes and "page" not in notes[0] and "page" not in notes[0]["hits"][0]
    code, out, _ = arkai("--repo", kr, "search", query, "--mode", "lexical")
    assert code == 0 and re.search(r"   p\. \d, L\d+-\d+ ", out), out
    assert f"claim {on_p3['id']} (p. 3, L{on_p3['span']['line']})" in out, out
    code, out, _ = arkai("--repo", kr, "context", query, "--mode", "lexical", "--json")
    assert code == 0
    pack = json.loads(out)
    for entry in pack["entries"]:
        if entry["title"] == "Hive notes":
            assert entry["page"] == max(1, pages[entry["start_line"]]), entry
        else:
            assert "page" not in entry and ", p. " not in entry["citation"], entry
    [first] = [e for e in pack["entries"] if e["evidence_id"] == on_p3["id"]]
    assert first["page"] == 3
    assert first["citation"] == (
        f"— Hive notes, p. 3, evidence {on_p3['id']}, {first['path']}/transcript.md"
        f"#L{on_p3['span']['line']}"
    )
    assert first["citation"] in pack["markdown"]

    # The site: claim cards say "p. N · L<line>".
    build_site(kr, mkdocs=False)
    html = (kr / ".site-build" / "docs" / "items" / f"{cid}.md").read_text()
    assert f"p. 3 · L{on_p3['span']['line']}" in html
