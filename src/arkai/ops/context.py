"""``arkai context``: a prompt-ready pack of evidence with citations (DESIGN §7, seed 003
"Context packs").

The pack is built from one search: claims whose quotes matched come first (a verbatim quote is
the strongest evidence), then the claims lying in matched passages that share a term with the
query, then the passages themselves. Entries are deduplicated — the same evidence ID, a line
range mostly covered by entries already taken from the same item, or near-identical text — and
added best first while they fit the token budget (tokens ≈ ⌈characters / 4⌉ of the rendered
Markdown). A passage too long for what is left is trimmed around the query terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import TRANSCRIPT
from arkai.adapters.repo import Repo
from arkai.core.document import Document
from arkai.core.grammar import TIMESTAMP_RE, format_page
from arkai.core.tokens import count_tokens as estimate_tokens
from arkai.errors import ArkaiError, InvalidInputError, NotFoundError
from arkai.ops.search import Hit, ItemResult, search
from arkai.search.markup import Query, parse_query
from arkai.search.snippet import find_matches, make_snippet
from arkai.search.text import tokenize

__all__ = ["ContextEntry", "ContextPack", "context", "estimate_tokens"]

#: Two entries whose normalised texts are at least this similar (0–100) count as one.
NEAR_DUPLICATE = 90.0
#: An entry whose lines are covered this much by entries already taken is left out.
MAX_COVERED = 0.5
#: A trimmed passage must keep at least this many tokens to be worth including.
MIN_TRIM_TOKENS = 40
MIN_BUDGET = 32


@dataclass
class ContextEntry:
    """One piece of evidence in the pack."""

    kind: str
    """``claim`` (a verbatim quote with its claim) or ``passage`` (a transcript chunk)."""
    content_id: str
    title: str
    path: str
    """Item folder, ``library/<type>/<Title (id)>``."""
    text: str
    """The quote, or the passage text (trimmed when ``truncated``)."""
    start_line: int
    end_line: int
    link: str
    timestamp: str | None
    score: float
    evidence_id: str | None = None
    claim: str | None = None
    truncated: bool = False
    n: int = 0
    """1-based position in the pack."""
    tokens: int = 0
    """Estimated tokens of the entry's Markdown."""
    page: int | None = None
    """The PDF page the entry starts on."""

    def citation(self) -> str:
        """``— Title, p. 4, evidence <id>, <link to #L12> (timestamp)`` (page, evidence ID and
        timestamp where there are some)."""
        parts = [self.title]
        if self.page is not None:
            parts.append(format_page(self.page))
        if self.evidence_id:
            parts.append(f"evidence {self.evidence_id}")
        parts.append(self.link + (f" ({self.timestamp})" if self.timestamp else ""))
        return "— " + ", ".join(parts)

    def markdown(self) -> str:
        """``N. > text`` (every line quoted), then the citation line."""
        quoted = "\n".join(f"   > {ln}" if ln.strip() else "   >" for ln in self.text.split("\n"))
        return f"{self.n}. {quoted.lstrip()}\n\n   {self.citation()}\n"

    def to_dict(self) -> dict[str, Any]:
        # ``page`` only for PDF entries, so other items' JSON is unchanged.
        out = {k: v for k, v in vars(self).items() if k != "page" or v is not None}
        return out | {"citation": self.citation(), "score": round(self.score, 6)}


@dataclass
class ContextPack:
    """What :func:`context` returns."""

    query: str
    budget: int
    entries: list[ContextEntry]
    markdown: str
    candidates: int
    """Evidence considered before deduplication and the budget."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Why candidates were left out: ``duplicate``, ``budget``."""
    beliefs: list[dict[str, Any]] = field(default_factory=list)
    """Beliefs of the memory recalled for the query (with effective confidence), if any."""

    @property
    def tokens_used(self) -> int:
        return estimate_tokens(self.markdown)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "entries"}
        return out | {
            "tokens_used": self.tokens_used,
            "entries": [e.to_dict() for e in self.entries],
        }


def _header(query: str) -> str:
    return f"# Context: {query}\n\nEvidence from the library, best first; cite by the links.\n\n"


def _candidates(results: list[ItemResult], q: Query) -> list[ContextEntry]:
    stems = {t for term in (*q.terms, *q.phrases) for t in tokenize(term)}
    matched: list[ContextEntry] = []
    related: list[ContextEntry] = []
    passages: list[ContextEntry] = []
    hits: list[tuple[ItemResult, Hit]] = [(r, h) for r in results for h in r.hits]
    hits.sort(key=lambda rh: -rh[1].score)  # stable: ties keep the search order
    for item, hit in hits:
        for c in hit.claims:
            shares = bool(stems & set(tokenize(f"{c.claim} {c.quote}")))
            if not (c.matched or shares):
                continue
            entry = ContextEntry(
                kind="claim", content_id=item.content_id, title=item.title, path=item.path,
                text=c.quote.strip() or c.claim, start_line=c.line, end_line=c.line,
                link=c.link, timestamp=c.timestamp, score=hit.score,
                evidence_id=c.evidence_id, claim=c.claim, page=c.page,
            )  # fmt: skip
            (matched if c.matched else related).append(entry)
        if hit.kind != "claim":
            passages.append(
                ContextEntry(
                    kind="passage",
                    content_id=item.content_id,
                    title=item.title,
                    path=item.path,
                    text=hit.text.strip(),
                    start_line=hit.start_line,
                    end_line=hit.end_line,
                    link=hit.link,
                    timestamp=hit.timestamp,
                    score=hit.score,
                    page=hit.page,
                )
            )
    return matched + related + passages


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class _Taken:
    """Entries already in the pack, for the duplicate tests."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.lines: dict[str, set[int]] = {}
        self.texts: list[str] = []

    def is_duplicate(self, e: ContextEntry) -> bool:
        if e.evidence_id and e.evidence_id in self.ids:
            return True
        covered = self.lines.get(e.content_id, set())
        span = range(e.start_line, e.end_line + 1)
        if covered and sum(1 for n in span if n in covered) / len(span) >= MAX_COVERED:
            return True
        t = _norm(e.text)
        return any(fuzz.ratio(t, other) >= NEAR_DUPLICATE for other in self.texts)

    def add(self, e: ContextEntry) -> None:
        if e.evidence_id:
            self.ids.add(e.evidence_id)
        self.lines.setdefault(e.content_id, set()).update(range(e.start_line, e.end_line + 1))
        self.texts.append(_norm(e.text))


def _passage_lines(root: Path, e: ContextEntry) -> tuple[list[str], Document]:
    """The passage's lines as ``transcript.md`` numbers them ([] if the file is unreadable),
    and the transcript."""
    try:
        data = read_repo_file(root / e.path / TRANSCRIPT, root) or b""
        text = data.decode("utf-8")
    except (ArkaiError, OSError, UnicodeDecodeError):
        return [], Document(b"")
    lines = text.split("\n")[e.start_line - 1 : e.end_line]
    doc = Document(data)
    return (lines if len(lines) == e.end_line - e.start_line + 1 else []), doc


def _trim(root: Path, e: ContextEntry, q: Query, tokens_left: int) -> ContextEntry | None:
    """The passage cut to the run of lines around its best-matching line that fits
    ``tokens_left`` (line numbers, link, timestamp and page follow the cut); None if too
    little."""
    overhead = len(e.markdown()) - len(e.text) + 16
    width = tokens_left * 4 - overhead
    if tokens_left < MIN_TRIM_TOKENS or width < MIN_TRIM_TOKENS * 2:
        return None
    lines, doc = _passage_lines(root, e)
    if not lines:
        e.text, e.truncated = make_snippet(e.text, q.terms, q.phrases, width=width).text, True
        return e
    weight = [len({m[2] for m in find_matches(ln, q.terms, q.phrases)}) for ln in lines]
    best = max(range(len(lines)), key=lambda i: (weight[i], -i))
    lo = hi = best
    size = len(lines[best]) + 5
    while True:  # grow towards the better neighbour while it fits
        options = [i for i in (lo - 1, hi + 1) if 0 <= i < len(lines)]
        options = [i for i in options if size + len(lines[i]) + 5 <= width]
        if not options:
            break
        i = max(options, key=lambda i: (weight[i], i))
        size += len(lines[i]) + 5
        lo, hi = min(lo, i), max(hi, i)
    body = "\n".join(lines[lo : hi + 1]).strip()
    if len(body) > width:
        body = make_snippet(body, q.terms, q.phrases, width=width).text
    stamp = TIMESTAMP_RE.match(lines[lo])
    e.text, e.truncated = body, True
    e.start_line, e.end_line = e.start_line + lo, e.start_line + hi
    e.link = f"{e.path}/{TRANSCRIPT}#L{e.start_line}"
    if e.page is not None:
        start, end = doc.line_span(e.start_line)
        e.page = doc.first_page(start, end + 1)
    if stamp:
        e.timestamp = f"{int(stamp[1]):02d}:{stamp[2]}:{stamp[3]}"
    elif lo:
        e.timestamp = None
    return e


def context(
    repo: Repo,
    query: str,
    *,
    budget_tokens: int = 2000,
    k: int = 20,
    mode: str = "hybrid",
) -> ContextPack:
    """A context pack for ``query`` within ``budget_tokens`` (raises NotFoundError if the
    search finds nothing)."""
    root = repo.root
    if budget_tokens < MIN_BUDGET:
        raise InvalidInputError(f"a budget of {budget_tokens} tokens is too small",
                                hint=f"use at least {MIN_BUDGET}")  # fmt: skip
    q = parse_query(query)
    # The built-in pipeline: a pack has no place to show a hook's warnings (docs/agents.md).
    found = search(repo, q, k=k, mode=mode, hooks=False)
    candidates = _candidates(found.results, q)
    header = _header(query.strip())
    if estimate_tokens(header) > budget_tokens // 2:
        header = f"# Context: {query.strip()}\n\n"
    used = estimate_tokens(header)
    if used > budget_tokens // 2:
        raise InvalidInputError(f"a budget of {budget_tokens} tokens is too small for the query",
                                hint="raise --budget")  # fmt: skip
    taken = _Taken()
    entries: list[ContextEntry] = []
    skipped = {"duplicate": 0, "budget": 0}
    for e in candidates:
        if taken.is_duplicate(e):
            skipped["duplicate"] += 1
            continue
        e.n = len(entries) + 1
        cost = estimate_tokens(e.markdown() + "\n")
        if used + cost > budget_tokens:
            trimmed = _trim(root, e, q, budget_tokens - used) if e.kind == "passage" else None
            if trimmed is None or used + estimate_tokens(trimmed.markdown() + "\n") > budget_tokens:
                skipped["budget"] += 1
                continue
            e = trimmed
            cost = estimate_tokens(e.markdown() + "\n")
        e.tokens = cost
        used += cost
        entries.append(e)
        taken.add(e)
    markdown = header + "\n".join(e.markdown() for e in entries)
    note = "_Nothing fits the budget; raise --budget._\n"
    if not entries and used + estimate_tokens(note) <= budget_tokens:
        markdown += note
    section, beliefs = _beliefs(root, query, budget_tokens - estimate_tokens(markdown))
    return ContextPack(
        query=query, budget=budget_tokens, entries=entries, markdown=markdown + section,
        candidates=len(candidates), skipped=skipped, beliefs=beliefs,
    )  # fmt: skip


#: Beliefs added to a pack (after the evidence, while the budget lasts).
MAX_BELIEFS = 3


def _beliefs(root: Path, query: str, tokens_left: int) -> tuple[str, list[dict[str, Any]]]:
    """A "Beliefs" section from the memory (docs/memory.md) when there is one."""
    from datetime import UTC, datetime

    from arkai.adapters.repo import Repo
    from arkai.ops.memory import recall

    try:
        found = recall(Repo(root), query, as_of=datetime.now(UTC).date(), k=MAX_BELIEFS)
    except (NotFoundError, InvalidInputError):
        return "", []
    lines, out = ["\n## Beliefs\n"], []
    for s in found:
        cites = ", ".join(e[:8] for e in s.belief.episodes[:3])
        line = (
            f"- [{s.belief.type}, confidence {s.effective:.2f}] {s.belief.statement} "
            f"(belief {s.belief.id[:8]}; evidence {cites})"
        )
        if estimate_tokens("".join(lines) + line + "\n") > tokens_left:
            break
        lines.append(line + "\n")
        out.append(s.to_dict())
    return ("".join(lines), out) if out else ("", [])
