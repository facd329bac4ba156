"""``arkai remember``: write a note (an episode) into ``library/notes``."""

from __future__ import annotations

from collections.abc import Sequence

from arkai.adapters import events
from arkai.adapters.repo import Repo
from arkai.ops.add import AddResult, parse_tags, store
from arkai.sources.base import AddOptions
from arkai.sources.local import remember_text

__all__ = ["remember"]


def remember(
    repo: Repo,
    text: str,
    *,
    title: str | None = None,
    tags: Sequence[str] = (),
    redact: bool = False,
) -> AddResult:
    """``arkai remember``: write a note (an episode) into ``library/notes``."""
    opts = AddOptions(
        params=repo.params, now=events.utc_now(), tags=parse_tags(list(tags)), title=title,
        redact=redact,
    )  # fmt: skip
    acq = remember_text(text, opts)
    with repo.run("remember"):
        return store(repo.root, acq, opts, "remember", {i.id: i for i in repo.items()})
