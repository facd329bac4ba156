"""An answer as Markdown, and ``arkai ask --save``: ``answers/<slug>-<id8>.md`` (+ ``.json``).

Each claim carries numbered citations ``[1]``; each citation links to the site's transcript
page at the quoted line (``transcripts/<id>/#L<line>``, the anchor the site gives every line)
with a text fragment (``:~:text=``) that makes the browser highlight the quoted words, and
gives the receipt as ``arkai evidence show`` prints one (path:line, byte range, slice hash).

Saved files are written atomically and never replace a file that differs from what would be
written (a person may have edited it): the new answer gets the next free name (``-2``, ``-3``
…). Writing the same answer again changes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from arkai.adapters.fs import atomic_write_text, read_repo_file
from arkai.adapters.repo import Repo
from arkai.model.answer import Answer, Match
from arkai.ops.ask import iter_citations
from arkai.site import links
from arkai.site.config import load_user_config

ANSWERS = "answers"
_SLUG = re.compile(r"[^a-z0-9]+")
_QUOTE_WORDS = 8


@dataclass(frozen=True, slots=True)
class Saved:
    markdown: Path
    json: Path
    created: bool
    """False when an identical answer was already saved there."""


def site_base(root: Path, *, from_dir: str = "") -> tuple[str, bool]:
    """``(base URL of the built site, directory URLs?)``: the user's ``site_url`` when set,
    else the local ``site/`` folder relative to ``from_dir`` (a repo-relative folder)."""
    config = load_user_config(root)
    url = config.data.get("site_url")
    if isinstance(url, str) and url.strip():
        return url.rstrip("/") + "/", config.directory_urls
    up = "../" * len([p for p in from_dir.split("/") if p])
    site = (
        config.site_dir.relative_to(root).as_posix()
        if config.site_dir.is_relative_to(root)
        else "site"
    )
    return f"{up}{site}/", config.directory_urls


def line_link(base: str, directory_urls: bool, m: Match) -> str:
    """The site URL of ``m``'s transcript line, highlighting the quote (a text fragment)."""
    urls = links.Urls(directory_urls)
    page = urls.url(links.transcript_page(m.item or ""))
    if directory_urls:
        page += "index.html" if not base.startswith(("http://", "https://")) else ""
    words = m.quote.split()
    if len(words) > _QUOTE_WORDS * 2:
        head, tail = " ".join(words[:_QUOTE_WORDS]), " ".join(words[-_QUOTE_WORDS:])
        fragment = f"{quote(head, safe='')},{quote(tail, safe='')}"
    else:
        fragment = quote(" ".join(words), safe="")
    return f"{base}{page}#L{m.line}:~:text={fragment}"


def receipt(m: Match) -> str:
    """``path:line [start:end] sha256:…`` — the receipt as ``arkai evidence show`` gives it."""
    start, end = m.span or (0, 0)
    return f"{m.transcript}:{m.line} [{start}:{end}] {m.slice_sha256}"


def render(answer: Answer, root: Path, *, from_dir: str = "", run: bool = True) -> str:
    """The answer as Markdown (see the module doc); ``run=False`` leaves out the run id (a
    saved answer is the same file whichever run produced it)."""
    base, directory_urls = site_base(root, from_dir=from_dir)
    numbers: dict[str, int] = {}
    cites = list(iter_citations(answer))
    for n, m in cites:
        numbers[m.match_id] = n
    verdicts = {v.claim: v for v in answer.verdicts}
    out = [f"# {answer.question}", ""]
    for c in answer.claims:
        refs = "".join(f"[{numbers[e]}]" for e in verdicts[c.id].evidence if e in numbers)
        out.append(f"- {c.text} {refs}".rstrip())
    out += ["", "## Citations", ""]
    for n, m in cites:
        link = line_link(base, directory_urls, m)
        out.append(f"{n}. [{m.match_id}]({link}) · `{receipt(m)}` · {m.timestamp or 'undated'}")
        out.append(f"   > {m.quote}")
    if answer.disagreements:
        out += ["", "## Disagreements (withheld from the answer)", ""]
        for v in answer.disagreements:
            claim = next(c for c in answer.rounds[-1].claims if c.id == v.claim)
            out.append(f"- **{v.verdict}** — {claim.text}: {v.notes}")
    out += ["", "## Record", ""]
    shards = ", ".join(
        f"{s.shard} ({s.coverage.method}, {s.coverage.chunks_examined} chunks examined, "
        f"{s.coverage.chunks_with_matches} with matches, confidence {s.uncertainty.confidence})"
        for s in answer.shards
    )
    gaps = sorted({g for s in answer.shards for g in s.uncertainty.gaps})
    out.append(f"- scope: {answer.scope.reason}")
    out.append(f"- shards: {shards}")
    if gaps:
        out.append(f"- gaps: {'; '.join(gaps)}")
    out.append(
        f"- rounds: {len(answer.rounds)}; agreement: {'yes' if answer.agreement else 'no'}; "
        f"retracted: {len(answer.retracted)}"
    )
    out.append(f"- temporal check: {answer.temporal_check.get('note', '')}")
    out.append(f"- answer {answer.id}" + (f" · run {answer.run_id}" if run else ""))
    return "\n".join(out) + "\n"


def slug(question: str) -> str:
    return _SLUG.sub("-", question.lower()).strip("-")[:60].strip("-") or "answer"


def save(repo: Repo, answer: Answer) -> Saved:
    """Write ``answers/<slug>-<id8>.md`` and ``.json`` (see the module doc)."""
    root = repo.root
    md = render(answer, root, from_dir=ANSWERS, run=False)
    record = answer.to_dict()
    del record["run_id"]
    for shard in record["shards"]:
        del shard["cached"]
    js = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    folder = root / ANSWERS
    stem = f"{slug(answer.question)}-{answer.id[:8]}"
    n = 1
    while True:
        name = stem if n == 1 else f"{stem}-{n}"
        pm, pj = folder / f"{name}.md", folder / f"{name}.json"
        old_md = read_repo_file(pm, root, missing_ok=True)
        old_js = read_repo_file(pj, root, missing_ok=True)
        if old_md is None and old_js is None:
            atomic_write_text(pj, js)
            atomic_write_text(pm, md)
            return Saved(pm, pj, True)
        if old_md == md.encode("utf-8") and old_js == js.encode("utf-8"):
            return Saved(pm, pj, False)
        n += 1
