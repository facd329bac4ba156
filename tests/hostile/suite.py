"""The hostile suite's engine: run a case (a hostile input, a fault, an attack) through the real
CLI in a fresh knowledge repo and classify what happened.

Outcomes (one per case):

- ``ok`` — exit 0 (the input was usable, or the fault was recovered from);
- ``clean_error`` — a non-zero exit with one ``arkai: error: …`` (or click ``Error: …``) line
  that names the case's file when it has one;
- ``unexpected`` — ``arkai: unexpected error``, a traceback, an exit code outside the
  contract, or an error that does not name the file.

And two checks across every case, whatever its outcome:

- ``lost`` — a file a person wrote (anything under ``library/``, ``params.yaml``, ``patterns/``)
  that was there before is gone or changed; after a failed command also any earlier
  ``evidence.jsonl``;
- ``wrong`` — a stored span (``evidence.jsonl``) whose bytes in ``transcript.md`` are not
  its quote, or a ``resolved``/``ambiguous`` line without a span.

:func:`run_all` gives the counts that ``bench/hostile.py`` prints and the README reports.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from arkai.adapters import interrupt
from arkai.cli import main
from arkai.core.hashing import digest
from arkai.ops.init import init_repo

EXIT_CODES = frozenset({0, 1, 2, 3, 4, 5, 130})
PEOPLE = ("library", "params.yaml", "patterns")


@dataclass(frozen=True)
class Ctx:
    """What a case's setup gets: the repo, a scratch folder outside it, and shared servers."""

    repo: Path
    scratch: Path
    servers: dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One hostile input: ``setup`` prepares the repo and returns the arkai arguments (after
    ``--repo``); ``names`` must appear in a clean error; ``prepare`` runs before the
    snapshot (an earlier good extraction, say)."""

    name: str
    kind: str
    setup: Callable[[Ctx], list[str]]
    names: str | None = None
    prepare: Callable[[Ctx], None] | None = None
    run: Callable[[Ctx, list[str]], tuple[int, str]] | None = None
    """How to run it (default: the CLI in-process); returns ``(exit code, stderr)``."""


@dataclass
class Result:
    case: str
    kind: str
    outcome: str
    lost: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    code: int = 0
    message: str = ""

    @property
    def bad(self) -> bool:
        return self.outcome == "unexpected" or bool(self.lost) or bool(self.wrong)


def run_cli(ctx: Ctx, args: list[str]) -> tuple[int, str]:
    """The CLI in-process: the exit code and what it said (stderr, then stdout)."""
    out, err = io.StringIO(), io.StringIO()
    stdin, sys.stdin = sys.stdin, io.StringIO("")  # as with `< /dev/null`
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--repo", str(ctx.repo), *args])
        except BaseException:  # main must never raise; if it does, that is the finding
            traceback.print_exc()
            code = -1
        finally:
            sys.stdin = stdin
    interrupt.clear_stop()
    return code, err.getvalue() + "\n" + out.getvalue()


def snapshot(repo: Path, *, generated: bool) -> dict[str, bytes]:
    """People's files (and, with ``generated``, earlier evidence) by relative path."""
    files: dict[str, bytes] = {}
    roots = [repo / p for p in PEOPLE]
    if generated:
        roots += sorted((repo / "extracted").rglob("evidence.jsonl"))
    for top in roots:
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            if path.is_file() and not path.is_symlink():
                files[str(path.relative_to(repo))] = path.read_bytes()
    return files


def lost_files(before: dict[str, bytes], repo: Path) -> list[str]:
    lost = []
    for rel, data in before.items():
        path = repo / rel
        try:
            now = path.read_bytes()
        except OSError:
            lost.append(f"{rel}: gone")
            continue
        if now != data:
            lost.append(f"{rel}: changed")
    return lost


def wrong_groundings(repo: Path) -> list[str]:
    """Every stored span checked against the bytes of its item's transcript — for items whose
    ``extraction.json`` says it was made from the transcript as it is now (a transcript
    changed afterwards makes stale evidence, which is validate's finding, not a wrong one)."""
    transcripts: dict[str, bytes] = {}
    for meta in (repo / "library").rglob("metadata.json"):
        with contextlib.suppress(Exception):  # a broken metadata.json is some case's point
            cid = json.loads(meta.read_text(encoding="utf-8"))["id"]
            t = meta.parent / "transcript.md"
            if t.is_file() and not t.is_symlink():
                transcripts[cid] = t.read_bytes()
    wrong = []
    for marker in sorted((repo / "extracted").rglob("extraction.json")):
        with contextlib.suppress(Exception):
            made = json.loads(marker.read_text(encoding="utf-8"))
            cid = made["content_id"]
            if cid in transcripts and made.get("transcript_digest") != digest(transcripts[cid]):
                del transcripts[cid]
    for path in sorted((repo / "extracted").rglob("evidence.jsonl")):
        for n, row in enumerate(path.read_bytes().splitlines(), 1):
            try:
                line = json.loads(row)
                span, status = line.get("span"), line.get("status")
            except (ValueError, AttributeError):
                continue  # a torn file is validate's finding, not a wrong grounding
            where = f"{path.relative_to(repo)}:{n}"
            if status in ("resolved", "ambiguous") and not span:
                wrong.append(f"{where}: {status} without a span")
            if not span or line.get("content_id") not in transcripts:
                continue
            start, end = span["utf8_byte_offset"]
            if transcripts[line["content_id"]][start:end] != str(line["quote"]).encode():
                wrong.append(f"{where}: span bytes are not the quote")
    return wrong


def classify(code: int, err: str, names: str | None) -> tuple[str, str]:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if "unexpected error" in err or "Traceback" in err or code not in EXIT_CODES:
        return "unexpected", last
    if code == 0:
        return "ok", last
    said = [ln for ln in lines if ln.startswith(("arkai: error:", "Error:", "arkai: interrupted"))]
    if not said:
        return "unexpected", last or f"exit {code} without a message"
    if names is not None and not any(names in ln for ln in lines):
        return "unexpected", f"error does not name {names!r}: {said[-1]}"
    return "clean_error", said[-1]


_TEMPLATES: dict[tuple[Path, str], Path] = {}


def run_case(case: Case, base: Path, servers: dict[str, Any]) -> Result:
    """Run ``case`` in a fresh repo under ``base``; repos that ``case.prepare`` builds are
    built once per ``base`` and copied."""
    work = base / f"case-{abs(hash(case.name)):x}"
    repo, scratch = work / "kr", work / "in"
    scratch.mkdir(parents=True)
    ctx = Ctx(repo, scratch, servers)
    key = (base, getattr(case.prepare, "__qualname__", ""))
    if case.prepare is not None and key in _TEMPLATES:
        shutil.copytree(_TEMPLATES[key], repo, symlinks=True)
    else:
        init_repo(repo, git=False)
        if case.prepare is not None:
            case.prepare(ctx)
            if case.run is None:
                _TEMPLATES[key] = base / f"template-{len(_TEMPLATES)}"
                shutil.copytree(repo, _TEMPLATES[key], symlinks=True)
    args = case.setup(ctx)
    before = snapshot(repo, generated=True)
    code, err = (case.run or run_cli)(ctx, args)
    outcome, message = classify(code, err, case.names)
    after_failed = code != 0
    lost = lost_files(
        before if after_failed else {k: v for k, v in before.items() if _people(k)}, repo
    )
    return Result(case.name, case.kind, outcome, lost, wrong_groundings(repo), code, message)


def _people(rel: str) -> bool:
    return rel.split(os.sep, 1)[0] in PEOPLE


def set_params(repo: Path, **sections: dict[str, Any]) -> None:
    """Merge ``sections`` into the repo's ``params.yaml``."""
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in sections.items():
        params.setdefault(key, {}).update(value)
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def counts(results: list[Result]) -> dict[str, Any]:
    by_kind: dict[str, int] = {}
    for r in results:
        by_kind[r.kind] = by_kind.get(r.kind, 0) + 1
    return {
        "inputs_tried": len(results),
        "by_class": dict(sorted(by_kind.items())),
        "handled_ok": sum(r.outcome == "ok" for r in results),
        "clean_errors": sum(r.outcome == "clean_error" for r in results),
        "unexpected_errors": sum(r.outcome == "unexpected" for r in results),
        "data_lost": sum(bool(r.lost) for r in results),
        "wrong_groundings": sum(bool(r.wrong) for r in results),
        "findings": [
            {"case": r.case, "outcome": r.outcome, "message": r.message, "lost": r.lost,
             "wrong": r.wrong[:3]}
            for r in results if r.bad
        ],
    }  # fmt: skip


@contextlib.contextmanager
def servers() -> Iterator[dict[str, Any]]:
    """The shared fake LLM and web servers (started once for all cases)."""
    from tests.adapters.fake_llm import FakeLLM
    from tests.adapters.httpserver import serve

    with FakeLLM() as fake, serve() as web:
        fake.hang_seconds = 30.0
        yield {"llm": fake, "web": web}
