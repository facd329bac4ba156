"""``arkai eval verify``: the researcher and validator of ``arkai ask``, with the builtin
provider, over SciFact (:mod:`arkai.search.scifact`) as a library.

The corpus becomes a library in memory: each abstract an item whose transcript is its
sentences one per line (sentence *i* = line *i + 1*), so a match is ``doc:<doc_id>:L<line>``
exactly as an implicit shard's ``item:<id8>:L<line>``. Per claim:

1. **researcher** — the lexical lane of the one search pipeline
   (:func:`arkai.search.pipeline.build_lexical`, BM25 over title + abstract) ranks the
   abstracts; the top ``k`` form the claim's shard;
2. **shard** — ``query_shard`` through the provider runner (builtin: BM25 within the shard);
   every returned quote is resolved to bytes of its abstract's transcript (V1, exact);
3. **validator** — ``validate_claims`` (with the stance check) judges the claim against each
   resolved quote; sentences whose verdict reaches ``min_verdict`` are the rationale, and the
   abstract's label is CONTRADICT when most of them contradict the claim, else SUPPORT.

Calls go through the runner with a response store under a temporary folder (nothing is written
to a library). Tuned on the SciFact **train** claims only (``--half a``); the dev claims are the
ones to report.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.core.document import Document
from arkai.core.resolve import resolve_quote
from arkai.errors import InvalidInputError
from arkai.model.status import is_verified
from arkai.ops.ask import VALIDATE
from arkai.ops.ask_shards import QUERY, AskProvider
from arkai.patterns import claims_input, get_pattern
from arkai.providers.runner import ResponseStore, Runner, RunnerConfig
from arkai.search.eval import split_queries
from arkai.search.pipeline import build_lexical
from arkai.search.research import EvidenceLine, shard_input
from arkai.search.scifact import (
    Abstract,
    ClaimRecord,
    Pred,
    abstract_level,
    gold_of,
    load_claims,
    load_corpus,
    prediction_line,
    recall_at_k,
    sentence_level,
)

_RANK = {"grounded": 2, "partial": 1, "unsupported": 0}
RECALL_KS = (1, 3, 10)


@dataclass(frozen=True)
class VerifySettings:
    """The knobs, tuned on half a of the SciFact train claims (abstract label+rationale F1):
    k 1 / 2 / 3 gave 0.299 / 0.250 / 0.224 (partial, 2 sentences), ``grounded`` instead of
    ``partial`` 0.124, and 1 / 2 / 3 / 4 sentences 0.239 / 0.299 / 0.316 / 0.313 (k 1)."""

    k: int = 1
    """Abstracts per claim (the claim's shard)."""
    min_verdict: str = "partial"
    """The weakest verdict whose sentence counts as a rationale."""
    max_sentences: int = 3
    """Rationale sentences kept per abstract (most relevant first)."""
    max_matches: int = 12


@dataclass
class VerifyReport:
    claims: int
    settings: VerifySettings
    abstract: dict[str, dict[str, float]]
    sentence: dict[str, dict[str, float]]
    recall: dict[str, float]
    quotes: int
    quotes_resolved: int
    seconds: float
    predictions: str | None = None
    split: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def resolved_fraction(self) -> float:
        return self.quotes_resolved / self.quotes if self.quotes else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "split": self.split,
            "settings": self.settings.__dict__,
            "abstract_level": self.abstract,
            "sentence_level": self.sentence,
            "retrieval_recall": self.recall,
            "quotes": self.quotes,
            "quotes_resolved": self.quotes_resolved,
            "quotes_resolved_fraction": self.resolved_fraction,
            "seconds": round(self.seconds, 2),
            "predictions": self.predictions,
        }


def transcript(a: Abstract) -> str:
    """An abstract as a transcript: one sentence per line (line breaks inside flattened)."""
    return "".join(" ".join(s.splitlines()) + "\n" for s in a.sentences)


def _select_claims(
    claims: list[ClaimRecord], half: str | None, limit: int | None
) -> list[ClaimRecord]:
    if half is not None:
        a, b = split_queries([str(c.id) for c in claims])
        keep = set(a if half == "a" else b)
        claims = [c for c in claims if str(c.id) in keep]
    return claims[:limit] if limit else claims


def verify(
    corpus_path: Path,
    claims_path: Path,
    *,
    settings: VerifySettings | None = None,
    predictions: Path | None = None,
    half: str | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Run the pipeline over the claims and score it (see the module doc)."""
    s = settings or VerifySettings()
    if s.min_verdict not in _RANK or s.k < 1:
        raise InvalidInputError("eval verify: k must be ≥ 1 and min_verdict a verdict")
    t0 = time.perf_counter()
    corpus = load_corpus(corpus_path)
    claims = _select_claims(load_claims(claims_path), half, limit)
    ids = list(corpus)
    texts = {d: transcript(corpus[d]) for d in ids}
    docs: dict[str, Document] = {}
    index = build_lexical([(corpus[d].title, texts[d]) for d in ids])
    qp, vp = get_pattern(QUERY, None), get_pattern(VALIDATE, None)
    pred: Pred = {}
    rankings: dict[int, list[str]] = {}
    quotes = resolved = 0
    lines_out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="arkai-verify-") as tmp:
        runner = Runner(
            provider=AskProvider(), store=ResponseStore(Path(tmp)), config=RunnerConfig()
        )
        for n, claim in enumerate(claims, 1):
            hits = index.search(claim.claim, k=max(s.k, *RECALL_KS))
            ranked = [ids[i] for i, _ in hits]
            rankings[claim.id] = ranked
            shard = ranked[: s.k]
            lines = [
                EvidenceLine(f"doc:{d}:L{i}", None, text)
                for d in shard
                for i, text in enumerate(texts[d].splitlines(), 1)
            ]
            value = runner.run(
                qp,
                shard_input(claim.claim, "", len(shard), lines),
                {"variables": {"max_matches": s.max_matches}},
            ).value
            found: dict[str, list[tuple[int, str]]] = {}
            for m in value.get("matches") or []:
                doc_id, _, line = str(m["match_id"]).removeprefix("doc:").rpartition(":L")
                if doc_id not in texts:
                    continue
                quotes += 1
                doc = docs.get(doc_id) or docs.setdefault(
                    doc_id, Document(texts[doc_id].encode("utf-8"))
                )
                span = resolve_quote(doc, str(m["quote"]))
                if span.span is None or not is_verified(span.resolution.status):
                    continue
                resolved += 1
                sentence = doc.line_of(span.span.start) - 1
                if sentence != int(line) - 1:
                    continue
                found.setdefault(doc_id, []).append((sentence, str(m["quote"])))
            docs_pred: dict[str, dict[str, Any]] = {}
            for doc_id, sents in found.items():
                pairs = [{"id": str(i), "claim": claim.claim, "quote": q} for i, q in sents]
                verdicts = runner.run(
                    vp, claims_input(pairs, texts[doc_id]), {"variables": {"stance": True}}
                ).value
                chosen = [
                    (int(v["id"]), v.get("stance") == "contradicts")
                    for v in verdicts
                    if _RANK.get(str(v.get("verdict")), 0) >= _RANK[s.min_verdict]
                ][: s.max_sentences]
                if not chosen:
                    continue
                contra = sum(1 for _, c in chosen if c)
                label = "CONTRADICT" if contra * 2 > len(chosen) else "SUPPORT"
                docs_pred[doc_id] = {"sentences": sorted({i for i, _ in chosen}), "label": label}
            pred[claim.id] = docs_pred
            lines_out.append(prediction_line(claim.id, docs_pred))
            if progress:
                progress(n, len(claims))
    if predictions is not None:
        from arkai.adapters.fs import atomic_write_text

        atomic_write_text(predictions, "".join(lines_out))
    gold = gold_of(claims)
    return VerifyReport(
        claims=len(claims),
        settings=s,
        abstract=abstract_level(pred, gold),
        sentence=sentence_level(pred, gold),
        recall={f"recall@{k}": recall_at_k(rankings, gold, k) for k in RECALL_KS},
        quotes=quotes,
        quotes_resolved=resolved,
        seconds=time.perf_counter() - t0,
        predictions=str(predictions) if predictions else None,
        split=half,
    )
