"""arkai's error types.

The library raises only :class:`ArkaiError` subclasses; it never prints and never exits.
The CLI maps each class to an exit code in one place (``arkai.cli``), following the contract:
0 ok, 1 error, 2 invalid arguments, 3 pipeline failure (resumable), 4 resource limit,
5 no results.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PIPELINE = 3
EXIT_RESOURCE = 4
EXIT_NO_RESULTS = 5


class ArkaiError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with; ``hint`` says what to do next."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class InvalidInputError(ArkaiError):
    """A file or value given by the user cannot be used (malformed, empty, wrong kind)."""

    exit_code = EXIT_USAGE


class SourceFormatError(InvalidInputError):
    """A source file (VTT, SRT, JSON, text) is malformed. The message names the file."""


class ResourceLimitError(ArkaiError):
    """An input exceeds a configured limit (file size, count)."""

    exit_code = EXIT_RESOURCE


class NotFoundError(ArkaiError):
    """An ID, prefix or path does not name anything in the library."""

    exit_code = EXIT_NO_RESULTS


class AmbiguousIdError(InvalidInputError):
    """An ID prefix matches more than one thing."""


class LibraryError(ArkaiError):
    """The knowledge repo is missing, inconsistent, or not initialised."""


class PipelineError(ArkaiError):
    """A pipeline stage failed part-way; re-running it resumes."""

    exit_code = EXIT_PIPELINE


class HookError(PipelineError):
    """A hook (an external program speaking JSON on stdin/stdout) failed: it could not start,
    exited non-zero, printed something that is not a JSON object, or ran past its timeout."""


class ValidationFailed(ArkaiError):
    """Validation found stale evidence (a transcript changed under its spans)."""

    exit_code = EXIT_ERROR


class UnsafeFileError(LibraryError):
    """A file in the knowledge repo is a symbolic link, a special file (FIFO, device, socket),
    or lies outside the repo: arkai reads only regular files inside the repo root."""
