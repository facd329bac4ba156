"""Article extraction quality on the shared article-extraction-benchmark pages.

For each ``<id>.html`` with an ``<id>.expected.txt`` under
``../shared/data/articles/scrapinghub_aeb/``, run arkai's extraction (the paragraphs that go
under the title in ``transcript.md``) and score it against the expected article body with
token-level precision, recall and F1: lower-cased, split on non-word characters, tokens compared
as multisets. Prints JSON: one row per page and the mean F1 of each variant.

    python bench/articles.py                 # arkai's settings ("auto")
    python bench/articles.py --variants all  # also each trafilatura mode alone
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from arkai.sources.article import FOCUS_MODES, decode_html, extract_article

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "articles" / "scrapinghub_aeb"
_SPLIT_RE = re.compile(r"\W+")


def tokens(text: str) -> Counter[str]:
    """Lower-cased word tokens of ``text`` as a multiset."""
    return Counter(t for t in _SPLIT_RE.split(text.lower()) if t)


def score(predicted: str, expected: str) -> dict[str, float]:
    """Token precision, recall and F1 of ``predicted`` against ``expected``."""
    pred, gold = tokens(predicted), tokens(expected)
    overlap = sum((pred & gold).values())
    if not overlap:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    p = overlap / sum(pred.values())
    r = overlap / sum(gold.values())
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r), 4)}


def pages(data_dir: Path = DATA) -> list[tuple[str, Path, Path]]:
    """(id, html path, expected path) for every page that has its expected text."""
    out = []
    for html in sorted(data_dir.glob("*.html")):
        page_id = html.name.removesuffix(".html")
        expected = data_dir / f"{page_id}.expected.txt"
        if expected.is_file():
            out.append((page_id, html, expected))
    return out


def evaluate(focus: str = "auto", data_dir: Path = DATA) -> dict[str, Any]:
    """Per-page scores and their mean for one extraction variant."""
    rows: list[dict[str, Any]] = []
    for page_id, html_path, expected_path in pages(data_dir):
        started = time.perf_counter()
        article = extract_article(decode_html(html_path.read_bytes()), focus=focus)
        seconds = time.perf_counter() - started
        expected = expected_path.read_text(encoding="utf-8")
        rows.append(
            {
                "id": page_id[:8],
                **score(article.text, expected),
                "words": article.word_count,
                "expected_words": sum(tokens(expected).values()),
                "mode": article.focus,
                "seconds": round(seconds, 3),
            }
        )
    mean = round(sum(r["f1"] for r in rows) / len(rows), 4) if rows else 0.0
    return {"variant": focus, "pages": rows, "mean_f1": mean}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of <id>.html pages")
    parser.add_argument(
        "--variants",
        default="auto",
        help=f"comma-separated of {', '.join(FOCUS_MODES)}, or 'all'",
    )
    args = parser.parse_args(argv)
    names = list(FOCUS_MODES) if args.variants == "all" else args.variants.split(",")
    if not pages(args.data):
        print(f"no pages with expected text under {args.data}", file=sys.stderr)
        return 1
    results = [evaluate(name.strip(), args.data) for name in names]
    print(json.dumps(results if len(results) > 1 else results[0], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
