"""The LLM patterns ask for the claims standard: the request a remote provider sends carries the
rubric and the worked examples of each pattern (checked on a real local HTTP server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arkai.patterns.load import get_pattern
from arkai.providers.openai import OpenAIProvider
from arkai.providers.runner import ResponseStore, Runner
from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401

TEXT = (
    "[00:00:01] Alice: Hi everyone, in this video we'll look at honey bees.\n"
    "[00:00:05] Alice: Honey bees communicate the location of flowers with a waggle dance.\n"
    "[00:00:09] Alice: The angle of the dance encodes the direction relative to the sun.\n"
)
SHARED_RUBRIC = (
    "greetings",
    "questions",
    "sponsor",
    "subscribe",
    "narration of on-screen steps",
    "in this video we'll",
)
EXPECTED: dict[str, tuple[str, ...]] = {
    "extract_claims": (
        "## What is worth citing",
        *SHARED_RUBRIC,
        "checkable assertion, fact, number, definition, recommendation or",
        "replace a leading",
        "keep what a speaker says about themselves attributable",
        "Never pad the list",
        'claim: "The cache is keyed by a hash of every input."',
        'claim: "Ferro 2 shipped in 2019."',
        "nothing (meta talk)",
        "nothing (narration of steps)",
        "up to 100",
    ),
    "extract_entities": (
        "## What is worth naming",
        "never `person`",
        "code tokens",
        "discourse phrases",
        "Rank by salience",
        "`Webpack`,\n`product`",
    ),
    "extract_wisdom": (
        "## What is worth keeping",
        *SHARED_RUBRIC,
        "most central assertion",
        "no sentence or quote appears twice",
        'not "The host welcomes\nlisteners back."',
    ),
    "summarize": (
        "## What is worth keeping",
        *SHARED_RUBRIC,
        "leads with what the input is about",
        "no sentence or quote appears twice",
        "with no point about the greeting",
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_llm_request_carries_the_rubric_and_examples(
    name: str, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    provider = OpenAIProvider({"base_url": fake_llm.base_url, "model": "fake-1"})
    runner = Runner(provider=provider, store=ResponseStore(tmp_path / "responses"))
    pattern = get_pattern(name, None)
    variables = {k: str(v) for k, v in pattern.variables.items()}
    runner.run(pattern, TEXT, {"variables": variables})
    [request] = fake_llm.chat_requests
    system = request.system
    for phrase in EXPECTED[name]:
        assert phrase in system, f"{name}: the prompt lacks {phrase!r}"
    assert "{{" not in system
    assert "Honey bees communicate" in request.user
