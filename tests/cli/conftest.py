"""Fixtures shared by the CLI and stage tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES, Runner

NOTES = [SAMPLES / "note-2026-11-20.md", SAMPLES / "note-2026-11-23.md"]


@pytest.fixture
def notes(kr: Path, arkai: Runner) -> Path:
    """A knowledge repo holding the two sample notes (:data:`NOTES`), not extracted."""
    code, _, err = arkai("--repo", kr, "add", *NOTES, "--quiet")
    assert code == 0, err
    return kr
