"""The researcher's half of ``arkai ask`` (docs/answers.md): the scope, each shard's lines
(``index/shards/`` through :mod:`arkai.adapters.shards`, or the **implicit shard** of a library
without shards — each item's transcript one chunk, each line ``item:<id8>:L<line>``, built by
:func:`implicit_shard`, the only place that knows it), the ``query_shard`` calls through the
provider runner (bounded concurrency, cached; a shard larger than the provider's context goes in
parts, each with the question), and the receipt of every returned quote: resolved to bytes of
the item's transcript inside the cited message (V1), or kept ``unresolved`` with a note.

The builtin provider's ``query_shard`` is :func:`arkai.search.research.search_shard` (BM25
within the shard), composed here (:class:`AskProvider`) because the provider and search layers
do not import each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from arkai.adapters.events import RunLog
from arkai.adapters.layout import Item
from arkai.adapters.repo import Repo
from arkai.adapters.shards import read_manifest, read_shard
from arkai.core.document import Document
from arkai.core.itemdate import item_day
from arkai.core.resolve import make_span, resolve_quote
from arkai.errors import NotFoundError, PipelineError
from arkai.model.answer import Coverage, Match, Scope, ShardAnswer, Uncertainty
from arkai.patterns import OutputError, Pattern, get_pattern
from arkai.providers.base import ProviderError, Request, Response
from arkai.providers.builtin import VERSION as BUILTIN_VERSION
from arkai.providers.builtin import BuiltinProvider
from arkai.providers.registry import get_provider
from arkai.providers.runner import RESPONSES, ResponseStore, Runner, RunnerConfig
from arkai.search.markup import Query
from arkai.search.research import (
    EvidenceLine,
    ShardSpan,
    chunk_of,
    in_period,
    needs_all_shards,
    search_shard,
    select_shards,
    shard_input,
)

QUERY = "query_shard"
IMPLICIT = "implicit"
SEARCH_VERSION = "1"
_RELEVANCE = {"high": 0, "medium": 1, "low": 2}


class AskProvider:
    """The builtin provider with ``query_shard`` answered by the search layer's retrieval."""

    name = "builtin"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.inner = BuiltinProvider(config)

    def complete(self, request: Request, *, timeout: float) -> Response:
        if request.pattern != QUERY:
            return self.inner.complete(request, timeout=timeout)
        variables = request.options.get("variables") or {}
        value = search_shard(request.input, int(variables.get("max_matches") or 12))
        meta = {"provider_version": f"search-{SEARCH_VERSION}"}
        return Response(text=json.dumps(value, ensure_ascii=False), meta=meta)

    def context_chars(self, model: str | None) -> int:
        return self.inner.context_chars(model)


@dataclass(frozen=True, slots=True)
class Target:
    """Where a match id points: an item and the byte range of its message / line."""

    item: Item
    start: int
    end: int


@dataclass
class ShardWork:
    """One shard's input and the lookup of its match ids."""

    id: str
    lines: list[EvidenceLine] = field(default_factory=list)
    targets: dict[str, Target] = field(default_factory=dict)
    chunks: set[str] = field(default_factory=set)


@dataclass
class Transcripts:
    """Each item's transcript read once (as a :class:`Document`)."""

    docs: dict[str, Document] = field(default_factory=dict)

    def get(self, item: Item) -> Document:
        doc = self.docs.get(item.id)
        if doc is None:
            doc = self.docs[item.id] = Document(item.transcript_bytes())
        return doc


def role(params: dict[str, Any], role: str) -> tuple[str, str | None]:
    value = (params.get("ask") or {}).get(role) or {}
    if isinstance(value, str):
        return value, None
    provider = str(value.get("provider") or "builtin")
    model = value.get("model")
    return provider, str(model) if model else None


def make_runner(repo: Repo, which: str) -> Runner:
    """The runner of one role (``shards`` / ``synthesizer`` / ``validator``)."""
    params = repo.params
    name, model = role(params, which)
    config = dict((params.get("providers") or {}).get(name) or {})
    provider: Any = AskProvider(config) if name == "builtin" else get_provider(name, config)
    xp = dict(params["extract"])
    xp["timeout_s"] = (params.get("ask") or {}).get("timeout_s", xp.get("timeout_s", 120))
    return Runner(
        provider=provider,
        store=ResponseStore(repo.root / RESPONSES),
        config=RunnerConfig.from_params(xp),
        model=model or config.get("model") if name != "builtin" else None,
    )


def _keep(item: Item, q: Query) -> bool:
    folder = item.rel.as_posix().rsplit("/", 1)[0].lower()
    if q.types and not any(folder == t or folder.startswith(t + "/") for t in q.types):
        return False
    if any(folder == t or folder.startswith(t + "/") for t in q.exclude_types):
        return False
    tags = {str(t).lower() for t in item.metadata.get("tags") or ()}
    return set(q.tags) <= tags and not (set(q.exclude_tags) & tags)


def _date(item: Item) -> str | None:
    d = item_day(item.metadata)
    return d.isoformat() if d else None


def implicit_shard(
    repo: Repo, q: Query, texts: Transcripts, exclude: frozenset[str] = frozenset()
) -> ShardWork:
    """The one implicit shard: every line of every item in scope that no shard holds
    (``exclude``: the items of the manifest) is a match ``item:<id8>:L<line>`` (8 hex of the
    content ID; 16 on a collision). Without shards, that is the whole library."""
    work = ShardWork(IMPLICIT)
    kept = (i for i in repo.items() if i.id not in exclude and _keep(i, q))
    items = sorted(kept, key=lambda i: (_date(i) or "", i.id))
    prefixes = {i.id[:8] for i in items}
    width = 8 if len(prefixes) == len(items) else 16
    for item in items:
        day = _date(item)
        if not in_period(day, q):
            continue
        doc = texts.get(item)
        key = f"item:{item.id[:width]}"
        work.chunks.add(key)
        for n in range(1, len(doc.line_starts()) + 1):
            start, end = doc.line_span(n)
            text = doc.data[start:end].decode("utf-8", "replace").rstrip("\r\n")
            if not text.strip():
                continue
            match_id = f"{key}:L{n}"
            work.lines.append(EvidenceLine(match_id, day, text))
            work.targets[match_id] = Target(item, start, end)
    return work


def shard_works(repo: Repo, q: Query, chosen: list[str], texts: Transcripts) -> list[ShardWork]:
    """The chosen shards' lines: every line of every message of every chunk in scope."""
    manifest = read_manifest(repo.root)
    assert manifest is not None
    items: dict[str, Item | None] = {}
    out = []
    for info in manifest.shards:
        if info.id not in chosen:
            continue
        work = ShardWork(info.id)
        for chunk in read_shard(repo.root, info.file):
            if not in_period(chunk.date, q):
                continue
            if chunk.item not in items:
                try:
                    found: Item | None = repo.item(chunk.item)
                except NotFoundError:
                    found = None
                items[chunk.item] = found if found is None or _keep(found, q) else None
            item = items[chunk.item]
            if item is None:
                continue
            doc = texts.get(item)
            work.chunks.add(chunk.chunk_id)
            for msg in chunk.messages:
                match_id = chunk.message_id(msg.msg)
                work.targets[match_id] = Target(item, msg.start, msg.end)
                body = doc.data[msg.start : msg.end].decode("utf-8", "replace")
                for text in body.splitlines():
                    if text.strip():
                        work.lines.append(EvidenceLine(match_id, chunk.date, text))
        out.append(work)
    return out


def research(repo: Repo, question: str, texts: Transcripts) -> tuple[Scope, Query, list[ShardWork]]:
    """The scope and each chosen shard's work (see the module doc)."""
    manifest = read_manifest(repo.root)
    spans = (
        [ShardSpan(s.id, s.first_date, s.last_date) for s in manifest.shards] if manifest else []
    )
    if manifest is not None and spans:
        q, chosen, reason = select_shards(question, spans)
        works = shard_works(repo, q, chosen, texts)
        implicit = False
        # Items no shard holds yet (added since the condense stage ran, or never condensed)
        # are still searched: as the implicit shard.
        held = frozenset(i for s in manifest.shards for i in s.items)
        rest = implicit_shard(repo, q, texts, exclude=held)
        if rest.lines:
            works.append(rest)
            reason += f"; {len(rest.chunks)} item(s) in no shard: the implicit shard"
    else:
        q, chosen, reason = select_shards(question, [ShardSpan(IMPLICIT, None, None)])
        reason = "no shards built yet: each item's transcript is one chunk of an implicit shard"
        works = [implicit_shard(repo, q, texts)]
        implicit = True
    scope = Scope(
        after=q.after.text if q.after else None,
        before=q.before.start.isoformat() if q.before else None,
        all_shards=needs_all_shards(question) is not None,
        reason=reason,
        shards=tuple(w.id for w in works),
        implicit=implicit,
        text=q.text,
    )
    return scope, q, works


def _period(scope: Scope) -> str:
    parts = [
        f"after:{scope.after}" if scope.after else "",
        f"before:{scope.before}" if scope.before else "",
    ]
    return " ".join(p for p in parts if p)


def _match(raw: Mapping[str, Any], work: ShardWork, texts: Transcripts) -> Match:
    """One returned match with its receipt: the quote resolved inside the cited message."""
    m = Match(
        match_id=str(raw.get("match_id") or ""),
        quote=str(raw.get("quote") or ""),
        context=str(raw.get("context") or ""),
        timestamp=None if raw.get("timestamp") is None else str(raw.get("timestamp")),
        relevance=str(raw.get("relevance") or "medium"),
    )
    target = work.targets.get(m.match_id)
    if target is None:
        return replace(m, note="unknown match id: the shard has no such message")
    doc = texts.get(target.item)
    m = replace(
        m,
        item=target.item.id,
        transcript=target.item.transcript.relative_to(target.item.root).as_posix(),
    )
    found = resolve_quote(doc, m.quote)
    span = found.span
    status = found.resolution.status
    if span is not None and not (target.start <= span.start and span.end <= target.end):
        needle = m.quote.encode("utf-8")
        pos = doc.data.find(needle, target.start, target.end)
        span = make_span(doc, pos, pos + len(needle), "transcript.md") if pos >= 0 else None
    if span is None or found.span is None:
        note = (
            "quote not in the transcript"
            if found.span is None
            else "quote not in the cited message"
        )
        return replace(m, status="unresolved", note=note)
    return replace(
        m,
        status=status,
        span=(span.start, span.end),
        line=span.line,
        slice_sha256=span.slice_sha256,
    )


def _shard_answer(value: Any, work: ShardWork, texts: Transcripts, cached: bool) -> ShardAnswer:
    cov = value.get("coverage") or {}
    unc = value.get("uncertainty") or {}
    matches = tuple(
        _match(m, work, texts) for m in value.get("matches") or [] if isinstance(m, dict)
    )
    return ShardAnswer(
        shard=work.id,
        matches=matches,
        coverage=Coverage(
            method=str(cov.get("method") or "full_scan"),
            chunks_examined=int(cov.get("chunks_examined") or 0),
            chunks_with_matches=int(cov.get("chunks_with_matches") or 0),
        ),
        uncertainty=Uncertainty(
            gaps=tuple(str(g) for g in unc.get("gaps") or ()),
            confidence=str(unc.get("confidence") or "none"),
        ),
        cached=cached,
    )


def call(
    runner: Runner, pattern: Pattern, text: str, variables: dict[str, Any], what: str
) -> tuple[Any, bool]:
    """One pattern call of ``arkai ask`` through the runner; a provider failure or an answer
    that is not the pattern's JSON becomes a :class:`PipelineError` (exit 3) naming the step.
    The builtin engines' versions are part of the call's options, hence of its cache key, so
    an upgraded engine never serves an old cached answer."""
    options: dict[str, Any] = {"variables": variables}
    if isinstance(runner.provider, AskProvider):
        options["engine"] = f"builtin-{BUILTIN_VERSION}+search-{SEARCH_VERSION}"
    try:
        result = runner.run(pattern, text, options)
    except (ProviderError, OutputError) as exc:
        raise PipelineError(
            f"{what}: {runner.provider.name} failed: {exc}",
            hint="the failure is recorded in .arkai/runs/; re-run the same question to resume "
            "(answers already received are cached)",
        ) from None
    return result.value, result.cached


HEADER_CHARS = 2000
"""Room kept for the ``QUESTION:`` / ``SCOPE:`` / ``CHUNKS:`` header of every part."""
_CONFIDENCE = ("none", "low", "medium", "high")


def split_lines(lines: list[EvidenceLine], limit: int) -> list[list[EvidenceLine]]:
    """A shard's lines in parts of at most ``limit`` characters each (never splitting a line),
    so a shard larger than the provider's context is still read whole, each part with the
    question (the runner's own chunking would drop the header from later chunks)."""
    parts: list[list[EvidenceLine]] = [[]]
    size = 0
    for ln in lines:
        cost = len(ln.match_id) + len(ln.text) + len(ln.date or "-") + 7
        if parts[-1] and size + cost > limit:
            parts.append([])
            size = 0
        parts[-1].append(ln)
        size += cost
    return parts


def merge_parts(values: list[dict[str, Any]], chunks: int) -> dict[str, Any]:
    """One shard answer from the answers of its parts: matches in order, the coverage of the
    whole shard (a full scan when every part was one), the gaps every part reports, the best
    confidence."""
    if len(values) == 1:
        return values[0]
    matches = [m for v in values for m in v.get("matches") or [] if isinstance(m, dict)]
    methods = {str((v.get("coverage") or {}).get("method") or "full_scan") for v in values}
    # A period is a gap of the shard when every part reports it (each part sees only its lines).
    per_part = [[str(g) for g in (v.get("uncertainty") or {}).get("gaps") or ()] for v in values]
    gaps = [g for g in per_part[0] if all(g in p for p in per_part[1:])]
    levels = [str((v.get("uncertainty") or {}).get("confidence") or "none") for v in values]
    return {
        "matches": matches,
        "coverage": {
            "method": "full_scan" if methods == {"full_scan"} else "sampled",
            "chunks_examined": chunks
            if methods == {"full_scan"}
            else sum(int((v.get("coverage") or {}).get("chunks_examined") or 0) for v in values),
            "chunks_with_matches": len({chunk_of(str(m.get("match_id"))) for m in matches}),
        },
        "uncertainty": {
            "gaps": gaps,
            "confidence": max(
                levels, key=lambda c: _CONFIDENCE.index(c) if c in _CONFIDENCE else 0
            ),
        },
    }


def ask_shards(
    repo: Repo, scope: Scope, works: list[ShardWork], texts: Transcripts, log: RunLog
) -> list[ShardAnswer]:
    """Dispatch the question to every shard (in parallel, bounded), resolve the quotes."""
    runner = make_runner(repo, "shards")
    pattern = get_pattern(QUERY, repo.root)
    ask = repo.params.get("ask") or {}
    variables = {"max_matches": int(ask.get("max_matches", 12))}

    limit = max(1000, int(runner.provider.context_chars(runner.model)) - HEADER_CHARS)

    def one(work: ShardWork) -> ShardAnswer:
        with log.step("shard", shard=work.id, lines=len(work.lines)) as info:
            parts = split_lines(work.lines, limit)
            values = []
            cached = True
            for n, part in enumerate(parts, 1):
                chunks = len({chunk_of(ln.match_id) for ln in part})
                text = shard_input(scope.text or "", _period(scope), chunks, part)
                what = f"shard {work.id}" + (f" part {n}/{len(parts)}" if len(parts) > 1 else "")
                value, hit = call(runner, pattern, text, variables, what)
                if not isinstance(value, dict):
                    raise PipelineError(f"{what}: the answer is not an object")
                values.append(value)
                cached = cached and hit
            answer = _shard_answer(merge_parts(values, len(work.chunks)), work, texts, cached)
            info["parts"] = len(parts)
            info["matches"] = len(answer.matches)
            info["verified"] = sum(1 for m in answer.matches if m.verified)
            return answer

    builtin = runner.provider.name == "builtin"
    workers = 1 if builtin else max(1, int(ask.get("concurrency", 4)))
    if workers == 1 or len(works) < 2:
        return [one(w) for w in works]
    with ThreadPoolExecutor(max_workers=min(workers, len(works))) as pool:
        return list(pool.map(one, works))


def evidence_pool(answers: list[ShardAnswer]) -> list[Match]:
    """Verified matches, most relevant first (then shard order), each match id + quote once."""
    seen: set[tuple[str, str]] = set()
    pool = []
    for a in answers:
        for m in a.matches:
            if m.verified and (m.match_id, m.quote) not in seen:
                seen.add((m.match_id, m.quote))
                pool.append(m)
    return sorted(pool, key=lambda m: _RELEVANCE.get(m.relevance, 3))


__all__ = [
    "IMPLICIT",
    "QUERY",
    "AskProvider",
    "Transcripts",
    "ask_shards",
    "call",
    "evidence_pool",
    "implicit_shard",
    "make_runner",
    "research",
    "role",
]
