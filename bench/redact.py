"""Redaction benchmark: planted secrets found, false positives on real text, throughput.

Usage::

    .venv/bin/python bench/redact.py [--data DIR] [--repeat N]

Prints one JSON object on stdout and writes nothing.

* ``planted`` — every value of ``tests/redact_corpus.py`` (≥ 100 values, ≥ 25 kinds), each in a
  sentence; found = its kind reported and no needle left in the output.
* ``false_positives`` — every file under ``DIR/chat_exports`` and ``DIR/articles`` (default
  ``../shared/data``): text that holds no planted secret, so each redaction is counted as a false
  positive, with its kind and the redacted text's first characters (to judge it: a real address
  in an article would be a true find). Lines and whitespace-separated tokens scanned are given.
* ``throughput`` — MB of that text redacted per second (best of ``--repeat`` runs).
* ``code`` — the same count over the Python source of installed dependencies (click, PyYAML,
  rich, requests, urllib3, dvc, pygit2): code, hashes and version strings should survive.
* ``hostile`` — MB/s on inputs built to make regular expressions backtrack (long digit runs
  after ``+``/``00``, dotted names before ``@``, endless key bodies, ``scheme://a…:`` runs);
  the slowest is what matters: linear-time rules keep it near the others.
* ``chat_add`` — the shared chat exports parsed into items as ``arkai add`` does, with redaction
  on and off (MB of export per second; each message, title and ``source.json`` string).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import copy  # noqa: E402

from arkai.adapters.params import DEFAULTS  # noqa: E402
from arkai.core.redact import ALL_KINDS, _detect, _View, redact  # noqa: E402
from arkai.sources.base import AddOptions  # noqa: E402
from arkai.sources.chats import parse_chat_export  # noqa: E402
from tests.redact_corpus import KINDS, PLANTED, needles  # noqa: E402


def planted() -> dict[str, object]:
    missed = []
    for kind, value, needle in PLANTED:
        clean, counts = redact(f"For the record: {value} (do not share).")
        if kind not in counts or any(n in clean for n in needles(value, needle)):
            missed.append(kind)
    return {"found": len(PLANTED) - len(missed), "of": len(PLANTED), "kinds": len(KINDS),
            "missed_kinds": sorted(set(missed))}  # fmt: skip


def false_positives(files: list[Path]) -> dict[str, object]:
    by_kind: dict[str, int] = {}
    samples: list[dict[str, str]] = []
    lines = tokens = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines += text.count("\n") + 1
        tokens += len(text.split())
        view = _View(text)
        for start, end, _, kind in _detect(view.text, frozenset(ALL_KINDS)):
            by_kind[kind] = by_kind.get(kind, 0) + 1
            shown = view.text[start:end]
            samples.append({"kind": kind, "file": path.name[:40], "text": shown[:12] + "…"})
    return {"found": sum(by_kind.values()), "lines": lines, "tokens": tokens,
            "by_kind": dict(sorted(by_kind.items())), "samples": samples[:40]}  # fmt: skip


def throughput(files: list[Path], repeat: int) -> dict[str, float]:
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    size = sum(len(t.encode("utf-8")) for t in texts)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for text in texts:
            redact(text)
        best = min(best, time.perf_counter() - t0)
    return {"mb": round(size / 1e6, 3), "seconds": round(best, 4),
            "mb_per_s": round(size / 1e6 / best, 2)}  # fmt: skip


CODE_PACKAGES = ("click", "yaml", "rich", "requests", "urllib3", "dvc", "pygit2")


def code_files() -> list[Path]:
    import importlib.util

    files: list[Path] = []
    for name in CODE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            files.extend(sorted(Path(spec.origin).parent.rglob("*.py")))
    return files


HOSTILE = {
    "plus_digits": ("+" + "1" * 40 + " ") * 5000,
    "zero_zero_digits": (" 00" + "1" * 40 + " ") * 5000,
    "dotted_before_at": "a." * 100_000 + "@",
    "key_body": "-----BEGIN RSA " + "PRIVATE KEY-----" + " a" * 100_000,
    "url_userinfo": ("s://" + "a" * 200 + ":") * 1000,
    "assignments": ("password=" + "x" * 300 + " ") * 1000,
    "digit_groups": "1 " * 100_000,
}


def hostile() -> dict[str, float]:
    out: dict[str, float] = {}
    for name, text in HOSTILE.items():
        t0 = time.perf_counter()
        redact(text)
        out[f"{name}_mb_per_s"] = round(len(text) / 1e6 / (time.perf_counter() - t0), 2)
    return out


def chat_add(exports: list[Path], repeat: int) -> dict[str, float]:
    blobs = [(p.name, p.read_bytes()) for p in exports]
    size = sum(len(b) for _, b in blobs)
    out: dict[str, float] = {"mb": round(size / 1e6, 3)}
    for label, on in (("redact_on", True), ("redact_off", False)):
        opts = AddOptions(params=copy.deepcopy(DEFAULTS), now="2026-01-01T00:00:00Z", redact=on)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            for name, blob in blobs:
                parse_chat_export(name, blob, opts)
            best = min(best, time.perf_counter() - t0)
        out[f"{label}_mb_per_s"] = round(size / 1e6 / best, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = sorted(
        p
        for sub in ("chat_exports", "articles")
        for p in (args.data / sub).rglob("*")
        if p.is_file() and not p.is_symlink()
    )
    report = {
        "planted": planted(),
        "false_positives": false_positives(files),
        "throughput": throughput(files, args.repeat),
        "chat_add": chat_add(
            [
                p
                for p in files
                if "chat_exports" in p.parts
                and p.name.endswith(".json")
                and not p.name.endswith(".expected.json")
            ],
            args.repeat,
        ),
        "code": {k: v for k, v in false_positives(code_files()).items() if k != "lines"},
        "hostile": hostile(),
        "files": len(files),
        "detector_kinds": len(ALL_KINDS),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
