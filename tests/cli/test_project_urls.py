"""The project's URLs: ``[project.urls]`` in pyproject.toml is their one source; every link to
arkai's repository in the README, the docs, the changelog and what ``arkai init`` scaffolds
points at that repository, and the paths the URLs name exist in this checkout."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT

URLS = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["urls"]
REPO = URLS["Source"]
# A link to any GitHub repository called arkai (github.com/OWNER/arkai), whatever the owner.
ARKAI_REPO = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/arkai(?![A-Za-z0-9_.-])")


def test_the_urls_name_one_repository_and_paths_that_exist() -> None:
    assert re.fullmatch(r"https://github\.com/[A-Za-z0-9_.-]+/arkai", REPO)
    assert URLS["Homepage"] == REPO
    assert URLS["Issues"] == f"{REPO}/issues"
    for key, kind, rel in (
        ("Documentation", "tree", "docs"),
        ("Changelog", "blob", "CHANGELOG.md"),
    ):
        assert URLS[key] == f"{REPO}/{kind}/main/{rel}"
        assert (ROOT / rel).exists(), rel


def test_every_link_to_arkai_s_repository_is_that_repository() -> None:
    files = [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "src/arkai/scaffold").rglob("*")),
        *sorted((ROOT / ".github").rglob("*.yml")),
    ]
    found = 0
    for path in files:
        if not path.is_file():
            continue
        for link in ARKAI_REPO.findall(path.read_text("utf-8", errors="replace")):
            assert link == REPO, f"{path.relative_to(ROOT)}: {link} is not {REPO}"
            found += 1
    # The README, the docs and the scaffolded workflows' comments all name it.
    assert found >= 5
