"""The labelled development sets in bench/data and the scorer of bench/quality.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.bench import load_bench
from tests.conftest import SHARED_DATA

# Reads the shared transcripts: fails (never skips) without ../shared/data (tests/conftest.py).
pytestmark = pytest.mark.shared_data

# What may lie between two labelled units: spaces, newlines, a line's timestamp, a speaker label.
_GAP = re.compile(rb"^(?:\s|\[\d\d:\d\d:\d\d\] |[A-Z][\w .'-]{0,40}: )*$")


Q = load_bench("quality")


def test_claims_devset_matches_shared_transcripts() -> None:
    talks = Q.load_claims()  # raises when a hash, a range or a label is wrong
    assert len(talks) >= 4
    assert sum(len(t.rows) for t in talks) >= 600
    suffixes = {t.source.suffix for t in talks}
    assert {".srt", ".vtt", ".json"} <= suffixes
    for talk in talks:
        labels = {r.label for r in talk.rows}
        assert labels == {"claim", "filler"}, talk.name
        assert len(talk.rows) >= 100, talk.name
        for gap in Q.gaps(talk):  # the stretch is labelled end to end
            assert _GAP.match(gap), (talk.name, gap[:80])


def test_every_row_is_valid_json_with_a_known_label() -> None:
    rows = [json.loads(x) for x in (Q.DATA / "claims_devset.jsonl").read_text().splitlines()]
    assert all(set(r) == {"talk", "start_byte", "end_byte", "sha256", "label"} for r in rows)
    assert {r["label"] for r in rows} == {"claim", "filler"}


def test_a_changed_transcript_is_refused(tmp_path: Path) -> None:
    meta = json.loads((Q.DATA / "claims_devset_talks.json").read_text())
    name = next(iter(meta))
    meta[name]["transcript_sha256"] = "0" * 64
    (tmp_path / "claims_devset_talks.json").write_text(json.dumps(meta))
    (tmp_path / "claims_devset.jsonl").write_bytes((Q.DATA / "claims_devset.jsonl").read_bytes())
    with pytest.raises(Q.DevsetError, match=f"talk {name}: transcript.md rebuilt from"):
        Q.load_claims(tmp_path, SHARED_DATA)


def test_a_wrong_row_hash_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "claims_devset_talks.json").write_bytes(
        (Q.DATA / "claims_devset_talks.json").read_bytes()
    )
    lines = (Q.DATA / "claims_devset.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["end_byte"] -= 1
    lines[4] = json.dumps(row)
    (tmp_path / "claims_devset.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(Q.DevsetError, match=r"claims_devset.jsonl:5: sha256 of bytes"):
        Q.load_claims(tmp_path, SHARED_DATA)


def test_scorer_on_a_hand_made_example() -> None:
    Row = Q.Row
    rows = [
        Row("t", 0, 10, "claim"),
        Row("t", 11, 20, "filler"),
        Row("t", 21, 40, "claim"),
        Row("t", 41, 50, "claim"),
    ]
    spans = [
        (0, 10),  # exactly a claim row: worth citing, finds row 0
        (5, 19),  # 5 claim bytes, 8 filler bytes: not worth citing; 5 >= 10/2 still finds row 0
        (22, 28),  # inside the long claim row: worth citing, finds it (6 >= 6/2)
        (60, 70),  # outside every row: not scored
    ]
    got = Q.score_claims(rows, spans)
    assert got["scored"] == 3 and got["worth_citing"] == 2 and got["outside"] == 1
    assert got["precision"] == round(2 / 3, 4)
    assert got["found"] == 2 and got["claim_rows"] == 3
    assert got["recall"] == round(2 / 3, 4)


def test_scorer_needs_half_of_the_shorter_to_find_a_row() -> None:
    rows = [Q.Row("t", 0, 20, "claim"), Q.Row("t", 20, 40, "filler")]
    assert Q.score_claims(rows, [(15, 40)])["found"] == 0  # 5 of 20 bytes: a tail, not the row
    assert Q.score_claims(rows, [(15, 40)])["precision"] == 0.0
    assert Q.score_claims(rows, [(10, 25)])["found"] == 1  # 10 of the 15-byte quote
    assert Q.score_claims(rows, [])["precision"] is None


def test_minutes_of_a_stretch() -> None:
    text = b"[00:00:10] a\n[00:01:10] b\n[00:02:40] c\n"
    assert Q.minutes(text, 0, 26) == 2.5  # to the next line's time
    assert Q.minutes(text, 0, len(text)) == 2.75  # last line counts 15 s


def test_entities_devset_matches_shared_documents() -> None:
    texts, mentions = Q.load_entities()  # raises when a hash, a range or a type is wrong
    assert len(mentions) >= 200
    assert {m.doc for m in mentions} == set(texts)
    kinds = {m.type for m in mentions}
    assert {"person", "org", "product", "location", "event", "concept", "none"} <= kinds
    articles = [d for d in texts if texts[d].startswith(b"# ") and b"### " not in texts[d]]
    assert articles, "the set must include articles as well as transcripts and chats"


def test_predicted_type_is_the_overlapping_entity_sharing_a_word() -> None:
    text = b"[00:00:01] Nick Taylor works at Forem with Dan.\n[00:00:05] Forem makes DEV.\n"
    entities = [
        {"name": "Nick Taylor", "type": "person", "mentions": [{"quote": "Nick Taylor works"}]},
        {"name": "works", "type": "concept", "mentions": [{"quote": "works at Forem"}]},
        {"name": "Forem", "type": "org", "mentions": [{"quote": "Forem makes"}]},
    ]

    def at(surface: bytes, nth: int = 0) -> tuple[int, int]:
        start = -1
        for _ in range(nth + 1):
            start = text.index(surface, start + 1)
        return start, start + len(surface)

    gold = [
        Q.Mention("d", *at(b"Nick Taylor"), "person"),
        Q.Mention("d", *at(b"Forem"), "org"),  # no quote on it: found by name
        Q.Mention("d", *at(b"Forem", 1), "org"),  # the quote "Forem makes"
        Q.Mention("d", *at(b"Dan"), "person"),  # nothing: None
        Q.Mention("d", *at(b"DEV"), "none"),
    ]
    got = Q.predicted_types(text, entities, gold)
    assert got == ["person", "org", "org", None, None]
    assert [m.accepts(t) for m, t in zip(gold, got, strict=True)] == [True, True, True, False, True]
