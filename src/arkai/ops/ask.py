"""``arkai ask QUESTION``: researcher → shards → synthesis → validator, with arkai's bounce-back
loop (seed 001, "Semantic Search" and "Validator Architecture"; docs/answers.md).

1. The researcher (:mod:`arkai.search.research`, dispatched by :mod:`arkai.ops.ask_shards`)
   reads the question's period and whether it needs every shard, asks the chosen shards for
   structured evidence, and resolves every quote to bytes; an unresolved quote stays in the
   record and never supports a claim.
2. ``synthesize_answer`` writes claims citing match ids; ``validate_claims`` judges each claim
   against each verified piece of evidence it cites (a contradicting quote never supports it;
   a year the evidence does not date caps it at partial). Claims not grounded go back to the
   synthesizer, which must bring evidence or retract, at most ``ask.max_rounds`` (3) rounds;
   arkai owns the counter. Agreement: every claim grounded or retracted; otherwise a
   disagreement report. Every round is an event in ``.arkai/runs/``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arkai.adapters import interrupt
from arkai.adapters.events import RunLog
from arkai.adapters.repo import Repo
from arkai.errors import NotFoundError, PipelineError
from arkai.model.answer import (
    GROUNDED,
    MAX_ROUNDS,
    PARTIAL,
    UNSUPPORTED,
    VERDICTS,
    Answer,
    Claim,
    Match,
    Round,
    Verdict,
)
from arkai.ops.ask_shards import (
    Transcripts,
    ask_shards,
    call,
    evidence_pool,
    make_runner,
    research,
    role,
)
from arkai.patterns import Pattern, claims_input, get_pattern
from arkai.providers.runner import Runner

SYNTHESIZE = "synthesize_answer"
VALIDATE = "validate_claims"
_RANK = {GROUNDED: 2, PARTIAL: 1, UNSUPPORTED: 0}
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")


def _claims(value: Any) -> tuple[list[Claim], list[str]]:
    if not isinstance(value, dict):
        raise PipelineError("synthesizer: the answer is not an object")
    claims = []
    for n, c in enumerate(value.get("claims") or [], 1):
        if isinstance(c, dict) and str(c.get("text") or "").strip():
            ev = tuple(str(e) for e in c.get("evidence") or () if isinstance(e, str))
            claims.append(Claim(str(c.get("id") or f"c{n}"), str(c["text"]).strip(), ev))
    retracted = [str(r) for r in value.get("retracted") or () if isinstance(r, str | int)]
    return claims, retracted


def temporal(claim: Claim, cited: list[Match]) -> str:
    """``consistent``, or the years the claim names that none of its evidence is dated in or
    mentions."""
    years = set(_YEAR.findall(claim.text))
    if not years:
        return "consistent"
    known = set()
    for m in cited:
        known |= set(_YEAR.findall(f"{m.timestamp or ''} {m.quote} {m.context}"))
    missing = sorted(years - known)
    if not missing:
        return "consistent"
    dated = sorted({(m.timestamp or "")[:10] for m in cited if m.timestamp}) or ["undated"]
    return f"the claim names {', '.join(missing)}; its evidence is dated {', '.join(dated)}"


def validate(
    runner: Runner, pattern: Pattern, claims: list[Claim], pool: dict[str, Match], what: str
) -> list[Verdict]:
    """A verdict per claim: the validator judges each (claim, cited verified match) pair; the
    claim's verdict is its best pair's. A claim citing no verified match is unsupported without
    a call. The validator must judge every pair it is given, or the round fails loudly."""
    pairs: list[dict[str, str]] = []
    cited: dict[str, list[Match]] = {}
    for c in claims:
        cited[c.id] = [pool[e] for e in dict.fromkeys(c.evidence) if e in pool and pool[e].verified]
        for n, m in enumerate(cited[c.id]):
            pairs.append({"id": f"{c.id}#{n}", "claim": c.text, "quote": m.quote})
    judged: dict[str, Mapping[str, Any]] = {}
    if pairs:
        lines = []
        for c in claims:
            for m in cited[c.id]:
                lines.append(f"[{m.match_id}] ({m.timestamp or 'undated'}) {m.context or m.quote}")
                if m.quote not in lines[-1]:
                    lines.append(f"[{m.match_id}] {m.quote}")
        text = claims_input(pairs, "\n".join(dict.fromkeys(lines)) + "\n")
        value, _ = call(runner, pattern, text, {"stance": True}, what)
        for v in value if isinstance(value, list) else []:
            if isinstance(v, dict):
                judged[str(v.get("id"))] = v
        missing = [p["id"] for p in pairs if p["id"] not in judged]
        if missing:
            raise PipelineError(
                f"{what}: the validator did not judge {len(missing)} of {len(pairs)} pieces of "
                f"evidence ({', '.join(missing[:5])})",
                hint="a validator must return one verdict per claim id it was given",
            )
    out = []
    for c in claims:
        ms = cited[c.id]
        if not ms:
            bad = [e for e in c.evidence if e not in pool or not pool[e].verified]
            note = "cites no verified evidence" + (
                f" ({', '.join(bad[:5])} unknown or unresolved)" if bad else ""
            )
            out.append(Verdict(c.id, UNSUPPORTED, (), note, "consistent"))
            continue
        results = []
        for n, m in enumerate(ms):
            v = judged[f"{c.id}#{n}"]
            if v.get("verdict") not in VERDICTS:
                raise PipelineError(
                    f"{what}: verdict {v.get('verdict')!r} is not one of {', '.join(VERDICTS)}"
                )
            if v.get("stance") == "contradicts":  # the quote says the opposite: no support
                v = {**v, "verdict": UNSUPPORTED}
            results.append((v, m))
        best = max(_RANK[str(v["verdict"])] for v, _ in results)
        label = next(k for k, r in _RANK.items() if r == best)
        support = [m for v, m in results if _RANK[str(v["verdict"])] == best] if best else []
        notes = "; ".join(f"{m.match_id}: {v.get('note', '')}" for v, m in results)
        when = temporal(c, support or ms)
        if label == GROUNDED and when != "consistent":
            label = PARTIAL
        out.append(Verdict(c.id, label, tuple(m.match_id for m in support), notes, when))
    return out


def _synth_input(
    question: str, pool: list[Match], rnd: int, claims: list[Claim], verdicts: list[Verdict]
) -> str:
    payload: dict[str, Any] = {
        "question": question,
        "round": rnd,
        "evidence": [
            {
                "match_id": m.match_id,
                "quote": m.quote,
                "context": m.context,
                "timestamp": m.timestamp,
            }
            for m in pool
        ],
    }
    if rnd > 1:
        payload["claims"] = [c.to_dict() for c in claims]
        payload["feedback"] = [
            {"id": v.claim, "verdict": v.verdict, "note": v.notes, "temporal": v.temporal}
            for v in verdicts
            if v.verdict != GROUNDED
        ]
    return json.dumps(payload, ensure_ascii=False, indent=1)


@dataclass
class Loop:
    """The bounce-back loop's state (arkai owns the round counter)."""

    rounds: list[Round] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)


def bounce(repo: Repo, question: str, pool: list[Match], log: RunLog) -> Loop:
    """Synthesis and validation rounds until agreement or ``ask.max_rounds`` (see the module
    doc)."""
    synth, judge = make_runner(repo, "synthesizer"), make_runner(repo, "validator")
    sp, vp = get_pattern(SYNTHESIZE, repo.root), get_pattern(VALIDATE, repo.root)
    rounds = min(
        MAX_ROUNDS, max(1, int((repo.params.get("ask") or {}).get("max_rounds", MAX_ROUNDS)))
    )
    by_id = {m.match_id: m for m in pool}
    loop = Loop()
    claims: list[Claim] = []
    verdicts: list[Verdict] = []
    for rnd in range(1, rounds + 1):
        interrupt.check("arkai ask")
        value, _ = call(
            synth,
            sp,
            _synth_input(question, pool, rnd, claims, verdicts),
            {},
            f"synthesis round {rnd}",
        )
        new, retracted = _claims(value)
        if rnd > 1:
            kept = {c.id for c in new}
            # A flagged claim must come back with evidence or be retracted; one that silently
            # disappears counts as retracted.
            retracted = sorted(set(retracted) | {c.id for c in claims if c.id not in kept})
            new = [c for c in new if c.id not in retracted]
        retracted = [r for r in retracted if r not in loop.retracted]
        loop.retracted.extend(retracted)
        claims = new
        verdicts = validate(judge, vp, claims, by_id, f"validation round {rnd}")
        loop.rounds.append(Round(rnd, tuple(claims), tuple(verdicts), tuple(retracted)))
        counts = {k: sum(1 for v in verdicts if v.verdict == k) for k in VERDICTS}
        log.emit("AskRound", round=rnd, claims=len(claims), retracted=len(retracted), **counts)
        if all(v.verdict == GROUNDED for v in verdicts):
            break
    return loop


def answer_id(question: str, pool: list[Match]) -> str:
    h = hashlib.sha256(question.encode("utf-8"))
    for m in pool:
        h.update(f"\0{m.match_id}\0{m.slice_sha256}".encode())
    return h.hexdigest()[:16]


def ask(repo: Repo, question: str) -> Answer:
    """Answer ``question`` from the library (see the module doc). Raises
    :class:`NotFoundError` ("no evidence") when nothing in scope supports any claim, and
    :class:`PipelineError` when a provider fails (recorded; re-running resumes from the cache).
    """
    texts = Transcripts()
    with repo.run("ask", question=question) as log:
        scope, _, works = research(repo, question, texts)
        log.emit("AskScope", **scope.to_dict())
        if not any(w.lines for w in works):
            empty = next(iter(repo.items()), None) is None
            raise NotFoundError(
                "no evidence: the library is empty" if empty else "no evidence: nothing in scope",
                hint="add items (arkai add)" if empty else "widen the question's period or folders",
            )
        answers = ask_shards(repo, scope, works, texts, log)
        pool = evidence_pool(answers)
        if not pool:
            raise NotFoundError(
                f"no evidence for {question!r}: no shard returned a quote that resolves to bytes",
                hint="rephrase the question with words the library uses, or widen its period",
            )
        loop = bounce(repo, question, pool, log)
        last = loop.rounds[-1]
        grounded = {v.claim for v in last.verdicts if v.verdict == GROUNDED}
        agreement = len(grounded) == len(last.verdicts)
        final = tuple(c for c in last.claims if c.id in grounded)
        if not final:
            log.emit("AskNoAnswer", rounds=len(loop.rounds))
            raise NotFoundError(
                f"no evidence for {question!r}: every claim was retracted or left unsupported",
                hint="arkai ask --json shows the rounds and the evidence found",
            )
        temporal_ok = all(v.temporal == "consistent" for v in last.verdicts)
        return Answer(
            id=answer_id(question, pool),
            question=question,
            scope=scope,
            shards=tuple(answers),
            claims=final,
            verdicts=tuple(v for v in last.verdicts if v.claim in grounded),
            rounds=tuple(loop.rounds),
            agreement=agreement,
            disagreements=tuple(v for v in last.verdicts if v.claim not in grounded),
            retracted=tuple(loop.retracted),
            temporal_check={
                "consistent": temporal_ok,
                "note": "every dated claim matches its evidence's dates"
                if temporal_ok
                else "; ".join(v.temporal for v in last.verdicts if v.temporal != "consistent"),
            },
            providers={
                r: ":".join(p for p in role(repo.params, r) if p)
                for r in ("shards", "synthesizer", "validator")
            },
            run_id=log.run_id,
        )


def iter_citations(answer: Answer) -> Iterator[tuple[int, Match]]:
    """The final claims' evidence, numbered from 1 in order of first citation."""
    seen: dict[str, int] = {}
    by_claim = {v.claim: v for v in answer.verdicts}
    for c in answer.claims:
        for mid in by_claim[c.id].evidence:
            if mid not in seen:
                m = answer.match(mid)
                if m is not None:
                    seen[mid] = len(seen) + 1
                    yield seen[mid], m


__all__ = ["SYNTHESIZE", "VALIDATE", "ask", "bounce", "iter_citations", "validate"]
