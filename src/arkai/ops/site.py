"""``arkai site build`` / ``arkai site serve``: the library as a MkDocs-Material site."""

from __future__ import annotations

from collections.abc import Callable

from arkai.adapters.repo import Repo
from arkai.site import build as site_build
from arkai.site import serve as site_serve
from arkai.site.build import SiteReport
from arkai.site.search import SCOPE_NOTES

__all__ = ["SCOPE_NOTES", "SiteReport", "build", "serve"]


def build(
    repo: Repo,
    *,
    clean: bool = False,
    mkdocs: bool = True,
    full: bool = False,
    verbose: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SiteReport:
    """Generate the pages (after deleting ``.site-build/`` when ``clean``), then mkdocs build."""
    if clean:
        site_build.clean(repo.root)
    return site_build.build_site(
        repo.root, mkdocs=mkdocs, full=full, verbose=verbose, progress=progress,
        stage=repo.stage == site_build.STAGE,
    )  # fmt: skip


def serve(repo: Repo, *, port: int = 8000) -> int:
    """Preview the site with live reload until interrupted; mkdocs' exit status."""
    return site_serve.serve(repo.root, port=port)
