"""``positive_number``: the one check for the numeric knobs in ``params.yaml``."""

from __future__ import annotations

from typing import Any

import pytest

from arkai.adapters.params import positive_number, whole_number
from arkai.errors import InvalidInputError
from arkai.providers.command import CommandProvider
from arkai.search.condense_chunks import condense_params
from arkai.sources.article import fetch_options
from arkai.sources.base import AddOptions
from arkai.sources.podcast import _timeout as podcast_timeout


@pytest.mark.parametrize(
    ("section", "zero", "expected"),
    [(None, False, 7.0), ({}, False, 7.0), ({"t": None}, False, 7.0), ({"t": 3}, False, 3.0),
     ({"t": 0}, True, 0.0), ({"t": 0.5}, True, 0.5)],
)  # fmt: skip
def test_numbers_and_defaults_pass(section: Any, zero: bool, expected: float) -> None:
    assert positive_number(section, "x.t", 7.0, zero=zero) == expected


@pytest.mark.parametrize(
    ("value", "zero", "kind"),
    [(0, False, "positive"), (-1, True, "non-negative"), ("5", False, "positive"),
     (True, False, "positive"), (float("inf"), False, "positive")],
)  # fmt: skip
def test_anything_else_names_the_key_and_the_value(value: Any, zero: bool, kind: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        positive_number({"t": value}, "x.t", 7.0, zero=zero)
    assert str(info.value) == f"params.yaml: x.t must be a {kind} number, got {value!r}"


def test_the_podcast_timeout_goes_through_it() -> None:
    assert podcast_timeout(AddOptions(params={"podcast": {"timeout_s": 4}}, now="")) == 4.0
    with pytest.raises(InvalidInputError, match=r"podcast\.timeout_s must be a positive number"):
        podcast_timeout(AddOptions(params={"podcast": {"timeout_s": "soon"}}, now=""))


@pytest.mark.parametrize("value", [0, -3, 1.5, True, "4000"])
def test_whole_numbers_name_the_key(value: Any) -> None:
    """condense.* and a command provider's context_chars share the one whole-number check."""
    with pytest.raises(InvalidInputError) as info:
        condense_params({"condense": {"shard_tokens": value}})
    assert str(info.value) == (
        f"params.yaml: condense.shard_tokens must be a positive whole number, got {value!r}"
    )
    with pytest.raises(InvalidInputError, match=r"providers\.command\.context_chars must be"):
        CommandProvider({"command": ["true"], "context_chars": value})
    assert whole_number({}, "x.n", 9) == 9 and whole_number({"n": 12}, "x.n", 9) == 12


def test_the_article_and_pdf_fetch_timeout_goes_through_it() -> None:
    """``add.timeout_s`` was read with float(): "soon" crashed with a bare ValueError."""
    assert fetch_options(AddOptions(params={"add": {"timeout_s": 4}}, now=""))[0] == 4.0
    with pytest.raises(InvalidInputError, match=r"add\.timeout_s must be a positive number"):
        fetch_options(AddOptions(params={"add": {"timeout_s": "soon"}}, now=""))
