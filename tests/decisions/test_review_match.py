"""``adapters.review.match_reviews``: the one place a review.yaml key meets a claim."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from arkai.adapters.review import match_reviews, parse_review, review_for, review_key
from arkai.core.document import Document
from arkai.core.evidence import evidence_from_match
from arkai.core.resolve import resolve_quote
from arkai.errors import LibraryError
from arkai.model.evidence import EvidenceLine, Review

TEXT = b"Alpha beta gamma. Delta epsilon zeta. Eta theta iota.\n"


def line(quote: str, text: bytes = TEXT) -> EvidenceLine:
    return evidence_from_match(
        match=resolve_quote(Document(text), quote), content_id="c" * 16, claim=quote, quote=quote,
        confidence=0.9,
        extractor="extract_claims", ts="2026-01-01T00:00:00Z",
    )  # fmt: skip


def test_stable_key_matches_across_offsets() -> None:
    a, moved = line("Delta epsilon zeta."), line("Delta epsilon zeta.", b"New. " + TEXT)
    assert a.id != moved.id and review_key(a) == review_key(moved)
    got = match_reviews([moved], {review_key(a): {"status": "rejected"}})
    assert got.lines[0].rejected and got.orphans == {}


def test_old_key_follows_the_claim_through_previous_evidence() -> None:
    a = line("Delta epsilon zeta.")
    moved = line("Delta epsilon zeta.", b"New. " + TEXT)
    reviews = {a.id: {"status": "rejected", "note": "old"}}
    once = match_reviews([moved], reviews, previous=[a]).lines[0]
    assert once.review == Review(status="rejected", note="old", key=a.id)
    again = line("Delta epsilon zeta.", b"Newer. New. " + TEXT)
    twice = match_reviews([again], reviews, previous=[once]).lines[0]
    assert twice.rejected and twice.review is not None and twice.review.key == a.id
    # Without the previous evidence the old key names nothing: reported, not dropped.
    lost = match_reviews([again], reviews)
    assert not lost.lines[0].rejected and lost.orphans == reviews


def test_exact_stable_key_wins_over_an_older_key() -> None:
    a = line("Alpha beta gamma.")
    reviews = {a.id[:8]: {"status": "rejected"}, review_key(a): {"status": "accepted"}}
    got = match_reviews([a], reviews).lines[0]
    assert got.review is not None and got.review.status == "accepted"
    assert review_for(reviews, a.id, review_key(a)) == {"status": "accepted"}


def test_a_stale_review_on_a_line_is_cleared() -> None:
    a = replace(line("Eta theta iota."), review=Review(status="rejected", key="deadbeefdeadbeef"))
    got = match_reviews([a], {"0123456789abcdef": {"status": "accepted"}})
    assert got.lines[0].review is None and list(got.orphans) == ["0123456789abcdef"]


def test_parse_review_strict_and_lenient() -> None:
    path = Path("library/x/review.yaml")
    with pytest.raises(LibraryError, match=r"library/x/review\.yaml: not valid YAML"):
        parse_review(b"claims: [", path)
    with pytest.raises(LibraryError, match="status must be one of"):
        parse_review(b"claims:\n  abc: maybe\n", path)
    assert parse_review(b"claims:\n  abc: maybe\n  def: rejected\n", path, strict=False) == {
        "def": {"status": "rejected"}
    }
    assert parse_review(None, path) == {} and parse_review(b"", path) == {}
