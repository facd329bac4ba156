"""The builtin contradiction check measured on SciFact's train claims.

Usage::

    .venv/bin/python bench/contradiction.py [--data DIR] [--min-overlap X]

Prints one JSON object on stdout and writes nothing.

SciFact (Wadden et al., 2020; ``DIR/claims/scifact``, default ``../shared/data``) pairs claims
with rationale sentences of abstracts, each set labelled SUPPORT or CONTRADICT. Every
(claim, rationale set) pair is one case: the claim is the older statement, the rationale
sentences (joined) the newer one; the check's *conflict* is a CONTRADICT prediction. Reported:
precision, recall and F1 of CONTRADICT, the rule that fired, and the share of pairs that pass
the topic gate (content-word overlap). Only the train claims exist here, and they are the only
data the rules and the gate were tuned on — so these are tuning-set figures, stated as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from arkai.memory import contradict  # noqa: E402


def cases(data: Path) -> list[tuple[str, str, str]]:
    folder = data / "claims" / "scifact"
    corpus = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        for row in fh:
            d = json.loads(row)
            corpus[str(d["doc_id"])] = d["abstract"]
    out = []
    with (folder / "claims_train.jsonl").open(encoding="utf-8") as fh:
        for row in fh:
            d = json.loads(row)
            for doc, sets in d["evidence"].items():
                for s in sets:
                    text = " ".join(corpus[doc][i] for i in s["sentences"])
                    out.append((d["claim"], text, s["label"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--min-overlap", type=float, default=contradict.MIN_OVERLAP)
    args = ap.parse_args()
    pairs = cases(args.data)
    t0 = time.perf_counter()
    tp = fp = fn = tn = 0
    rules: Counter[str] = Counter()
    rule_hits: Counter[str] = Counter()
    gated = 0
    for claim, rationale, label in pairs:
        words_c, words_r = contradict.tokens(claim), contradict.tokens(rationale)
        ov = contradict.overlap(contradict.content(words_c), contradict.content(words_r))
        gated += ov >= args.min_overlap
        got = contradict.check(claim, rationale, min_overlap=args.min_overlap)
        pred, gold = got is not None, label == "CONTRADICT"
        if got is not None:
            rules[got.rule] += 1
            rule_hits[got.rule] += gold
        tp += pred and gold
        fp += pred and not gold
        fn += gold and not pred
        tn += not pred and not gold
    seconds = time.perf_counter() - t0
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(json.dumps({
        "split": "train (the tuning set; no other labelled split is available here)",
        "pairs": len(pairs),
        "contradict_pairs": tp + fn,
        "support_pairs": fp + tn,
        "min_overlap": args.min_overlap,
        "passed_topic_gate": gated,
        "precision": round(p, 3), "recall": round(r, 3), "f1": round(f1, 3),
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "rules_fired": dict(sorted(rules.items())),
        "rule_precision": {k: round(rule_hits[k] / v, 3) for k, v in sorted(rules.items())},
        "base_rate": round((tp + fn) / len(pairs), 3),
        "pairs_per_second": round(len(pairs) / seconds),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
