"""Entity types and salience of the builtin provider: names that are not people, code tokens,
discourse phrases, the gazetteer, and ranking by how central an entity is."""

from __future__ import annotations

import pytest

from arkai.formats import parse_source, render_transcript
from arkai.providers.base import ProviderError
from arkai.providers.builtin import entities as entities_mod
from arkai.providers.builtin import names
from arkai.providers.builtin.entities import NerSpan, extract_entities
from tests.conftest import TRANSCRIPTS


def _model() -> bool:
    try:
        entities_mod.load_model()
    except ProviderError:
        return False
    return True


needs_model = pytest.mark.skipif(not _model(), reason="spaCy model not installed")


def _grouped(text: str, spans: list[tuple[str, str]]) -> dict[str, entities_mod._Group]:
    found, pos = [], 0
    for surface, label in spans:
        start = text.index(surface, pos)
        found.append(NerSpan(start, start + len(surface), label))
        pos = start + 1
    return entities_mod._group_ner(text, found)


def test_shapes_that_are_no_person() -> None:
    for surface in ("GraphQL", "USB-C", "Thunderbolt 3", "DEV.to", "SQL", "Mom", "Background"):
        assert names.not_a_person(surface), surface
    for surface in ("Mark Cuban", "Sebastian McKenzie", "Liu He", "Bekah", "Conan O'Brien"):
        assert not names.not_a_person(surface), surface


def test_code_tokens_and_code_lines() -> None:
    for surface in ("useState/useReducer", "customer_id", "GET/POST/PUT/DELETE", "DESC LIMIT 1000"):
        assert names.looks_like_code(surface), surface
    assert not names.looks_like_code("Virtual Coffee")
    assert names.code_line("SELECT * FROM users WHERE id > 3 ORDER BY id DESC LIMIT 10;")
    assert names.code_line("const total = items.reduce(add, 0);")
    assert not names.code_line("For example, Webpack bundles the code for the browser.")


def test_discourse_words_are_stripped_from_the_front() -> None:
    assert names.strip_leading("For example") == len("For example")
    assert names.strip_leading("Compare React") == len("Compare ")
    assert names.strip_leading("Virtual Coffee") == 0


def test_gazetteer_and_event_shapes() -> None:
    assert names.known_type("Webpack") == "product"
    assert names.known_type("twitter") == "org"
    assert names.known_type("MacBook Pro") == "product"
    assert "Ruby" not in names.SEARCHABLE  # also an everyday word: typed, never searched for
    assert names.event_shaped("Hacktoberfest") and names.event_shaped("PyCon")
    assert not names.event_shaped("Falcon Heavy lift")


def test_ner_person_labels_are_corrected() -> None:
    text = (
        "[00:00:01] I saw it on Twitter and Webpack was slow, said Nick Taylor.\n"
        "[00:00:05] For example, GraphQL helps. Mom agreed. HacktoberFest starts soon.\n"
        "[00:00:09] We used useState/useReducer and Mark Cuban laughed.\n"
    )
    groups = _grouped(
        text,
        [
            ("Twitter", "PERSON"),
            ("Webpack", "PERSON"),
            ("Nick Taylor", "PERSON"),
            ("For example", "PERSON"),
            ("GraphQL", "PERSON"),
            ("Mom", "PERSON"),
            ("HacktoberFest", "ORG"),
            ("useState/useReducer", "ORG"),
            ("Mark Cuban", "PERSON"),
        ],
    )
    types = {g.name(): g.etype for g in groups.values()}
    assert types == {
        "Twitter": "org",
        "Webpack": "product",
        "Nick Taylor": "person",
        "GraphQL": "product",
        "HacktoberFest": "event",
        "Mark Cuban": "person",
    }


def test_lowercase_edge_words_leave_the_name() -> None:
    text = "The older MacBook Pro for travel and the MacBook Pro at home.\n"
    groups = _grouped(text, [("older MacBook Pro for", "ORG"), ("MacBook Pro", "ORG")])
    assert list(groups) == ["macbook pro"]
    assert groups["macbook pro"].etype == "product"


@needs_model
def test_code_chat_has_no_code_tokens_or_discourse_phrases_as_people() -> None:
    text = (
        "# React state\n\n### human · 2026-01-01 10:00:00 UTC\n\nCompare React state options.\n\n"
        "### assistant · 2026-01-01 10:00:10 UTC\n\n"
        "For example, Redux keeps one store. For example, MobX tracks observables.\n\n"
        "Use useState/useReducer for local state. Webpack bundles it; Twitter users like it.\n\n"
        "SELECT * FROM users WHERE created_at > '2025-01-01' ORDER BY id DESC LIMIT 1000;\n"
    )
    ents = extract_entities(text)["entities"]
    people = {e["name"] for e in ents if e["type"] == "person"}
    assert not people, people
    named = {e["name"]: e["type"] for e in ents}
    assert named.get("Webpack") == "product" and named.get("Redux") == "product"
    assert not any("/" in n or "LIMIT" in n or n.lower().startswith("for ") for n in named)


@needs_model
def test_named_entities_outrank_generic_words() -> None:
    lines = []
    for i in range(12):
        who = "Amara Okafor" if i % 3 == 0 else "her friends"
        lines.append(f"[00:00:{i:02d}] My friends and {who} met the friends of friends in Lisbon.")
    text = "\n".join(lines) + "\n"
    ents = extract_entities(text)["entities"]
    # Lisbon is on every line, Amara Okafor on a third of them, "friends" everywhere but generic.
    assert [e["name"] for e in ents[:2]] == ["Lisbon", "Amara Okafor"]


@pytest.mark.slow
@needs_model
def test_podcast_entities_on_a_real_episode() -> None:
    src = TRANSCRIPTS / "virtual_coffee_srt" / "episode_1_1.srt"
    if not src.exists():
        pytest.skip("needs ../shared/data")
    text = render_transcript(parse_source(src.name, src.read_bytes()))
    ents = extract_entities(text)["entities"]
    types = {e["name"]: e["type"] for e in ents}
    assert types["Virtual Coffee"] == "org"
    assert types["Twitter"] == "org" and types["Webpack"] == "product"
    assert types["JavaScript"] == "product"
    top = [e["name"] for e in ents[:5]]
    assert "Virtual Coffee" in top
    generic = [n for n in top if " " not in n and n.islower()]
    assert not generic, top  # "project", "code", "fun": frequent, not salient


def test_one_word_keyphrases_take_at_most_half_the_concept_slots() -> None:
    from arkai.providers.builtin.text import split_lines

    words = ["garden", "hive", "queen", "honey", "flower", "pollen", "nectar", "wax", "comb"]
    rows = []
    for i in range(30):
        a, b, c = words[i % 9], words[(i + 3) % 9], words[(i + 5) % 9]
        extra = " The smoker calms bees before a hive inspection." if i % 4 == 0 else ""
        rows.append(f"[00:00:{i:02d}] Every {a} near the {b} shapes the {c} somehow.{extra}")
    text = "\n".join(rows) + "\n"
    lines = [ln for ln in split_lines(text) if ln.kind == "text"]
    chosen = entities_mod.concept_groups(text, lines, set())
    single = [k for k in chosen if " " not in k]
    assert len(single) <= entities_mod.MAX_CONCEPTS // 2, sorted(chosen)
    assert any(" " in k for k in chosen), sorted(chosen)
