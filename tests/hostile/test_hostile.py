"""The hostile suite: every malformed input, fault and attack in cases.py must end in a clean
result (exit 0, or one error line naming the file), lose nothing a person wrote, and store no
span whose bytes are not its quote. ``bench/hostile.py`` prints the same counts as JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.cases import all_cases
from tests.hostile.suite import Case, classify, run_case, servers

CASES = all_cases()
SLOW_KINDS = frozenset({"kill", "server fault", "fault"})


@pytest.fixture(scope="module")
def shared() -> Iterator[dict[str, Any]]:
    with servers() as found:
        yield found


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


def _param(case: Case) -> Any:
    marks = [pytest.mark.slow] if case.kind in SLOW_KINDS else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case_is_handled(case: Case, base: Path, shared: dict[str, Any]) -> None:
    result = run_case(case, base, shared)
    assert result.outcome in ("ok", "clean_error"), f"{result.outcome}: {result.message}"
    assert not result.lost, f"data lost: {result.lost}"
    assert not result.wrong, f"wrong groundings: {result.wrong[:5]}"


def test_the_catalog_covers_every_class() -> None:
    kinds = {c.kind for c in CASES}
    assert kinds >= {"malformed", "odd file", "hostile name", "broken library", "cli", "fault",
                     "web fault", "server fault", "model output", "kill"}  # fmt: skip
    assert len(CASES) >= 200
    assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize(
    ("code", "text", "names", "outcome"),
    [
        (0, "", None, "ok"),
        (2, "arkai: error: x.vtt: no cues\n", "x.vtt", "clean_error"),
        (2, "arkai: error: no cues\n", "x.vtt", "unexpected"),
        (1, "arkai: unexpected error: KeyError: 'a'\n", None, "unexpected"),
        (1, "Traceback (most recent call last):\n", None, "unexpected"),
        (1, "", None, "unexpected"),
        (-11, "", None, "unexpected"),
        (130, "arkai: interrupted (finished work is kept; …)\n", None, "clean_error"),
    ],
)  # fmt: skip
def test_outcomes_are_classified(code: int, text: str, names: str | None, outcome: str) -> None:
    assert classify(code, text, names)[0] == outcome
