"""The search hooks of ``params.yaml`` (``hooks.expand``, ``hooks.rerank``; docs/agents.md):
what ``arkai search`` sends them, what it accepts back, and the degrade-on-failure rule.

- **expand** gets ``{"query", "mode", "max_expansions"}`` and answers ``{"lex": [...], "vec":
  [...]}`` (optional ``warnings``): other phrasings of the query for the lexical and the vector
  lanes (:class:`arkai.search.pipeline.Variant`, at most
  :data:`~arkai.search.pipeline.MAX_VARIANTS` of each, each at most :data:`MAX_VARIANT_CHARS`).
- **rerank** gets ``{"query", "candidates": [{"key", "item", "title", "snippet", "score"}]}``
  for the best :data:`~arkai.search.blend.RERANK_TOP` chunks and answers ``{"scores": {key:
  number}, "snippets": {key: text}}`` (snippets optional), blended by
  :func:`arkai.search.blend.blend_rerank`.

Any failure — the hook cannot start, exits non-zero, prints something that is not JSON, answers
the wrong shape, or runs past ``hooks.timeout_s`` — becomes a warning (on stderr, and in
``--json`` output's ``warnings``) and search goes on without that hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters.hooks import run_hook
from arkai.adapters.params import is_number, positive_number
from arkai.errors import HookError, InvalidInputError
from arkai.search.pipeline import LEXICAL, MAX_VARIANTS, VECTOR

__all__ = ["MAX_SNIPPET_CHARS", "MAX_VARIANT_CHARS", "Expansion", "Reranked", "SearchHooks"]

MAX_VARIANT_CHARS = 500
MAX_SNIPPET_CHARS = 1000
DEFAULT_TIMEOUT_S = 10.0


class _Shape(Exception):
    """A hook answered valid JSON of the wrong shape."""


@dataclass(frozen=True)
class Expansion:
    lex: tuple[str, ...] = ()
    vec: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {"lex": list(self.lex), "vec": list(self.vec)}


@dataclass(frozen=True)
class Reranked:
    scores: dict[str, float] = field(default_factory=dict)
    snippets: dict[str, str] = field(default_factory=dict)


def _command(params: dict[str, Any], name: str, root: Path) -> list[str] | None:
    value = (params.get("hooks") or {}).get(name)
    if value in (None, "", []):
        return None
    if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
        raise InvalidInputError(
            f"params.yaml: hooks.{name} must be a list of strings (the hook's argv), "
            f"got {value!r:.80}"
        )
    first = Path(value[0])
    if "/" in value[0] and not first.is_absolute():  # relative to the repo, not the cwd
        value = [str(root / first), *value[1:]]
    return list(value)


def _strings(reply: dict[str, Any], key: str, limit: int) -> tuple[str, ...]:
    value = reply.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Shape(f"'{key}' must be a list of strings")
    out: list[str] = []
    for v in value:
        v = " ".join(v.split())
        if v and v not in out:
            out.append(v[:limit])
    return tuple(out)


@dataclass(frozen=True)
class SearchHooks:
    """The configured hooks of one repo (``None``: not configured)."""

    expand_cmd: list[str] | None = None
    rerank_cmd: list[str] | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_params(cls, params: dict[str, Any], root: Path) -> SearchHooks:
        """The ``hooks`` section of ``params``; a malformed one raises InvalidInputError."""
        timeout = positive_number(params.get("hooks"), "hooks.timeout_s", DEFAULT_TIMEOUT_S)
        return cls(_command(params, "expand", root), _command(params, "rerank", root), timeout)

    def expand(self, query: str, mode: str, warnings: list[str]) -> Expansion | None:
        """The expand hook's variants for ``query`` (``None``: no hook, or it failed)."""
        if self.expand_cmd is None:
            return None
        payload = {"query": query, "mode": mode, "max_expansions": MAX_VARIANTS}
        try:
            reply = run_hook(self.expand_cmd, payload, self.timeout_s)
            exp = Expansion(
                _strings(reply, "lex", MAX_VARIANT_CHARS), _strings(reply, "vec", MAX_VARIANT_CHARS)
            )
            _notes(reply, "expand", warnings)
        except (HookError, _Shape) as exc:
            warnings.append(
                _degraded("expand", self.expand_cmd, exc, "the query alone is searched")
            )
            return None
        over = [k for k, v in ((LEXICAL, exp.lex), (VECTOR, exp.vec)) if len(v) > MAX_VARIANTS]
        if over:
            warnings.append(
                f"hook expand: more than {MAX_VARIANTS} {' and '.join(over)} variants; "
                "the first ones are used"
            )
        return exp

    def rerank(
        self, query: str, candidates: list[dict[str, Any]], warnings: list[str]
    ) -> Reranked | None:
        """The rerank hook's scores (and snippets) per candidate key (``None``: no hook, or it
        failed — the fused order stands)."""
        if self.rerank_cmd is None or not candidates:
            return None
        keys = {c["key"] for c in candidates}
        try:
            reply = run_hook(self.rerank_cmd, {"query": query, "candidates": candidates},
                             self.timeout_s)  # fmt: skip
            scores = reply.get("scores")
            if not isinstance(scores, dict) or not scores:
                raise _Shape("'scores' must be an object of key → number, with at least one key")
            bad = [k for k, v in scores.items() if not is_number(v)]
            if bad:
                raise _Shape(f"the score of {bad[0]!r} is not a finite number")
            known = {k: float(v) for k, v in scores.items() if k in keys}
            if not known:
                raise _Shape("none of the scored keys is a candidate's key")
            snippets = reply.get("snippets") or {}
            if not isinstance(snippets, dict) or not all(
                isinstance(v, str) for v in snippets.values()
            ):
                raise _Shape("'snippets' must be an object of key → text")
            _notes(reply, "rerank", warnings)
        except (HookError, _Shape) as exc:
            warnings.append(_degraded("rerank", self.rerank_cmd, exc, "the fused order is kept"))
            return None
        if len(known) < len(scores):
            warnings.append(f"hook rerank: {len(scores) - len(known)} scored keys are not "
                            "candidates; ignored")  # fmt: skip
        return Reranked(
            known, {k: v[:MAX_SNIPPET_CHARS] for k, v in snippets.items() if k in keys and v}
        )


def _notes(reply: dict[str, Any], name: str, warnings: list[str]) -> None:
    notes = reply.get("warnings")
    if isinstance(notes, list):
        warnings.extend(f"hook {name}: {str(n)[:200]}" for n in notes[:5])


def _degraded(name: str, cmd: list[str], exc: Exception, fallback: str) -> str:
    program = Path(cmd[0]).name
    text = f"hook {program}: wrong answer shape: {exc}" if isinstance(exc, _Shape) else str(exc)
    return f"hook {name} failed: {text} — {fallback}"
