"""The error envelope's codes: each ArkaiError subclass maps to one (seed 004: no stack traces,
no internal paths, a code an agent can branch on)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from arkai.adapters.interrupt import Interrupted
from arkai.core.redact import scrub as redact_secrets
from arkai.errors import (
    AmbiguousIdError,
    ArkaiError,
    InvalidInputError,
    LibraryError,
    NotFoundError,
    PipelineError,
    ResourceLimitError,
    UnsafeFileError,
    ValidationFailed,
)
from arkai.model.record import AsDict

#: (class, code, severity, retryable) — the first class that matches wins (subclasses first).
_MAP: tuple[tuple[type[ArkaiError], str, str, bool], ...] = (
    (AmbiguousIdError, "AMBIGUOUS_ID", "warning", False),
    (InvalidInputError, "INVALID_INPUT", "warning", False),
    (NotFoundError, "NOT_FOUND", "warning", False),
    (ResourceLimitError, "RESOURCE_LIMIT", "warning", False),
    (UnsafeFileError, "UNSAFE_PATH", "error", False),
    (LibraryError, "LIBRARY_ERROR", "error", False),
    (PipelineError, "PIPELINE_FAILED", "error", True),
    (ValidationFailed, "VALIDATION_FAILED", "error", False),
    (Interrupted, "INTERRUPTED", "error", True),
)

#: An absolute POSIX path not inside a URL (no ``:`` or ``/`` or word character before it).
_ABS_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^\s/'\"`,;:()\[\]]+/)*[^\s/'\"`,;:()\[\]]*")
MAX_MESSAGE = 500


@dataclass(frozen=True)
class ToolError(AsDict):
    """The ``error`` of an envelope."""

    code: str
    message: str
    severity: str = "error"
    retryable: bool = False


class ToolFailure(Exception):
    """Raised inside the invocation path to end a call with ``error``."""

    def __init__(self, error: ToolError) -> None:
        super().__init__(error.message)
        self.error = error


def scrub(message: str, root: Path) -> str:
    """``message`` with secrets redacted, without the repo's absolute path (made relative),
    any other absolute path (replaced by its last part) and control characters; at most
    MAX_MESSAGE characters."""
    text = redact_secrets(message).replace(str(root) + "/", "").replace(str(root), ".")
    text = _ABS_PATH.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def from_exception(exc: BaseException, root: Path) -> ToolError:
    """The envelope error for an exception: ArkaiError subclasses by class, anything else an
    INTERNAL error whose message says only its type (never a traceback)."""
    if isinstance(exc, ArkaiError):
        for cls, code, severity, retryable in _MAP:
            if isinstance(exc, cls):
                return ToolError(code, scrub(str(exc), root), severity, retryable)
        retry = bool(getattr(exc, "retryable", False))
        return ToolError("ERROR", scrub(str(exc), root), "error", retry)
    return ToolError("INTERNAL", f"internal error ({type(exc).__name__})", "fatal", False)
