"""Quote-resolution benchmark: arkai against a bare ``bytes.find`` floor and langextract's aligner.

Usage::

    .venv/bin/python bench/resolve.py [--quick] [--langextract-python PATH] [--data DIR]

Prints one JSON object on stdout; progress goes to stderr. Nothing is written into the repository
(langextract's input and output pass through a temporary directory).

Data. The real transcripts under ``shared/data/transcripts`` (SRT, VTT, youtube-transcript-api
JSON, plain text) are reduced to their text, split into sentences (or, for unpunctuated auto
captions, 8–20 word chunks), and one part of them is held out. Synthetic transcripts of 50–200 KB
are built from shuffled units of the rest, 1–3 units a line, each line prefixed ``[HH:MM:SS] ``
like arkai's ``transcript.md``. Everything is drawn from one seeded RNG, so a run is
deterministic.

Quotes, each recorded with its class:

* ``exact`` — a whole sentence of the transcript, or a 5–30 word run of one of its lines;
* ``altered`` — an exact quote with one word replaced by a different real word (verified not to
  occur in the transcript, in any case);
* ``case`` — an exact quote lower-, upper-, title-cased or with its first letter's case flipped
  (verified not to occur verbatim);
* ``absent`` — a sentence of the held-out sources that shares no 6-word run with any
  transcript (verified not to occur in its transcript, in any case).

Measured: the floor (one ``bytes.find`` and one ``bytes.count`` per quote over its transcript's
bytes, quotes pre-encoded), arkai's ``resolve_quote`` (exact mode, a fresh ``Document`` per
transcript so its lazy indexes are paid for), exact-mode
correctness, fuzzy mode on a sample, and langextract's ``Resolver.align`` on a subset (through
``bench/_langextract_align.py`` under a separate interpreter).

``MB/s`` is transcript bytes searched per second: for every quote, the full size of the
transcript it is resolved against, summed, divided by the wall time.
"""

from __future__ import annotations

import argparse
import gc
import html
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from arkai.core.document import Document  # noqa: E402
from arkai.core.fuzzy import DEFAULT_THRESHOLD  # noqa: E402
from arkai.core.hashing import digest  # noqa: E402
from arkai.core.resolve import Match, resolve_quote  # noqa: E402

SEED = 20240611
EXACT, ALTERED, CASE, ABSENT = "exact", "altered", "case", "absent"
CLASSES = (EXACT, ALTERED, CASE, ABSENT)
CLASS_WEIGHTS = (0.60, 0.15, 0.15, 0.10)
GROUNDED = ("resolved", "ambiguous")
MB = 1_000_000


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- reading the real transcripts ------------------------------------------------------------

_TAG_RE = re.compile(r"<[^>]*>")
_WS_RE = re.compile(r"\s+")
_BLOCK_RE = re.compile(r"\n[ \t]*\n")
_SENT_RE = re.compile(r"(?<=[.!?])\s+")


def _clean(s: str) -> str:
    return _WS_RE.sub(" ", html.unescape(_TAG_RE.sub("", s))).strip()


def _srt_cues(raw: str) -> list[str]:
    out = []
    for block in _BLOCK_RE.split(raw.replace("\r\n", "\n")):
        keep = [
            ln
            for ln in block.split("\n")
            if ln.strip() and "-->" not in ln and not ln.strip().isdigit()
        ]
        if keep:
            out.append(_clean(" ".join(keep)))
    return out


def _vtt_cues(raw: str) -> list[str]:
    # Auto captions roll: each line shows up in two or three cues. Keep a line once.
    out: list[str] = []
    recent: list[str] = []
    for block in _BLOCK_RE.split(raw.replace("\r\n", "\n")):
        lines = block.split("\n")
        timing = [i for i, ln in enumerate(lines) if "-->" in ln]
        if not timing:
            continue
        for ln in lines[timing[0] + 1 :]:
            text = _clean(ln)
            if text and text not in recent:
                out.append(text)
                recent = [*recent[-3:], text]
    return out


def _json_cues(raw: str) -> list[str]:
    data = json.loads(raw)
    out = []
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            out.append(_clean(item["text"]))
    return [c for c in out if c]


def read_source(path: Path) -> list[str]:
    raw = path.read_text(encoding="utf-8", errors="replace")
    suffix = path.suffix.lower()
    if suffix == ".srt":
        return _srt_cues(raw)
    if suffix == ".vtt":
        return _vtt_cues(raw)
    if suffix == ".json":
        return _json_cues(raw)
    return [_clean(ln) for ln in raw.splitlines() if ln.strip()]


def to_units(cues: list[str], rng: random.Random) -> list[str]:
    """Sentences, or 8–20 word chunks when the source has (almost) no sentence punctuation."""
    stream = " ".join(cues)
    words = stream.split()
    enders = sum(1 for w in words if w[-1] in ".!?")
    punctuated = enders * 40 >= len(words) > 0
    units: list[str] = []
    for piece in _SENT_RE.split(stream) if punctuated else [stream]:
        ws = piece.split()
        if punctuated and len(ws) <= 45:
            units.append(" ".join(ws))
            continue
        i = 0
        while i < len(ws):
            n = rng.randint(8, 20)
            units.append(" ".join(ws[i : i + n]))
            i += n
    return [u for u in units if u]


@dataclass
class Corpus:
    train_units: list[str]
    absent_units: list[tuple[str, str]]  # (sentence, source)
    vocab: list[str]
    sources: dict[str, Any]


def _shingles(words: list[str], k: int = 6) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + k]) for i in range(len(words) - k + 1)}


_FOLD_WORDS = re.compile(r"\w+")


def load_corpus(data_dir: Path, rng: random.Random) -> Corpus:
    files = sorted(
        p
        for p in data_dir.rglob("*")
        if p.is_file() and p.suffix.lower() in {".srt", ".vtt", ".json", ".txt"}
    )
    if not files:
        raise SystemExit(f"no transcripts under {data_dir}")
    # 3Blue1Brown's files are one talk in four forms: keep its plain text, held out as a whole.
    # One Virtual Coffee episode is held out too, so that absent sentences come from the same
    # domain as the transcripts as well as from a different one.
    held: list[Path] = []
    train: list[Path] = []
    for p in files:
        rel = p.relative_to(data_dir).as_posix()
        if "3b1b" in rel:
            if p.name == "transcript.txt":
                held.append(p)
            continue
        if "timings" in p.name:
            continue
        if rel.endswith("episode_8_3.srt"):
            held.append(p)
            continue
        train.append(p)
    if not held:
        held.append(train.pop())
    sources: dict[str, Any] = {}
    train_units: list[str] = []
    for p in train:
        units = to_units(read_source(p), rng)
        sources[p.relative_to(data_dir).as_posix()] = {"role": "transcripts", "units": len(units)}
        train_units.extend(units)
    train_words = _FOLD_WORDS.findall(" ".join(train_units).lower())
    train_sh = _shingles(train_words)
    absent: list[tuple[str, str]] = []
    for p in held:
        rel = p.relative_to(data_dir).as_posix()
        units = to_units(read_source(p), rng)
        kept = 0
        for u in units:
            ws = _FOLD_WORDS.findall(u.lower())
            if len(u.split()) >= 5 and not (_shingles(ws) & train_sh):
                absent.append((u, rel))
                kept += 1
        sources[rel] = {"role": "absent quotes", "units": len(units), "kept": kept}
    vocab = sorted({w for w in train_words if re.fullmatch(r"[a-z]{3,12}", w)})
    return Corpus(train_units, absent, vocab, sources)


# --- synthetic transcripts and quotes --------------------------------------------------------


@dataclass
class Doc:
    data: bytes
    lines: list[str]
    units: list[str]
    folded: str


@dataclass
class Quote:
    doc: int
    cls: str
    text: str
    orig: str | None  # the exact text it was derived from (exact, altered, case)
    source: str | None = None  # absent: held-out file


def _stamp(t: int) -> str:
    return f"[{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}] "


def build_docs(corpus: Corpus, target_bytes: int, rng: random.Random) -> list[Doc]:
    docs: list[Doc] = []
    total = 0
    pool = corpus.train_units
    while total < target_bytes:
        size = rng.randint(50_000, 200_000)
        order = list(range(len(pool)))
        rng.shuffle(order)
        head = f"# Transcript {len(docs) + 1:04d}\n\n"
        parts = [head]
        n = len(head)
        lines: list[str] = []
        units: list[str] = []
        t = rng.randint(0, 20)
        k = 0
        while n < size:
            take = rng.randint(1, 3)
            group = []
            for _ in range(take):
                if k >= len(order):
                    rng.shuffle(order)
                    k = 0
                group.append(pool[order[k]])
                k += 1
            text = " ".join(group)
            line = _stamp(t) + text + "\n"
            parts.append(line)
            n += len(line.encode("utf-8"))
            lines.append(text)
            units.extend(group)
            t += rng.randint(2, 12)
        data = "".join(parts).encode("utf-8")
        docs.append(Doc(data, lines, units, data.decode("utf-8").lower()))
        total += len(data)
    return docs


_CORE_RE = re.compile(r"(\W*)([A-Za-z]{2,})(\W*)")


def _exact_quote(doc: Doc, rng: random.Random) -> str:
    while True:
        if rng.random() < 0.5:
            unit = rng.choice(doc.units)
            if 5 <= len(unit.split()) <= 60:
                return unit
            continue
        words = rng.choice(doc.lines).split(" ")
        if len(words) < 5:
            continue
        n = rng.randint(5, min(30, len(words)))
        i = rng.randint(0, len(words) - n)
        return " ".join(words[i : i + n])


def _alter(quote: str, vocab: list[str], rng: random.Random) -> str | None:
    words = quote.split(" ")
    spots = [i for i, w in enumerate(words) if _CORE_RE.fullmatch(w)]
    if not spots:
        return None
    i = rng.choice(spots)
    m = _CORE_RE.fullmatch(words[i])
    assert m is not None
    core = m.group(2)
    new = rng.choice(vocab)
    while new == core.lower():
        new = rng.choice(vocab)
    if core[0].isupper():
        new = new.capitalize()
    words[i] = m.group(1) + new + m.group(3)
    return " ".join(words)


def _recase(quote: str, rng: random.Random) -> str:
    kind = rng.choice(("lower", "upper", "title", "flip"))
    if kind == "lower":
        return quote.lower()
    if kind == "upper":
        return quote.upper()
    if kind == "title":
        return quote.title()
    return quote[:1].swapcase() + quote[1:]


def build_quotes(
    docs: list[Doc], corpus: Corpus, total: int, rng: random.Random
) -> tuple[list[list[Quote]], Counter[str]]:
    size = sum(len(d.data) for d in docs)
    per_doc: list[list[Quote]] = []
    rejected: Counter[str] = Counter()
    for di, doc in enumerate(docs):
        want = max(1, math.ceil(total * len(doc.data) / size))
        qs: list[Quote] = []
        while len(qs) < want:
            cls = rng.choices(CLASSES, CLASS_WEIGHTS)[0]
            if cls == ABSENT:
                text, src = rng.choice(corpus.absent_units)
                if text.encode("utf-8") in doc.data or text.lower() in doc.folded:
                    rejected[ABSENT] += 1
                    continue
                qs.append(Quote(di, ABSENT, text, None, src))
                continue
            orig = _exact_quote(doc, rng)
            assert orig.encode("utf-8") in doc.data
            if cls == EXACT:
                qs.append(Quote(di, EXACT, orig, orig))
            elif cls == ALTERED:
                alt = _alter(orig, corpus.vocab, rng)
                if alt is None or alt.encode("utf-8") in doc.data or alt.lower() in doc.folded:
                    rejected[ALTERED] += 1
                    continue
                qs.append(Quote(di, ALTERED, alt, orig))
            else:
                var = _recase(orig, rng)
                if var == orig or var.encode("utf-8") in doc.data:
                    rejected[CASE] += 1
                    continue
                qs.append(Quote(di, CASE, var, orig))
        per_doc.append(qs)
    return per_doc, rejected


# --- timing ----------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_floor(docs: list[Doc], qbytes: list[list[bytes]]) -> None:
    for doc, qs in zip(docs, qbytes, strict=True):
        find, count = doc.data.find, doc.data.count
        for qb in qs:
            find(qb)
            count(qb)


def run_single(docs: list[Doc], texts: list[list[str]], mode: str = "exact") -> list[list[Match]]:
    out = []
    for doc, qs in zip(docs, texts, strict=True):
        d = Document(doc.data)
        out.append([resolve_quote(d, q, mode=mode) for q in qs])
    return out


def _rate(n_quotes: int, scanned: int, seconds: list[float]) -> dict[str, Any]:
    best = min(seconds)
    return {
        "seconds_best": round(best, 4),
        "seconds_median": round(statistics.median(seconds), 4),
        "runs": len(seconds),
        "quotes_per_s": round(n_quotes / best),
        "mb_per_s": round(scanned / best / MB, 1),
        "us_per_quote": round(best / n_quotes * 1e6, 2),
    }


# --- correctness -----------------------------------------------------------------------------


def _occurrences(data: bytes, needle: bytes) -> list[int]:
    found = []
    i = data.find(needle)
    while i >= 0:
        found.append(i)
        i = data.find(needle, i + 1)
    return found


_STAMP_AT = re.compile(rb"\[(\d{2}):(\d{2}):(\d{2})\] ")


def check_exact(
    docs: list[Doc], quotes: list[list[Quote]], results: list[list[Match]], rng: random.Random
) -> dict[str, Any]:
    by_cls: dict[str, Counter[str]] = {c: Counter() for c in CLASSES}
    problems: list[str] = []
    span_checks = 0
    for doc, qs, ms in zip(docs, quotes, results, strict=True):
        data = doc.data
        for q, m in zip(qs, ms, strict=True):
            res, span = m.resolution, m.span
            c = by_cls[q.cls]
            c["total"] += 1
            c[res.status] += 1
            c["method_" + res.method] += 1
            if q.cls != EXACT:
                if res.status in GROUNDED:
                    problems.append(f"{q.cls} grounded: {q.text!r}")
                continue
            qb = q.text.encode("utf-8")
            hits = _occurrences(data, qb)
            ok = (
                res.status in GROUNDED
                and span is not None
                and span.start == hits[0]
                and data[span.start : span.end] == qb
                and res.match_count == len(hits)
                and (res.status == "resolved") == (len(hits) == 1)
            )
            if ok and span is not None and rng.random() < 0.05:
                # Derived fields, checked independently on a 5% sample.
                span_checks += 1
                line_start = data.rfind(b"\n", 0, span.start) + 1
                stamp = _STAMP_AT.match(data, line_start)
                ok = (
                    span.slice_sha256 == digest(qb)
                    and span.line == data.count(b"\n", 0, span.start) + 1
                    and span.column == len(data[line_start : span.start].decode("utf-8")) + 1
                    and stamp is not None
                    and span.video_timestamp == b":".join(stamp.groups()).decode()
                )
            if ok:
                c["correct"] += 1
            else:
                problems.append(f"exact wrong: {q.text!r} -> {m}")
    exact = by_cls[EXACT]
    return {
        "exact_quotes": exact["total"],
        "exact_correct": exact["correct"],
        "exact_correct_pct": round(100 * exact["correct"] / max(1, exact["total"]), 4),
        "exact_ambiguous": exact["ambiguous"],
        "derived_fields_checked": span_checks,
        "grounded_in_exact_mode": {
            c: by_cls[c]["resolved"] + by_cls[c]["ambiguous"] for c in CLASSES
        },
        "absent_grounded": by_cls[ABSENT]["resolved"] + by_cls[ABSENT]["ambiguous"],
        "normalized_hint": {c: by_cls[c]["method_normalized_hint"] for c in CLASSES},
        "problems": problems[:10],
        "problem_count": len(problems),
    }


def _overlaps(span_start: int, span_end: int, hits: list[int], length: int) -> bool:
    return any(span_start < h + length and h < span_end for h in hits)


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p / 100 * len(values)))], 1)


def _bucket(text: str) -> str:
    n = len(text.split())
    return "5-9 words" if n < 10 else "10-19 words" if n < 20 else "20+ words"


def run_fuzzy(
    docs: list[Doc], quotes: list[list[Quote]], per_class: dict[str, int], rng: random.Random
) -> dict[str, Any]:
    order = list(range(len(docs)))
    rng.shuffle(order)
    taken: Counter[str] = Counter()
    plan: list[tuple[int, list[Quote]]] = []
    for di in order:
        pick = []
        for q in quotes[di]:
            if taken[q.cls] < per_class.get(q.cls, 0):
                taken[q.cls] += 1
                pick.append(q)
        if pick:
            plan.append((di, pick))
        if all(taken[c] >= n for c, n in per_class.items()):
            break
    n = sum(len(p) for _, p in plan)
    scanned = sum(len(docs[di].data) * len(p) for di, p in plan)
    log(f"fuzzy: {n} quotes over {len(plan)} transcripts")

    def go() -> list[list[Match]]:
        out = []
        for di, pick in plan:
            d = Document(docs[di].data)
            out.append([resolve_quote(d, q.text, mode="fuzzy") for q in pick])
        return out

    seconds, results = _timed(go)
    stats: dict[str, dict[str, Any]] = {}
    for (di, pick), ms in zip(plan, results, strict=True):
        data = docs[di].data
        for q, m in zip(pick, ms, strict=True):
            s = stats.setdefault(
                q.cls, {"n": 0, "grounded": 0, "on_target": 0, "methods": Counter(), "scores": []}
            )
            s["n"] += 1
            b = s.setdefault("by_length", {}).setdefault(_bucket(q.text), Counter())
            b["n"] += 1
            s["methods"][m.resolution.method] += 1
            if m.resolution.status not in GROUNDED or m.span is None:
                continue
            s["grounded"] += 1
            b["grounded"] += 1
            if m.resolution.score is not None:
                s["scores"].append(m.resolution.score)
            if q.orig is not None:
                ob = q.orig.encode("utf-8")
                if _overlaps(m.span.start, m.span.end, _occurrences(data, ob), len(ob)):
                    s["on_target"] += 1
                    b["on_target"] += 1
    report: dict[str, Any] = {
        "threshold": DEFAULT_THRESHOLD,
        "quotes": n,
        "transcripts": len(plan),
        "seconds": round(seconds, 3),
        "quotes_per_s": round(n / seconds),
        "mb_per_s": round(scanned / seconds / MB, 1),
        "classes": {},
    }
    for cls, s in stats.items():
        entry: dict[str, Any] = {
            "n": s["n"],
            "grounded_pct": round(100 * s["grounded"] / s["n"], 2),
            "methods": dict(s["methods"]),
            "by_length": {
                k: {
                    "n": v["n"],
                    "grounded_pct": round(100 * v["grounded"] / v["n"], 2),
                    **(
                        {"on_target_pct": round(100 * v["on_target"] / v["n"], 2)}
                        if cls != ABSENT
                        else {}
                    ),
                }
                for k, v in sorted(s["by_length"].items())
            },
        }
        if cls != ABSENT:
            entry["on_target_pct"] = round(100 * s["on_target"] / s["n"], 2)
        if s["scores"]:
            entry["fuzzy_score_p5_p50_p95"] = [_pct(s["scores"], p) for p in (5, 50, 95)]
        report["classes"][cls] = entry
    # How close did absent quotes come? Their best window, whatever its score.
    nearest: list[float] = []
    for di, pick in plan:
        absent = [q.text for q in pick if q.cls == ABSENT]
        if absent:
            index = Document(docs[di].data).fuzzy_index()
            for text in absent:
                found = index.find(text, 0.0)
                nearest.append(found[2] if found else 0.0)
    if nearest:
        report["classes"][ABSENT]["nearest_window_score_p50_p99_max"] = [
            _pct(nearest, 50),
            _pct(nearest, 99),
            round(max(nearest), 1),
        ]
    alt = report["classes"].get(ALTERED, {})
    ab = report["classes"].get(ABSENT, {})
    report["targets"] = {
        "altered_on_target_pct": alt.get("on_target_pct"),
        "altered_target_met": (alt.get("on_target_pct") or 0) >= 95.0,
        "absent_grounded_pct": ab.get("grounded_pct"),
        "absent_target_met": (ab.get("grounded_pct") if ab else 100.0) <= 2.0,
    }
    return report


# --- langextract -----------------------------------------------------------------------------


def _default_langextract_python() -> Path | None:
    cand = ROOT / ".venv-bench" / "bin" / "python"
    return cand if cand.exists() else None


def run_langextract(
    python: Path | None,
    docs: list[Doc],
    quotes: list[list[Quote]],
    rng: random.Random,
    n_docs: int,
    n_quotes: int,
    budgets: dict[str, float],
) -> dict[str, Any]:
    if python is None:
        return {"measured": False, "why": "no --langextract-python given and no .venv-bench"}
    if not Path(python).exists():
        return {"measured": False, "why": f"{python} does not exist"}
    probe = subprocess.run(
        [str(python), "-c", "import langextract.resolver"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return {
            "measured": False,
            "why": f"langextract not importable by {python}: {probe.stderr.strip()[-300:]}",
        }
    doc_ids = sorted(rng.sample(range(len(docs)), min(n_docs, len(docs))))
    per_doc = max(1, n_quotes // len(doc_ids))
    subset: list[tuple[int, Quote]] = []
    for local, di in enumerate(doc_ids):
        data = docs[di].data
        chosen = rng.sample(quotes[di], min(per_doc, len(quotes[di])))
        # Model output usually lists quotes in reading order, and langextract's exact matcher
        # relies on it (it keeps one in-order chain of matches): give it that order, the most
        # favourable one. Absent quotes go to random places.
        where = {
            id(q): float(data.find(q.orig.encode("utf-8"))) if q.orig else rng.random() * len(data)
            for q in chosen
        }
        chosen.sort(key=lambda q: where[id(q)])
        subset.extend((local, q) for q in chosen)
    texts = [docs[di].data.decode("utf-8") for di in doc_ids]
    first_doc = [k for k, (local, _) in enumerate(subset) if local == 0]
    plan = [
        ("batched_fuzzy_off", True, False, list(range(len(subset))), 1e9),
        ("batched_fuzzy_on", True, True, list(range(len(subset))), budgets["fuzzy_on"]),
        ("per_quote_fuzzy_off", False, False, first_doc, budgets["per_quote"]),
    ]
    runs = [
        {
            "name": name,
            "batched": batched,
            "fuzzy": fuzzy,
            "budget_s": budget,
            "quotes": [[subset[k][0], subset[k][1].text] for k in idx],
        }
        for name, batched, fuzzy, idx, budget in plan
    ]
    with tempfile.TemporaryDirectory(prefix="arkai-bench-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"docs": texts, "runs": runs}), encoding="utf-8")
        helper = Path(__file__).resolve().parent / "_langextract_align.py"
        log(f"langextract: {len(subset)} quotes over {len(texts)} transcripts via {python}")
        # Its stdout goes to our stderr: stdout carries nothing but the JSON report.
        proc = subprocess.run(
            [str(python), str(helper), str(src), str(dst)], text=True, stdout=sys.stderr
        )
        if proc.returncode != 0 or not dst.exists():
            return {"measured": False, "why": f"helper exited {proc.returncode}"}
        out = json.loads(dst.read_text(encoding="utf-8"))

    def on_target(local: int, q: Quote, cs: int, ce: int, in_chars: bool) -> bool:
        data = docs[doc_ids[local]].data
        if in_chars:
            text = texts[local]
            cs, ce = len(text[:cs].encode("utf-8")), len(text[:ce].encode("utf-8"))
        assert q.orig is not None
        ob = q.orig.encode("utf-8")
        return _overlaps(cs, ce, _occurrences(data, ob), len(ob))

    def rates(
        pairs: list[tuple[int, Quote, bool, int | None, int | None]], in_chars: bool
    ) -> dict[str, Any]:
        n: Counter[str] = Counter()
        g: Counter[str] = Counter()
        on: Counter[str] = Counter()
        for local, q, grounded, cs, ce in pairs:
            n[q.cls] += 1
            if not grounded:
                continue
            g[q.cls] += 1
            if q.orig is not None and cs is not None and ce is not None:
                on[q.cls] += on_target(local, q, cs, ce, in_chars)
        entry: dict[str, Any] = {}
        for c in CLASSES:
            if n[c]:
                entry[f"{c}_grounded_pct"] = round(100 * g[c] / n[c], 2)
                if c != ABSENT:
                    entry[f"{c}_on_target_pct"] = round(100 * on[c] / n[c], 2)
        return entry

    report: dict[str, Any] = {
        "measured": True,
        "version": out.get("version"),
        "python": out.get("python"),
        "api": "langextract.resolver.Resolver().align(extractions, text, token_offset=0, "
        "char_offset=0, enable_fuzzy_alignment=...) (WordAligner underneath), with its default "
        "accept_match_lesser=True; batched = one call per transcript with all its quotes",
        "subset": {
            "quotes": len(subset),
            "transcripts": len(doc_ids),
            "mb": round(sum(len(docs[di].data) for di in doc_ids) / MB, 2),
            "classes": dict(Counter(q.cls for _, q in subset)),
            "order": "each transcript's quotes in reading order (absent ones at random places)",
        },
        "runs": {},
    }
    for (name, _, _, idx, _), run in zip(plan, out["runs"], strict=True):
        pairs = []
        statuses: Counter[str] = Counter()
        for k, r in zip(idx, run["results"], strict=True):
            if r is None:
                continue
            local, q = subset[k]
            status, cs, ce = r
            statuses[f"{q.cls}:{status}"] += 1
            pairs.append((local, q, status is not None, cs, ce))
        seconds = run["seconds"]
        report["runs"][name] = {
            "quotes_attempted": run["attempted"],
            "stopped_by_budget": run["stopped_by_budget"],
            "seconds": round(seconds, 3),
            "quotes_per_s": round(run["attempted"] / seconds, 2) if seconds else None,
            **rates(pairs, in_chars=True),
            "statuses": dict(sorted(statuses.items())),
        }

    # arkai on exactly the same quotes, in the same order, fresh Documents.
    by_local: dict[int, list[str]] = {}
    for local, q in subset:
        by_local.setdefault(local, []).append(q.text)

    def arkai(mode: str) -> tuple[float, list[Match]]:
        def go() -> list[Match]:
            res: list[Match] = []
            for local, texts_ in by_local.items():
                d = Document(docs[doc_ids[local]].data)
                res.extend(resolve_quote(d, t, mode=mode) for t in texts_)
            return res

        return _timed(go)

    ark: dict[str, Any] = {}
    for mode in ("exact", "fuzzy"):
        seconds, results = min((arkai(mode) for _ in range(3)), key=lambda r: r[0])
        pairs = [
            (
                local,
                q,
                m.resolution.status in GROUNDED,
                m.span.start if m.span else None,
                m.span.end if m.span else None,
            )
            for (local, q), m in zip(subset, results, strict=True)
        ]
        ark[f"{mode}_resolve_quote"] = {
            "seconds": round(seconds, 4),
            "quotes_per_s": round(len(subset) / seconds),
            **rates(pairs, in_chars=False),
        }
    report["arkai_same_quotes"] = ark
    for lx_run, mode in (("batched_fuzzy_off", "exact"), ("batched_fuzzy_on", "fuzzy")):
        lx_qps = report["runs"][lx_run]["quotes_per_s"]
        if not lx_qps:
            continue
        report[f"speedup_arkai_{mode}_resolve_quote_vs_{lx_run}"] = round(
            ark[f"{mode}_resolve_quote"]["quotes_per_s"] / lx_qps, 1
        )
    sp = report.get("speedup_arkai_exact_resolve_quote_vs_batched_fuzzy_off")
    report["speedup_target_200x_met"] = sp is not None and sp >= 200
    return report


# --- main ------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                info["cpu"] = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import rapidfuzz

        info["rapidfuzz"] = rapidfuzz.__version__
    except ImportError:  # pragma: no cover
        pass
    return info


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="~5 MB / 10,000 quotes smoke run")
    ap.add_argument("--langextract-python", type=Path, default=None)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "transcripts")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)

    quick = bool(args.quick)
    target_mb = 5 if quick else 50
    target_quotes = 10_000 if quick else 100_000
    reps = 2 if quick else 3
    fuzzy_sample = (
        {ALTERED: 500, ABSENT: 500, CASE: 200, EXACT: 200}
        if quick
        else {ALTERED: 2000, ABSENT: 2000, CASE: 500, EXACT: 500}
    )
    t_start = time.perf_counter()
    rng = random.Random(args.seed)

    log(f"reading transcripts from {args.data}")
    corpus = load_corpus(args.data, rng)
    log(f"{len(corpus.train_units)} units, {len(corpus.absent_units)} absent sentences")
    docs = build_docs(corpus, target_mb * MB, rng)
    total_bytes = sum(len(d.data) for d in docs)
    log(f"{len(docs)} transcripts, {total_bytes / MB:.1f} MB")
    quotes, rejected = build_quotes(docs, corpus, target_quotes, rng)
    n_quotes = sum(len(qs) for qs in quotes)
    counts = Counter(q.cls for qs in quotes for q in qs)
    log(f"{n_quotes} quotes: {dict(counts)}")
    texts = [[q.text for q in qs] for qs in quotes]
    qbytes = [[t.encode("utf-8") for t in ts] for ts in texts]
    scanned = sum(len(d.data) * len(qs) for d, qs in zip(docs, quotes, strict=True))

    floor_s: list[float] = []
    single_s: list[float] = []
    single_res: list[list[Match]] = []
    for rep in range(reps):
        log(f"timing round {rep + 1}/{reps}")
        dt, _ = _timed(lambda: run_floor(docs, qbytes))
        floor_s.append(dt)
        dt, res = _timed(lambda: run_single(docs, texts))
        single_s.append(dt)
        if rep == 0:
            single_res = res
        del res
        log(f"  floor {floor_s[-1]:.2f}s, single {single_s[-1]:.2f}s")

    floor = _rate(n_quotes, scanned, floor_s)
    floor["what"] = "bytes.find + bytes.count per quote over its transcript (quotes pre-encoded)"
    single = _rate(n_quotes, scanned, single_s)
    single["what"] = "resolve_quote(doc, quote) in exact mode, fresh Document per transcript"

    log("checking exact-mode results")
    correctness = check_exact(docs, quotes, single_res, random.Random(args.seed + 1))
    del single_res

    log("fuzzy mode")
    fuzzy = run_fuzzy(docs, quotes, fuzzy_sample, random.Random(args.seed + 2))

    le_python = args.langextract_python or _default_langextract_python()
    lx = run_langextract(
        le_python,
        docs,
        quotes,
        random.Random(args.seed + 3),
        n_docs=3 if quick else 12,
        n_quotes=150 if quick else 2000,
        budgets={"fuzzy_on": 3.0 if quick else 60.0, "per_quote": 2.0 if quick else 30.0},
    )

    ratio = min(single_s) / min(floor_s)
    report = {
        "mode": "quick" if quick else "full",
        "seed": args.seed,
        "data": {
            "mb": round(total_bytes / MB, 2),
            "transcripts": len(docs),
            "transcript_kb_min_max": [
                round(min(len(d.data) for d in docs) / 1000, 1),
                round(max(len(d.data) for d in docs) / 1000, 1),
            ],
            "quotes": dict(counts),
            "quotes_total": n_quotes,
            "mb_scanned_per_pass": round(scanned / MB, 1),
            "rejected_while_sampling": dict(rejected),
            "sources": corpus.sources,
            "absent_pool": len(corpus.absent_units),
        },
        "floor": floor,
        "arkai_exact": single,
        "ratio_to_floor": round(ratio, 3),
        "ratio_target_1_5_met": ratio <= 1.5,
        "exact_correctness": correctness,
        "fuzzy": fuzzy,
        "langextract": lx,
        "machine": machine(),
        "wall_seconds": round(time.perf_counter() - t_start, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
