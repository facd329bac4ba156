"""The contract every provider implements. Providers do one call; the runner
(``arkai.providers.runner``) owns caching, chunking, concurrency, retries and output repair."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from arkai.errors import ArkaiError
from arkai.patterns.render import frame_input


@dataclass(frozen=True)
class Request:
    """One pattern applied to one input."""

    pattern: str
    """Pattern name, e.g. ``extract_claims``."""
    system: str
    """The rendered system prompt (``{{var}}`` substituted)."""
    input: str
    """The text the pattern runs on (a transcript or one chunk of it)."""
    model: str | None = None
    """Model name for remote providers; ``None`` means the provider's default."""
    schema: dict[str, Any] | None = None
    """JSON schema of the expected output (from ``pattern.yaml``), for structured output."""
    options: dict[str, Any] = field(default_factory=dict)
    """temperature, max_tokens, variables (``max_claims`` …), ``content_type``, and whatever a
    provider reads; part of the cache key."""
    input_delimiters: tuple[str, str] | None = None
    """The pattern's data delimiters for this input (``arkai.patterns.input_frame``); the system
    prompt already says that text between them is data, not instructions."""

    @property
    def framed_input(self) -> str:
        """``input`` between its delimiters: what a model is sent (a model must be able to tell
        the data from the instructions; the builtin provider reads ``input`` itself)."""
        return frame_input(self.input, self.input_delimiters)


@dataclass(frozen=True)
class Response:
    """What a provider returned, before any repair or validation."""

    text: str
    """The raw output text (JSON, possibly fenced or wrapped in chatter)."""
    model: str | None = None
    """The model that actually answered, when the provider says."""
    usage: dict[str, int] = field(default_factory=dict)
    """Token counts when known (prompt_tokens, completion_tokens)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else worth keeping with the raw response (finish reason, status, …)."""


class ProviderError(ArkaiError):
    """A call failed. ``retryable`` marks 429 / 5xx / timeouts / connection resets."""

    def __init__(
        self, message: str, *, retryable: bool = False, status: int | None = None,
        hint: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message, hint=hint)
        self.retryable = retryable
        self.status = status


class Provider(Protocol):
    """A provider: ``name`` is what ``params.yaml`` selects (``extract.provider``)."""

    name: str

    def complete(self, request: Request, *, timeout: float) -> Response:
        """Make one call. Raise :class:`ProviderError` on failure (never hang past
        ``timeout`` seconds)."""
        ...

    def context_chars(self, model: str | None) -> int:
        """How many input characters fit in one call; the runner chunks longer inputs."""
        ...


def excerpt(data: bytes, limit: int) -> str:
    """``data`` (a reply body, a program's output) on one line, cut to ``limit`` characters."""
    text = " ".join(data.decode("utf-8", errors="replace").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def usage_counts(usage: Any) -> dict[str, int]:
    """The whole-number entries of a reply's ``usage`` object (token counts); nothing else."""
    items = usage.items() if isinstance(usage, dict) else ()
    return {str(k): v for k, v in items if isinstance(v, int) and not isinstance(v, bool)}
