"""``site_url`` from the repository, so that the 404 page of a GitHub project Pages site
(served at any depth under ``/<repo>/``) finds its stylesheets and scripts."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pygit2
import pytest

from arkai.errors import LibraryError
from arkai.ops.init import init_repo
from arkai.site.build import build_site
from arkai.site.siteurl import derive_site_url, from_remote
from tests.conftest import ROOT


def test_pages_url_from_github_remotes() -> None:
    expected = "https://octo.github.io/notes/"
    for remote in ("https://github.com/octo/notes.git", "https://github.com/octo/notes",
                   "git@github.com:octo/notes.git", "ssh://git@github.com/octo/notes.git",
                   "https://token@github.com/octo/notes/"):  # fmt: skip
        assert from_remote(remote) == expected, remote
    assert from_remote("git@github.com:Octo/octo.github.io.git") == "https://octo.github.io/"
    assert from_remote("https://gitlab.com/octo/notes.git") is None
    assert from_remote("/srv/git/notes.git") is None


def test_site_url_sources_in_order(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path))
    assert derive_site_url(tmp_path, {}, env={}) is None
    repo.remotes.create("origin", "git@github.com:octo/notes.git")
    assert derive_site_url(tmp_path, {}, env={}) == "https://octo.github.io/notes/"
    env = {"GITHUB_REPOSITORY": "acme/kb"}
    assert derive_site_url(tmp_path, {}, env=env) == "https://acme.github.io/kb/"
    params = {"site": {"url": "https://docs.example.org/kb"}}
    assert derive_site_url(tmp_path, params, env=env) == "https://docs.example.org/kb/"
    with pytest.raises(LibraryError, match=r"params.yaml site.url"):
        derive_site_url(tmp_path, {"site": {"url": "javascript:alert(1)"}}, env=env)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    for tree in ("library", "extracted"):
        shutil.rmtree(repo / tree)
        shutil.copytree(ROOT / tree, repo / tree)
    return repo


def test_404_page_assets_resolve_under_the_project_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/notes")
    build_site(repo, mkdocs=True)
    config = (repo / ".site-build" / "mkdocs.yml").read_text()
    assert "site_url: https://octo.github.io/notes/" in config
    page = (repo / "site" / "404.html").read_text()
    assets = re.findall(r'(?:href|src)="([^"]*assets/[^"]+)"', page)
    assert assets and all(a.startswith("/notes/assets/") for a in assets), assets
    # The user's own site_url wins.
    user = repo / "mkdocs.yml"
    user.write_text(user.read_text() + "site_url: https://kb.example.org/\n")
    build_site(repo)
    assert "site_url: https://octo" not in (repo / ".site-build" / "mkdocs.yml").read_text()
    page = (repo / "site" / "404.html").read_text()
    assert all(a.startswith("/assets/") for a in re.findall(r'src="([^"]*assets/[^"]+)"', page))
