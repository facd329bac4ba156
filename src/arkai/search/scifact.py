"""SciFact (Wadden et al. 2020, "Fact or Fiction: Verifying Scientific Claims"): reading the
release files and scoring predictions as the paper's evaluator defines the metrics.

Files: ``corpus.jsonl`` (``{"doc_id", "title", "abstract": [sentence, …]}``) and
``claims_*.jsonl`` (``{"id", "claim", "evidence": {"<doc_id>": [{"sentences": [i, …],
"label": "SUPPORT"|"CONTRADICT"}, …]}, "cited_doc_ids"}``). Predictions use the evaluator's
format: ``{"id", "evidence": {"<doc_id>": {"sentences": [i, …], "label": …}}}``.

Metrics (paper §4; precision over predictions, recall over gold, F1 their harmonic mean):

- **abstract-level, label only**: a predicted (claim, abstract) pair is correct when the
  abstract is gold evidence for the claim and the predicted label is the gold label;
- **abstract-level, label + rationale**: also, the first three predicted sentences contain
  every sentence of at least one gold rationale;
- **sentence-level, selection only**: a predicted sentence is correct when it belongs to a gold
  rationale of that abstract *and* every sentence of that rationale was predicted; the gold
  count is every sentence of every gold rationale;
- **sentence-level, selection + label**: also, the abstract's predicted label is the gold one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.errors import InvalidInputError
from arkai.search.eval import jsonl_objects

MAX_ABSTRACT_SENTS = 3
LABELS = ("SUPPORT", "CONTRADICT")

Gold = dict[int, dict[str, list[dict[str, Any]]]]
"""claim id → doc id → rationales ``{"sentences", "label"}``."""
Pred = dict[int, dict[str, dict[str, Any]]]
"""claim id → doc id → ``{"sentences", "label"}``."""


@dataclass(frozen=True, slots=True)
class Abstract:
    doc_id: str
    title: str
    sentences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    id: int
    claim: str
    evidence: dict[str, list[dict[str, Any]]]


def _jsonl(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The JSON objects of ``path`` with where they stand; the first bad line is an error."""
    problems: list[str] = []
    try:
        rows = list(jsonl_objects(path, problems))
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read ({exc})") from None
    if problems:
        raise InvalidInputError(problems[0])
    return rows


def load_corpus(path: str | os.PathLike[str]) -> dict[str, Abstract]:
    """``corpus.jsonl`` (or a folder holding it) → doc id → abstract."""
    p = Path(path)
    p = p / "corpus.jsonl" if p.is_dir() else p
    out: dict[str, Abstract] = {}
    for where, d in _jsonl(p):
        sents = d.get("abstract")
        if "doc_id" not in d or not isinstance(sents, list):
            raise InvalidInputError(f"{where}: a SciFact corpus line needs doc_id and abstract")
        out[str(d["doc_id"])] = Abstract(
            str(d["doc_id"]), str(d.get("title") or ""), tuple(str(s) for s in sents)
        )
    return out


def load_claims(path: str | os.PathLike[str]) -> list[ClaimRecord]:
    p = Path(path)
    out = []
    for where, d in _jsonl(p):
        if "id" not in d or "claim" not in d:
            raise InvalidInputError(f"{where}: a SciFact claim needs id and claim")
        evidence = d.get("evidence") or {}
        if not isinstance(evidence, dict):
            raise InvalidInputError(f"{where}: evidence must be an object")
        out.append(
            ClaimRecord(int(d["id"]), str(d["claim"]), {str(k): v for k, v in evidence.items()})
        )
    return out


def gold_of(claims: Iterable[ClaimRecord]) -> Gold:
    return {c.id: c.evidence for c in claims}


def prf(correct: int, predicted: int, gold: int) -> dict[str, float]:
    p = correct / predicted if predicted else 0.0
    r = correct / gold if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f}


def _gold_label(rationales: list[dict[str, Any]]) -> str:
    return str(rationales[0]["label"]) if rationales else ""


def abstract_level(pred: Pred, gold: Gold) -> dict[str, dict[str, float]]:
    """Label-only and label+rationale P/R/F1 (see the module doc)."""
    n_pred = n_gold = label_only = rationalized = 0
    for rationales in gold.values():
        n_gold += len(rationales)
    for cid, docs in pred.items():
        g = gold.get(cid, {})
        for doc, p in docs.items():
            if p.get("label") not in LABELS:
                continue
            n_pred += 1
            if doc not in g or p["label"] != _gold_label(g[doc]):
                continue
            label_only += 1
            first = set(p.get("sentences", [])[:MAX_ABSTRACT_SENTS])
            if any(set(r["sentences"]) <= first for r in g[doc]):
                rationalized += 1
    return {
        "label_only": prf(label_only, n_pred, n_gold),
        "label_rationale": prf(rationalized, n_pred, n_gold),
    }


def sentence_level(pred: Pred, gold: Gold) -> dict[str, dict[str, float]]:
    """Selection-only and selection+label P/R/F1 (see the module doc)."""
    n_gold = sum(len(r["sentences"]) for docs in gold.values() for rs in docs.values() for r in rs)
    n_pred = selection = selection_label = 0
    for cid, docs in pred.items():
        g = gold.get(cid, {})
        for doc, p in docs.items():
            if p.get("label") not in LABELS:
                continue
            sents = list(dict.fromkeys(p.get("sentences", [])))
            n_pred += len(sents)
            if doc not in g:
                continue
            chosen = set(sents)
            label_ok = p["label"] == _gold_label(g[doc])
            for s in sents:
                if any(s in r["sentences"] and set(r["sentences"]) <= chosen for r in g[doc]):
                    selection += 1
                    selection_label += int(label_ok)
    return {
        "selection": prf(selection, n_pred, n_gold),
        "selection_label": prf(selection_label, n_pred, n_gold),
    }


def recall_at_k(rankings: Mapping[int, list[str]], gold: Gold, k: int) -> float:
    """Share of gold evidence abstracts (over all claims) in the first ``k`` retrieved."""
    found = total = 0
    for cid, docs in gold.items():
        total += len(docs)
        top = set(rankings.get(cid, [])[:k])
        found += sum(1 for d in docs if d in top)
    return found / total if total else 0.0


def prediction_line(cid: int, docs: Mapping[str, Mapping[str, Any]]) -> str:
    """One line of the evaluator's predictions file."""
    evidence = {
        d: {"sentences": list(p["sentences"]), "label": p["label"]} for d, p in docs.items()
    }
    return json.dumps({"id": cid, "evidence": evidence}, ensure_ascii=False) + "\n"
