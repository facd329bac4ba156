"""A site build is a function of its inputs: no build date from the clock (issue 11), so the
hash of site/ in dvc.lock does not change from one day to the next on an unchanged library."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from arkai.ops.init import init_repo
from arkai.site.build import build_site
from tests.conftest import SAMPLES, Runner


def tree_digest(site: Path) -> dict[str, str]:
    return {
        str(p.relative_to(site)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def gzip_mtime(path: Path) -> int:
    with gzip.open(path) as gz:
        gz.read()
        return int(gz.mtime)  # type: ignore[attr-defined]


def test_site_has_no_build_date(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    code, _, err = arkai("--repo", repo, "add", "--quiet", SAMPLES / "note-2026-11-20.md")
    assert code == 0, err
    build_site(repo, full=True)
    site = repo / "site"
    # (Today's date is in the item pages as the item's `added` date, an input; the clock's
    # date is not in the sitemap.)
    today = datetime.now(UTC).date().isoformat()
    assert today not in (site / "sitemap.xml").read_text(encoding="utf-8")
    assert gzip_mtime(site / "sitemap.xml.gz") == 0
    assert "SOURCE_DATE_EPOCH" not in os.environ  # restored after the build

    # A second full build elsewhere, from the same inputs, gives the same bytes.
    first = tree_digest(site)
    other = tmp_path / "copy"
    shutil.copytree(repo, other, ignore=shutil.ignore_patterns("site", ".site-build"))
    build_site(other, full=True)
    assert tree_digest(other / "site") == first


def test_a_date_the_user_sets_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    build_site(repo, full=True)
    # MkDocs stamps the day (2023-11-14, 00:00 UTC) of SOURCE_DATE_EPOCH.
    assert gzip_mtime(repo / "site" / "sitemap.xml.gz") == 1699920000
    assert os.environ["SOURCE_DATE_EPOCH"] == "1700000000"
