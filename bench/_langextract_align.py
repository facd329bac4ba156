"""Run google/langextract's aligner on the benchmark's quotes (helper for ``bench/resolve.py``).

Runs under the interpreter of a separate environment that has ``langextract`` installed; never
imports arkai. Usage: ``python _langextract_align.py IN.json OUT.json``.

IN: ``{"docs": [text, ...], "runs": [{"name", "batched", "fuzzy", "budget_s",
"quotes": [[doc_index, quote], ...]}, ...]}``. For each run the quotes of one document are
aligned with ``Resolver().align`` — all of a document's quotes in one call when ``batched``
(its intended use: the extractions of one model answer), else one call per quote — with fuzzy
alignment on or off (exact and partial "lesser" matches are accepted either way, the library's
default). A run stops early, between documents or calls, once ``budget_s`` is spent.

OUT: per run the seconds spent, the number of quotes attempted, and for each attempted quote
``[status or null, char_start or null, char_end or null]``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


def _run(docs: list[str], run: dict[str, Any]) -> dict[str, Any]:
    from langextract import resolver as lx_resolver
    from langextract.core import data as lx_data

    by_doc: dict[int, list[int]] = {}
    quotes: list[list[Any]] = run["quotes"]
    for k, (d, _) in enumerate(quotes):
        by_doc.setdefault(int(d), []).append(k)
    results: list[list[Any] | None] = [None] * len(quotes)
    res = lx_resolver.Resolver()
    budget = float(run.get("budget_s", 1e9))
    spent = 0.0
    attempted = 0
    stopped = False

    def align(text: str, ks: list[int]) -> float:
        exts = [
            lx_data.Extraction(extraction_class="quote", extraction_text=quotes[k][1]) for k in ks
        ]
        t0 = time.perf_counter()
        out = list(
            res.align(
                exts,
                text,
                token_offset=0,
                char_offset=0,
                enable_fuzzy_alignment=bool(run["fuzzy"]),
            )
        )
        dt = time.perf_counter() - t0
        # align() yields the same objects it was given, in order.
        for k, ext in zip(ks, out, strict=True):
            ci = ext.char_interval
            status = ext.alignment_status.value if ext.alignment_status is not None else None
            results[k] = [
                status,
                ci.start_pos if ci is not None else None,
                ci.end_pos if ci is not None else None,
            ]
        return dt

    for d, ks in by_doc.items():
        text = docs[d]
        groups = [ks] if run["batched"] else [[k] for k in ks]
        for group in groups:
            spent += align(text, group)
            attempted += len(group)
            if spent > budget:
                stopped = True
                break
        if stopped:
            break
    return {
        "name": run["name"],
        "seconds": spent,
        "attempted": attempted,
        "stopped_by_budget": stopped,
        "results": results,
    }


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    logging.disable(logging.WARNING)
    with open(src, encoding="utf-8") as f:
        job = json.load(f)
    from importlib.metadata import version

    out: dict[str, Any] = {
        "version": version("langextract"),
        "python": sys.version.split()[0],
        "runs": [],
    }
    for run in job["runs"]:
        print(f"langextract: run {run['name']} ({len(run['quotes'])} quotes)", file=sys.stderr)
        out["runs"].append(_run(job["docs"], run))
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
