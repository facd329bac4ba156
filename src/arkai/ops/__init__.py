"""Operations: one module per user-visible operation, called by the CLI, stages and MCP.

Each operation is a function ``op(repo: Repo, …) -> typed result``; :class:`Repo` is
re-exported here so that entry points (CLI, stage scripts, MCP) need nothing below ``ops``.
"""

from arkai.adapters.repo import Repo

__all__ = ["Repo"]
