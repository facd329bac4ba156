"""Extraction quality on the labelled development sets in ``bench/data``. Prints one JSON object.

    python bench/quality.py [--provider builtin] [--json] [--skip-entities] [--data ../shared/data]

Claims: every talk of ``claims_devset_talks.json`` is rebuilt from the shared source with arkai's
own parser (its ``transcript.md`` bytes must hash as recorded), the labelled stretch (its whole
lines) goes through the provider's ``extract_claims`` exactly as ``arkai extract`` sends it, and
each quote is resolved to bytes. Scoring (see ``bench/data/claims_rubric.md``):

* a quote is *worth citing* when more of its bytes lie in ``claim`` rows than in ``filler`` rows
  (bytes between rows — timestamps, speaker labels, spaces — count for neither); a quote that
  overlaps no row (outside the stretch) or does not resolve is reported, not scored;
* precision = worth-citing quotes / scored quotes;
* recall = ``claim`` rows *found* / ``claim`` rows, a row being found when some quote overlaps at
  least half of the shorter of the two (so a quote inside a long spoken thought finds it, and a
  long quote finds each sentence it mostly covers);
* claims/min = quotes / minutes of the stretch.

Entities: every mention of ``entities_devset.jsonl`` names a byte range of a document and its
gold type. The provider's ``extract_entities`` runs on each whole document; a mention's
predicted type is that of the extracted entity whose resolved mention overlaps it (else whose
name or alias equals its text, case-insensitively). Type accuracy = right types / gold
mentions; coverage = mentions given any type.

Nothing is written into the repository; the provider's responses are not cached.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
SHARED = ROOT.parent / "shared" / "data"
LABELS = ("claim", "filler")
ENTITY_TYPES = ("person", "org", "product", "location", "event", "concept", "none")
_STAMP = re.compile(rb"^\[(\d\d):(\d\d):(\d\d)\] ", re.M)


class DevsetError(Exception):
    """A development-set file is malformed or does not match the shared data."""


@dataclass(frozen=True)
class Row:
    talk: str
    start: int
    end: int
    label: str


@dataclass(frozen=True)
class Talk:
    name: str
    source: Path
    kind: str
    transcript: bytes
    start: int
    end: int
    rows: tuple[Row, ...]

    def stretch(self) -> tuple[int, int]:
        """Byte range of the whole lines holding the labelled stretch."""
        first = self.transcript.rfind(b"\n", 0, self.start) + 1
        last = self.transcript.find(b"\n", self.end)
        return first, len(self.transcript) if last < 0 else last + 1


def render(source: Path) -> bytes:
    """The ``transcript.md`` bytes arkai writes for the source file ``source``."""
    from arkai.formats import parse_source, render_transcript

    return render_transcript(parse_source(source.name, source.read_bytes())).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DevsetError(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise DevsetError(f"{path}:{n}: expected an object")
        rows.append(value)
    return rows


def _checked_span(path: Path, n: int, row: Mapping[str, Any], data: bytes) -> tuple[int, int]:
    start, end = row.get("start_byte"), row.get("end_byte")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(data)):
        raise DevsetError(f"{path}:{n}: bad byte range {start!r}..{end!r}")
    if sha256(data[start:end]) != row.get("sha256"):
        raise DevsetError(f"{path}:{n}: sha256 of bytes {start}..{end} does not match")
    return start, end


def load_claims(data: Path = DATA, shared: Path = SHARED) -> list[Talk]:
    """The claims development set, checked against the transcripts rebuilt from ``shared``."""
    talks_path, rows_path = data / "claims_devset_talks.json", data / "claims_devset.jsonl"
    meta = json.loads(talks_path.read_text(encoding="utf-8"))
    by_talk: dict[str, list[Row]] = {name: [] for name in meta}
    texts: dict[str, bytes] = {}
    for name, info in meta.items():
        source = shared / info["source"]
        text = render(source)
        if sha256(text) != info["transcript_sha256"]:
            raise DevsetError(
                f"{talks_path}: talk {name}: transcript.md rebuilt from {source} has changed "
                "(sha256 differs); relabel or pin the source"
            )
        texts[name] = text
    for n, row in enumerate(_jsonl(rows_path), 1):
        talk = row.get("talk")
        if talk not in texts:
            raise DevsetError(f"{rows_path}:{n}: unknown talk {talk!r}")
        if row.get("label") not in LABELS:
            raise DevsetError(f"{rows_path}:{n}: label {row.get('label')!r} is not one of {LABELS}")
        start, end = _checked_span(rows_path, n, row, texts[talk])
        by_talk[talk].append(Row(talk, start, end, row["label"]))
    out = []
    for name, info in meta.items():
        rows = tuple(sorted(by_talk[name], key=lambda r: r.start))
        for a, b in itertools.pairwise(rows):
            if b.start < a.end:
                raise DevsetError(
                    f"{rows_path}: talk {name}: rows at {a.start} and {b.start} overlap"
                )
        if not rows or (rows[0].start, rows[-1].end) != (info["start_byte"], info["end_byte"]):
            raise DevsetError(f"{talks_path}: talk {name}: stretch does not match its rows")
        out.append(
            Talk(
                name,
                shared / info["source"],
                info["kind"],
                texts[name],
                info["start_byte"],
                info["end_byte"],
                rows,
            )
        )
    return out


def gaps(talk: Talk) -> list[bytes]:
    """The bytes between consecutive rows (a contiguous labelling leaves only line prefixes)."""
    return [talk.transcript[a.end : b.start] for a, b in itertools.pairwise(talk.rows)]


# --- scoring --------------------------------------------------------------------------------


def _overlap(a: int, b: int, c: int, d: int) -> int:
    return max(0, min(b, d) - max(a, c))


def score_claims(rows: Sequence[Row], spans: Iterable[tuple[int, int]]) -> dict[str, Any]:
    """Precision and recall of quote ``spans`` against labelled ``rows`` (the module doc's rule)."""
    spans = list(spans)
    worth = scored = outside = 0
    found: set[int] = set()
    for s, e in spans:
        claim = filler = 0
        for i, row in enumerate(rows):
            o = _overlap(s, e, row.start, row.end)
            if not o:
                continue
            if row.label == "claim":
                claim += o
                if 2 * o >= min(e - s, row.end - row.start):
                    found.add(i)
            else:
                filler += o
        if claim + filler == 0:
            outside += 1
            continue
        scored += 1
        worth += claim > filler
    claim_rows = sum(1 for r in rows if r.label == "claim")
    return {
        "quotes": len(spans),
        "scored": scored,
        "worth_citing": worth,
        "outside": outside,
        "precision": round(worth / scored, 4) if scored else None,
        "claim_rows": claim_rows,
        "found": len(found),
        "recall": round(len(found) / claim_rows, 4) if claim_rows else None,
    }


def minutes(text: bytes, start: int, end: int) -> float:
    """Minutes from the first line's time in ``text[start:end]`` to the next line's (or the last's
    plus its share of a 30 s line when the stretch runs to the end)."""
    stamps = [
        (m.start(), int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])) for m in _STAMP.finditer(text)
    ]
    inside = [t for pos, t in stamps if start <= pos < end]
    after = [t for pos, t in stamps if pos >= end]
    if not inside:
        return 0.0
    stop = after[0] if after else inside[-1] + 15
    return max(stop - inside[0], 1) / 60


# --- entities -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    doc: str
    start: int
    end: int
    type: str
    also: tuple[str, ...] = ()

    def accepts(self, etype: str | None) -> bool:
        wanted = {self.type, *self.also}
        return (etype or "none") in wanted


def render_documents(specs: Mapping[str, tuple[str, str | None]], shared: Path) -> dict[str, bytes]:
    """``transcript.md`` of each document (``source`` under ``shared`` and, for an export holding
    several conversations, its ``title``), made by ``arkai add`` into a scratch knowledge repo."""
    from arkai.adapters.params import load_params
    from arkai.ops.add import add_inputs
    from arkai.ops.init import init_repo
    from arkai.sources.base import AddOptions

    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kr"
        init_repo(root, git=False)
        opts = AddOptions(params=load_params(root), now="2026-01-01T00:00:00Z")
        sources = sorted({source for source, _ in specs.values()})
        results = add_inputs(root, [(str(shared / s), []) for s in sources], opts)
        items: dict[tuple[str, str | None], Path] = {}
        for res in results:
            if res.path is None:
                continue
            source = str(Path(res.source).resolve().relative_to(shared.resolve()))
            items[(source, res.title)] = items[(source, None)] = root / res.path
        for doc, (source, title) in specs.items():
            folder = items.get((source, title))
            if folder is None:
                raise DevsetError(f"entities dev set: document {doc}: {source} {title!r} not added")
            out[doc] = (folder / "transcript.md").read_bytes()
    return out


def load_entities(
    data: Path = DATA, shared: Path = SHARED
) -> tuple[dict[str, bytes], list[Mention]]:
    """The entity development set: each document's text and the labelled mentions in it."""
    docs_path, rows_path = data / "entities_devset_docs.json", data / "entities_devset.jsonl"
    meta = json.loads(docs_path.read_text(encoding="utf-8"))
    specs = {doc: (info["source"], info.get("title")) for doc, info in meta.items()}
    texts = render_documents(specs, shared)
    for doc, info in meta.items():
        if sha256(texts[doc]) != info["transcript_sha256"]:
            raise DevsetError(f"{docs_path}: document {doc}: transcript.md has changed")
    mentions = []
    for n, row in enumerate(_jsonl(rows_path), 1):
        doc = row.get("doc")
        if doc not in texts:
            raise DevsetError(f"{rows_path}:{n}: unknown document {doc!r}")
        types = [row.get("type"), *row.get("also", [])]
        if any(t not in ENTITY_TYPES for t in types):
            raise DevsetError(f"{rows_path}:{n}: type {types!r} not among {ENTITY_TYPES}")
        start, end = _checked_span(rows_path, n, row, texts[doc])
        mentions.append(Mention(doc, start, end, row["type"], tuple(row.get("also", []))))
    return texts, mentions


def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[\w'’.-]+", text)}


def predicted_types(
    text: bytes, entities: Sequence[Mapping[str, Any]], mentions: Sequence[Mention]
) -> list[str | None]:
    """Each gold mention's predicted type: the entity whose resolved mention overlaps it and
    shares a word with it, else the entity named (or aliased) exactly as it, else None."""
    from arkai.core.document import Document
    from arkai.core.resolve import resolve_quote

    doc = Document(text)
    spans: list[tuple[int, int, str, set[str]]] = []
    by_name: dict[str, str] = {}
    for ent in entities:
        etype = str(ent.get("type"))
        names = [str(ent.get("name", "")), *(str(a) for a in ent.get("aliases") or [])]
        for name in names:
            by_name.setdefault(name.casefold(), etype)
        words = set().union(*(_words(n) for n in names))
        for m in ent.get("mentions") or []:
            match = resolve_quote(doc, str(m.get("quote", "")))
            if match.span is not None:
                spans.append((match.span.start, match.span.end, etype, words))
    out: list[str | None] = []
    for m in mentions:
        surface = text[m.start : m.end].decode("utf-8")
        hit = next(
            (t for s, e, t, w in spans if _overlap(s, e, m.start, m.end) and w & _words(surface)),
            None,
        )
        out.append(hit or by_name.get(surface.casefold()))
    return out


def entities_report(
    runner: Any, params: Mapping[str, Any], data: Path = DATA, shared: Path = SHARED
) -> dict[str, Any]:
    texts, mentions = load_entities(data, shared)
    per: dict[str, Any] = {}
    right = typed = named = named_right = 0
    confusion: dict[str, int] = {}
    for doc, text in texts.items():
        gold = [m for m in mentions if m.doc == doc]
        value = run_pattern(runner, params, "extract_entities", text.decode("utf-8"))
        got = predicted_types(text, (value or {}).get("entities", []), gold)
        ok = sum(1 for m, t in zip(gold, got, strict=True) if m.accepts(t))
        per[doc] = {"mentions": len(gold), "type_accuracy": round(ok / len(gold), 4)}
        right += ok
        for m, t in zip(gold, got, strict=True):
            typed += t is not None
            if m.type != "none":
                named += 1
                named_right += m.accepts(t)
            if not m.accepts(t):
                key = f"{m.type}->{t or 'none'}"
                confusion[key] = confusion.get(key, 0) + 1
    return {
        "mentions": len(mentions),
        "type_accuracy": round(right / len(mentions), 4) if mentions else None,
        "type_accuracy_entities_only": round(named_right / named, 4) if named else None,
        "typed": typed,
        "errors": dict(sorted(confusion.items(), key=lambda kv: (-kv[1], kv[0]))),
        "documents": per,
    }


# --- running a provider ---------------------------------------------------------------------


def _runner(provider_name: str, cache: Path) -> tuple[Any, dict[str, Any]]:
    from arkai.adapters.params import load_params
    from arkai.providers.registry import get_provider
    from arkai.providers.runner import ResponseStore, Runner

    params = load_params(ROOT)
    config = (params.get("providers") or {}).get(provider_name) or {}
    runner = Runner(get_provider(provider_name, config), ResponseStore(cache), refresh=True)
    return runner, params


def run_pattern(runner: Any, params: Mapping[str, Any], pattern: str, text: str) -> Any:
    from arkai.patterns.load import get_pattern

    xp = params["extract"]
    variables = {k: str(v) for k, v in (xp.get("variables") or {}).items()}
    options = {"variables": variables, "content_type": "transcripts"}
    return runner.run(get_pattern(pattern, None), text, options).value


def claim_spans(
    runner: Any, params: Mapping[str, Any], talk: Talk
) -> tuple[list[tuple[int, int]], int]:
    """Resolved quote spans (transcript offsets) of the stretch's claims; unresolved count."""
    from arkai.core.document import Document
    from arkai.core.resolve import resolve_quote

    first, last = talk.stretch()
    piece = talk.transcript[first:last]
    doc = Document(piece)
    value = run_pattern(runner, params, "extract_claims", piece.decode("utf-8"))
    spans, unresolved = [], 0
    for claim in value if isinstance(value, list) else []:
        match = resolve_quote(doc, str(claim.get("quote", "")))
        if match.span is None:
            unresolved += 1
        else:
            spans.append((first + match.span.start, first + match.span.end))
    return spans, unresolved


def claims_report(runner: Any, params: Mapping[str, Any], talks: Sequence[Talk]) -> dict[str, Any]:
    per: dict[str, Any] = {}
    tot = {"quotes": 0, "scored": 0, "worth_citing": 0, "claim_rows": 0, "found": 0, "minutes": 0.0}
    for talk in talks:
        t0 = time.perf_counter()
        spans, unresolved = claim_spans(runner, params, talk)
        seconds = time.perf_counter() - t0
        mins = minutes(talk.transcript, *talk.stretch())
        got = score_claims(talk.rows, spans)
        per[talk.name] = {
            "kind": talk.kind,
            "rows": len(talk.rows),
            "minutes": round(mins, 2),
            **got,
            "unresolved": unresolved,
            "claims_per_min": round(len(spans) / mins, 2) if mins else None,
            "seconds": round(seconds, 3),
        }
        for k in ("quotes", "scored", "worth_citing", "claim_rows", "found"):
            tot[k] += got[k]
        tot["minutes"] += mins
    overall = {
        "precision": round(tot["worth_citing"] / tot["scored"], 4) if tot["scored"] else None,
        "recall": round(tot["found"] / tot["claim_rows"], 4) if tot["claim_rows"] else None,
        "min_precision": min((v["precision"] or 0.0) for v in per.values()) if per else None,
        "claims_per_min": round(tot["quotes"] / tot["minutes"], 2) if tot["minutes"] else None,
        **{k: tot[k] for k in ("quotes", "scored", "worth_citing", "claim_rows", "found")},
    }
    return {"talks": per, "overall": overall}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--provider", default="builtin", help="provider name (default: builtin)")
    ap.add_argument("--json", action="store_true", help="compact one-line JSON")
    ap.add_argument("--skip-entities", action="store_true", help="claims only (no spaCy)")
    ap.add_argument("--data", type=Path, default=SHARED, help="the shared data folder")
    args = ap.parse_args(argv)
    import arkai

    with tempfile.TemporaryDirectory() as tmp:
        runner, params = _runner(args.provider, Path(tmp))
        talks = load_claims(DATA, args.data)
        report: dict[str, Any] = {
            "provider": args.provider,
            "arkai": str(Path(arkai.__file__).resolve().parent),
            "claims": claims_report(runner, params, talks),
        }
        if not args.skip_entities:
            report["entities"] = entities_report(runner, params, DATA, args.data)
    print(json.dumps(report, indent=None if args.json else 2, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
