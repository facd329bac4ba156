"""The tools: each a :class:`~arkai.tools.registry.Tool` whose handler calls the same ``ops/``
function as the CLI command of the same name, so ``data`` has the shape of the command's
``--json`` output. Adding a tool (``ask``, ``recall``, ``beliefs``, ``memory_context`` when
those operations exist) is one entry in :data:`READ` or :data:`WRITE`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import check_inside
from arkai.adapters.repo import Repo
from arkai.errors import InvalidInputError, UnsafeFileError
from arkai.tools.registry import Registry, Tool
from arkai.tools.schemas import (
    ARR,
    BOOL,
    ID,
    INT,
    MAX_ID,
    MAX_TEXT,
    MODE,
    NINT,
    NOBJ,
    NSTR,
    OBJ,
    QUERY,
    STR,
    count,
    inputs,
    output,
    rows,
)

# -- read tools -----------------------------------------------------------------------------


def _search(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.search import search

    return search(
        repo, a["query"], k=a.get("k", 10), mode=a.get("mode", "hybrid"),
        explain=a.get("explain", False),
    ).to_dict()  # fmt: skip


def _context(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.context import context

    return context(
        repo, a["query"], budget_tokens=a.get("budget", 2000), k=a.get("k", 20),
        mode=a.get("mode", "hybrid"),
    ).to_dict()  # fmt: skip


def _show(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.library import show_item

    return show_item(repo, a["id"], full=a.get("full", False)).to_dict()


def _library(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.library import library_listing

    return library_listing(repo, content_type=a.get("type"), tag=a.get("tag")).to_dict()


def _topics(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.topics import topics

    return topics(repo, a["term"], limit=a.get("limit", 20)).to_dict()


def _evidence_show(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.evidence import describe, find_evidence

    return describe(find_evidence(repo, a["id"])).to_dict()


def _validate(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.validate import validate

    return validate(repo).to_dict()


def _diff(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.diff import diff_revisions

    return diff_revisions(repo, a.get("rev_a"), a.get("rev_b")).to_dict()


def _log(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.history import history

    h = history(repo, a["id"])
    h.entries = h.entries[: a.get("limit", 20)]
    return h.to_dict()


def _runs(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.runs import list_runs, run_status

    if a.get("run_id"):
        return run_status(repo, None if a["run_id"] == "latest" else a["run_id"]).to_dict()
    return {"runs": [r.to_dict() for r in list_runs(repo, a.get("limit", 20))]}


def _health(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.doctor import diagnose

    return diagnose(repo).to_dict()


def _today(a: dict[str, Any]) -> Any:
    from datetime import UTC, date, datetime

    return date.fromisoformat(a["as_of"]) if a.get("as_of") else datetime.now(UTC).date()


def _ask(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.ask import ask

    return ask(repo, a["question"]).to_dict()


def _recall(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.errors import NotFoundError
    from arkai.ops.memory import recall

    found = recall(repo, a["query"], as_of=_today(a), k=a.get("k", 10),
                   include_all=a.get("all", False))  # fmt: skip
    if not found:
        raise NotFoundError(f"no beliefs match {a['query']!r}")
    return {"beliefs": [b.to_dict() for b in found]}


def _beliefs(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.memory import list_beliefs

    found = list_beliefs(repo, as_of=_today(a), status=a.get("status", "active"),
                         kind=a.get("type"))  # fmt: skip
    return {"beliefs": [b.to_dict() for b in found[: a.get("limit", 20)]]}


def _memory_context(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.memory import memory_context

    return memory_context(repo, a["query"], as_of=_today(a), k=a.get("k", 8)).to_dict()


_RESULT = output(
    rank=INT, content_id=STR, title=STR, path=STR, content_type=STR, score={"type": "number"},
    hits=rows(start_line=INT, end_line=INT, link=STR, snippet=STR, claims=ARR),
)  # fmt: skip

READ: tuple[Tool, ...] = (
    Tool(
        "search",
        "1",
        'Hybrid search of the library (BM25 + embeddings). Query markup: words, "phrases", '
        "-exclusions, in:TYPE, tag:T, after:DATE, before:DATE, asof:DATE. Each result is an "
        "item with its best passages (line links, snippets) and the claims found there.",
        inputs(["query"], query=QUERY, k=count(10), mode=MODE, explain=BOOL),
        output(
            query=OBJ,
            mode=STR,
            k=INT,
            warnings=ARR,
            unreadable=ARR,
            results={"type": "array", "items": _RESULT},
        ),
        _search,
    ),
    Tool(
        "context",
        "1",
        "A prompt-ready context pack for a query: the best quoted claims and passages, "
        "deduplicated, within a token budget, each with its citation (file#Lline).",
        inputs(["query"], query=QUERY, budget=count(2000, 20_000, 50), k=count(20), mode=MODE),
        output(query=STR, markdown=STR, entries=rows(citation=STR, text=STR)),
        _context,
    ),
    Tool(
        "show",
        "1",
        "One item by content ID (or an 8+ character prefix, or source ID): metadata, claim "
        "counts, top entities, summary; full=true also lists every claim.",
        inputs(["id"], id=ID, full=BOOL),
        output(id=STR, title=STR, path=STR, metadata=OBJ, claims=OBJ, entities=OBJ, summary=NSTR),
        _show,
    ),
    Tool(
        "library",
        "1",
        "List the library's items, optionally one type (youtube, podcasts, articles, pdfs, "
        "chats, notes, transcripts) or one tag.",
        inputs(
            None,
            type={"type": "string", "maxLength": MAX_ID},
            tag={"type": "string", "maxLength": MAX_ID},
        ),
        output(
            count=INT,
            warnings=ARR,
            items=rows(id=STR, title=STR, path=STR, content_type=STR, tags=ARR),
        ),
        _library,
    ),
    Tool(
        "topics",
        "1",
        "Look a term up in the topic index (synonyms, stemming); for terms not in it, grep "
        "the transcripts. Says which it used.",
        inputs(["term"], term=QUERY, limit=count(20)),
        output(term=STR, source={"type": "string", "enum": ["topics", "grep"]}, results=ARR),
        _topics,
    ),
    Tool(
        "evidence_show",
        "1",
        "One evidence line (a claim with its receipt) by evidence ID or 8+ character prefix: "
        "claim, quote, status and its span recomputed from the current transcript.",
        inputs(["id"], id=ID),
        output(id=STR, content_id=STR, title=STR, claim=STR, quote=STR, status=STR),
        _evidence_show,
    ),
    Tool(
        "validate",
        "1",
        "Recompute every receipt of the library (transcript digests, span hashes): a summary "
        "and each item's report.",
        inputs(None),
        output(summary=OBJ, items=ARR, unreadable=ARR),
        _validate,
    ),
    Tool(
        "diff",
        "1",
        "What changed in the library (items, claims, entities, validation) between two git "
        "revisions; rev_a defaults to HEAD, rev_b to the working tree.",
        inputs(None, rev_a=ID, rev_b=ID),
        OBJ,
        _diff,
    ),
    Tool(
        "log",
        "1",
        "History of an item or a claim from git: when it appeared, changed, was reviewed.",
        inputs(["id"], id=ID, limit=count(20, 200)),
        output(entries=ARR),
        _log,
    ),
    Tool(
        "runs",
        "1",
        "Recent pipeline runs (newest first); with run_id (a short or full ID, or 'latest') "
        "that run's status and events.",
        inputs(None, run_id=ID, limit=count(20)),
        {"anyOf": [output(runs=ARR), output(run_id=STR, status=STR, event_counts=OBJ, events=ARR)]},
        _runs,
    ),
    Tool(
        "health",
        "1",
        "The library's health item by item (acquired, extracted, indexed, stale spans) and "
        "what to do next.",
        inputs(None),
        output(healthy=BOOL, items=ARR, totals=OBJ),
        _health,
    ),
    Tool(
        "ask",
        "1",
        "Answer a question from the library: claims, each validated against quotes resolved to "
        "exact bytes (researcher → shards → synthesis → validator). Markup: after:/before:/in:.",
        inputs(["question"], question=QUERY),
        output(question=STR, claims=ARR),
        _ask,
    ),
    Tool(
        "recall",
        "1",
        "Beliefs of the memory about a query (semantic, then lexical), with effective "
        "confidence and the evidence IDs behind each.",
        inputs(
            ["query"],
            query=QUERY,
            k=count(10),
            all=BOOL,
            as_of={"type": "string", "format": "date", "maxLength": 10},
        ),
        output(
            beliefs=rows(
                id=STR,
                statement=STR,
                type=STR,
                status=STR,
                episodes=ARR,
                effective_confidence={"type": "number"},
            )
        ),
        _recall,
    ),
    Tool(
        "beliefs",
        "1",
        "Beliefs sorted by effective confidence (status active by default).",
        inputs(
            status={
                "type": "string",
                "enum": ["active", "invalidated", "forgotten", "pruned", "all"],
            },
            type={"type": "string", "enum": ["fact", "insight"]},
            limit=count(20, maximum=200),
            as_of={"type": "string", "format": "date", "maxLength": 10},
        ),
        output(beliefs=rows(id=STR, statement=STR, type=STR, status=STR)),
        _beliefs,
    ),
    Tool(
        "memory_context",
        "1",
        "A prompt-ready Markdown pack of the beliefs about a query (by effective confidence, "
        "with belief and evidence IDs) and the most recent episodes.",
        inputs(
            ["query"],
            query=QUERY,
            k=count(8),
            as_of={"type": "string", "format": "date", "maxLength": 10},
        ),
        output(query=STR, markdown=STR, beliefs=ARR, episodes=ARR),
        _memory_context,
    ),
)

# -- write tools ----------------------------------------------------------------------------


def allowed_roots(repo: Repo) -> list[Path]:
    """Where ``add`` may read local files from: the repo, and ``mcp.allowed_roots``."""
    roots = [repo.root.resolve()]
    for raw in repo.param("mcp.allowed_roots", []) or []:
        path = Path(str(raw)).expanduser()
        roots.append((path if path.is_absolute() else repo.root / path).resolve())
    return roots


def _local_input(repo: Repo, ref: str) -> str:
    """``ref`` resolved (relative to the repo root), refused unless inside an allowed root."""
    from arkai.sources.route import is_url

    if is_url(ref):
        return ref
    if "://" in ref:
        raise InvalidInputError(f"{ref[:80]!r}: only http(s) URLs and local files can be added")
    raw = Path(ref).expanduser()
    path = (raw if raw.is_absolute() else repo.root / raw).resolve()
    for root in allowed_roots(repo):
        try:
            check_inside(path, root)
        except UnsafeFileError:
            continue
        return str(path)
    raise UnsafeFileError(
        f"{ref[:120]}: outside the folders this server may read (the repo and "
        "mcp.allowed_roots in params.yaml); not read"
    )


def _add(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.add import add_inputs, check_type, expand_inputs, parse_tags
    from arkai.sources.base import AddOptions

    refs = [_local_input(repo, ref) for ref in a["inputs"]]
    if a.get("type"):
        check_type(a["type"])
    if a.get("title") and len(refs) > 1:
        raise InvalidInputError("title applies to one input; give one with it")
    opts = AddOptions(
        params=repo.params, now=events.utc_now(), tags=parse_tags(a.get("tags", [])),
        title=a.get("title"), content_type=a.get("type"),
    )  # fmt: skip
    results = add_inputs(repo.root, [(ref, []) for ref in expand_inputs(refs)], opts)
    return {"results": [r.to_dict() for r in results]}


def _remember(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.remember import remember

    result = remember(repo, a["text"], title=a.get("title"), tags=a.get("tags", []))
    return {"results": [result.to_dict()]}


def _review(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.review import review_claim

    return review_claim(repo, a["id"], a["decision"], note=a.get("note")).to_dict()


def _forget(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.memory import decide

    b = decide(repo, "forget", a["id"], a.get("note", ""), undo=a.get("undo", False))
    return {"belief": b.id, "decision": "forget", "undone": a.get("undo", False)}


def _feedback(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops.feedback import feedback

    return feedback(repo, a["query"], a["id"], 1 if a["vote"] == "up" else -1).to_dict()


def _task(repo: Repo, a: dict[str, Any]) -> Any:
    from arkai.ops import tasks

    if a["action"] == "add":
        if not a.get("title") and not a.get("from_evidence"):
            raise InvalidInputError("a task needs a title (or from_evidence)")
        return tasks.add_task(
            repo, a.get("title"), priority=a.get("priority", "medium"), due=a.get("due"),
            evidence=list(a.get("evidence", [])), from_evidence=a.get("from_evidence"),
        ).to_dict()  # fmt: skip
    if not a.get("id"):
        raise InvalidInputError(f"task {a['action']} needs an id")
    return tasks.set_done(repo, a["id"], a["action"] == "done").to_dict()


_TAGS = {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 20}
_ADD_RESULTS = output(results=rows(source=STR, status=STR, id=NSTR, path=NSTR, error=NSTR))

WRITE: tuple[Tool, ...] = (
    Tool(
        "add",
        "1",
        "Add sources to the library: http(s) URLs (YouTube, podcasts, articles, PDFs) or local "
        "files inside the repo or the folders params.yaml allows (mcp.allowed_roots).",
        inputs(
            ["inputs"],
            inputs={
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 2000},
                "minItems": 1,
                "maxItems": 20,
            },
            tags=_TAGS,
            title={"type": "string", "maxLength": 300},
            type={"type": "string", "maxLength": MAX_ID},
        ),
        _ADD_RESULTS,
        _add,
        side_effect=True,
    ),
    Tool(
        "remember",
        "1",
        "Write a note (what was learned) into library/notes as a new item.",
        inputs(
            ["text"],
            text={"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
            title={"type": "string", "maxLength": 300},
            tags=_TAGS,
        ),
        _ADD_RESULTS,
        _remember,
        side_effect=True,
    ),
    Tool(
        "review",
        "1",
        "Accept or reject one claim (evidence ID or 8+ character prefix), with an optional "
        "note; recorded in the item's review.yaml.",
        inputs(
            ["id", "decision"],
            id=ID,
            decision={"type": "string", "enum": ["accepted", "rejected"]},
            note={"type": "string", "maxLength": 2000},
        ),
        output(id=STR, content_id=STR, claim=STR, review=OBJ, previous=NOBJ),
        _review,
        side_effect=True,
    ),
    Tool(
        "forget",
        "1",
        "Forget a belief (or undo that) at the memory's next replay; recorded in "
        "memory/decisions.yaml.",
        inputs(["id"], id=ID, note={"type": "string", "maxLength": 2000}, undo=BOOL),
        output(belief=STR, decision=STR, undone=BOOL),
        _forget,
        side_effect=True,
    ),
    Tool(
        "feedback",
        "1",
        "Vote an item up or down for a query; search gives it a small, bounded boost.",
        inputs(
            ["query", "id", "vote"],
            query=QUERY,
            id=ID,
            vote={"type": "string", "enum": ["up", "down"]},
        ),
        OBJ,
        _feedback,
        side_effect=True,
    ),
    Tool(
        "task",
        "1",
        "Add a task (title or from_evidence, priority, due, evidence IDs), or mark one done or "
        "open again (id).",
        inputs(
            ["action"],
            action={"type": "string", "enum": ["add", "done", "reopen"]},
            title={"type": "string", "maxLength": 300},
            id=ID,
            priority={"type": "string", "enum": ["low", "medium", "high"]},
            due={"type": "string", "format": "date", "maxLength": 10},
            evidence={"type": "array", "items": ID, "maxItems": 20},
            from_evidence=ID,
        ),
        output(id=STR, title=STR, status=STR),
        _task,
        side_effect=True,
    ),
)


def default_registry() -> Registry:
    """The tools ``arkai mcp`` and ``arkai agent`` serve."""
    return Registry((*READ, *WRITE))


__all__ = ["NINT", "READ", "WRITE", "allowed_roots", "default_registry"]
