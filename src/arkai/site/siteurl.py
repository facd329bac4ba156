"""The site's public URL (MkDocs ``site_url``) when the user's ``mkdocs.yml`` sets none.

GitHub project Pages serve a site under ``https://<owner>.github.io/<repo>/``. Without a
``site_url`` MkDocs cannot know that prefix, and the 404 page — served for any missing path,
at any depth — links its stylesheets and scripts from the wrong folder. The URL is taken, in
order, from ``params.yaml`` ``site.url``, from ``$GITHUB_REPOSITORY`` (set in GitHub
Actions) and from the ``origin`` remote when it is on github.com; otherwise there is none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pygit2

from arkai.core.escape import safe_url
from arkai.errors import LibraryError

_REMOTE = re.compile(
    r"^(?:https?://(?:[^@/]+@)?github\.com/|ssh://git@github\.com/|git@github\.com:)"
    r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]*)/(?P<repo>[A-Za-z0-9._-]+?)(?:\.git)?/?$"
)
_SLUG = re.compile(r"^(?P<owner>[A-Za-z0-9][A-Za-z0-9-]*)/(?P<repo>[A-Za-z0-9._-]+)$")


def pages_url(owner: str, repo: str) -> str:
    """GitHub Pages' URL of a repository (a ``<owner>.github.io`` repository is served at
    the root)."""
    host = f"{owner.lower()}.github.io"
    if repo.lower() == host:
        return f"https://{host}/"
    return f"https://{host}/{repo}/"


def from_remote(url: str) -> str | None:
    """The Pages URL of a github.com remote URL (https or ssh), else None."""
    m = _REMOTE.match(url.strip())
    return pages_url(m["owner"], m["repo"]) if m else None


def _origin(root: Path) -> str | None:
    try:
        found = pygit2.discover_repository(str(root))
        if not found:
            return None
        remote = pygit2.Repository(found).remotes["origin"]
    except (KeyError, pygit2.GitError):
        return None
    return str(remote.url) if remote.url else None


def derive_site_url(
    root: Path, params: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> str | None:
    """``site_url`` for the generated config (see the module doc), or None."""
    env = os.environ if env is None else env
    site = params.get("site")
    value = site.get("url") if isinstance(site, Mapping) else None
    if value is not None:
        url = safe_url(value)
        if url is None:
            raise LibraryError(
                f"params.yaml site.url: expected an http(s) URL, got {value!r}",
                hint="e.g. https://owner.github.io/repo/",
            )
        return url if url.endswith("/") else url + "/"
    slug = _SLUG.match(env.get("GITHUB_REPOSITORY", "").strip())
    if slug:
        return pages_url(slug["owner"], slug["repo"])
    origin = _origin(root)
    return from_remote(origin) if origin else None
