"""Who may call what: read tools for every caller; write tools only when the server runs with
``--allow-write`` and the caller's role is ``editor``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arkai.tools.errors import ToolError, ToolFailure

if TYPE_CHECKING:
    from arkai.tools.registry import Caller

VIEWER = "viewer"
EDITOR = "editor"
ROLES = (VIEWER, EDITOR)


def allows(side_effect: bool, caller: Caller) -> bool:
    return not side_effect or (caller.allow_write and caller.role == EDITOR)


def check(name: str, side_effect: bool, caller: Caller) -> None:
    """Raise a FORBIDDEN ToolFailure when ``caller`` may not call the tool."""
    if not side_effect:
        return
    if not caller.allow_write:
        raise ToolFailure(
            ToolError(
                "FORBIDDEN",
                f"{name} writes to the library and this server is read-only "
                "(start it with --allow-write)",
                "warning",
            )
        )
    if caller.role != EDITOR:
        raise ToolFailure(
            ToolError(
                "FORBIDDEN",
                f"{name} writes to the library; role {caller.role!r} may only read",
                "warning",
            )
        )
