"""The knowledge repo as one object: root, params, items, git and the run log.

Every operation takes a :class:`Repo` (``op(repo, …) -> typed result``) instead of a bare
path, so params are read once per invocation, items are listed through one layout reader and
git is opened lazily. The CLI, the DVC stage scripts and the MCP server build one with
:meth:`Repo.open` and pass it down.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arkai.adapters import events, layout
from arkai.adapters.params import load_params

if TYPE_CHECKING:
    from arkai.adapters.gitrepo import GitRepo


@dataclass(frozen=True, eq=False)
class Repo:
    """One knowledge repo. Cheap to build; params, items and git are read on first use."""

    root: Path
    stage: str | None = None
    """The DVC stage this process runs (:func:`arkai.cli.stage.run_stage`), None elsewhere. A
    stage may take its dependencies as DVC hands them over — the folder manifests the stages
    before it wrote in the same ``dvc repro`` — instead of looking at every file again; the
    CLI's commands always look (``validate``: docs/scale.md, "The walks after the work")."""

    @classmethod
    def open(cls, start: Path | str | None = None, *, stage: str | None = None) -> Repo:
        """The repo containing ``start`` (or ``$ARKAI_REPO``, or the current folder)."""
        return cls(layout.find_root(Path(start) if start is not None else None), stage)

    @classmethod
    def at(cls, root: Path | str, *, stage: str | None = None) -> Repo:
        """The repo rooted exactly at ``root`` (no search upwards)."""
        return cls(Path(root).resolve(), stage)

    @cached_property
    def params(self) -> dict[str, Any]:
        """Defaults overlaid with ``params.yaml`` (read once)."""
        return load_params(self.root)

    def param(self, dotted: str, default: Any = None) -> Any:
        """One parameter by dotted key (``"search.top_k"``), or ``default`` when absent."""
        node: Any = self.params
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def library(self) -> Path:
        return self.root / layout.LIBRARY

    @property
    def extracted(self) -> Path:
        return self.root / layout.EXTRACTED

    @property
    def index(self) -> Path:
        return self.root / layout.INDEX

    def scan(self) -> tuple[list[layout.Item], list[layout.ItemProblem]]:
        """Every readable item (sorted by path) and every folder that could not be read."""
        return layout.scan_items(self.root)

    def items(self) -> Iterator[layout.Item]:
        """Every readable item, sorted by path."""
        return layout.iter_items(self.root)

    def item(self, ident: str) -> layout.Item:
        """The item with this content ID, ≥ 8-char prefix or ``source_id``."""
        return layout.get_item(self.root, ident)

    @cached_property
    def git(self) -> GitRepo:
        """The git repository holding the library (raises when there is none)."""
        from arkai.adapters.gitrepo import GitRepo

        return GitRepo(self.root)

    def run(self, pipeline: str, **fields: Any) -> AbstractContextManager[events.RunLog]:
        """A run in the event log (RunStarted … RunCompleted)."""
        return events.run(self.root, pipeline, **fields)
