"""Issue 12's targets for the builtin claims on the labelled development set (bench/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_quality import Q


@pytest.mark.shared_data
def test_builtin_claims_meet_the_targets_on_every_talk(tmp_path: Path) -> None:
    """Precision >= 0.8 and recall >= 0.25 on every talk, every quote resolving to bytes of
    the transcript (a missing ../shared/data fails this test; it never skips)."""
    runner, params = Q._runner("builtin", tmp_path)
    report = Q.claims_report(runner, params, Q.load_claims())
    assert set(report["talks"]) == {"3b1b", "kalanick", "vc1", "yt9"}
    for name, talk in report["talks"].items():
        assert talk["unresolved"] == 0 and talk["outside"] == 0, (name, talk)
        assert talk["precision"] >= 0.8, (name, talk)
        assert talk["recall"] >= 0.25, (name, talk)
