"""``condense_chat``: extractive heuristics over a chat transcript (``### role · time`` headers).

- ``decisions``: sentences saying what will be done ("we'll", "let's", "decided", "going with",
  "I'll use", "chose", "settled on", "switch to" …). ``rationale`` is the next sentence of the
  same message when it gives a reason (because / so / which means / since / that way), else the
  "because …" part of the decision itself, else "".
- ``discoveries``: sentences reporting a finding ("turns out", "found that", "the issue was",
  "realized", "works because", "the fix was" …). ``implication`` is the next sentence of the same
  message when it draws a consequence (so / which means / this means / therefore), else "".
- ``procedures``: numbered lists (and bulleted ones that read as instructions) of at least two
  items in one message; ``name`` is the line before the list, ``steps`` the items' text, and
  ``quote`` the first step.
- ``summary``: the two or three most central sentences (as in ``summarize``).

A ``max_items`` variable, when given, lowers the caps (20 decisions, 20 discoveries, 10
procedures). Tool output is skipped; questions are never decisions or discoveries. Quotes are
verbatim slices of one line, never including the list marker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from arkai.providers.builtin.claims import rank_units
from arkai.providers.builtin.text import (
    Line,
    Unit,
    build_units,
    clean_claim,
    is_question,
    positive_int,
    split_lines,
    wordset,
)
from arkai.providers.builtin.wisdom import fallback_summary, sentence

MAX_ITEMS = 20
MAX_PROCEDURES = 10

DECISION = re.compile(
    r"\b(?:we['’]ll|we will|we['’]re going to|let['’]s|let us|decided|decide to|decision is|"
    r"going with|go with|(?:i|we)['’]ll (?:use|go|keep|switch|stick|add|pick|move)|"
    r"(?:i|we) will (?:use|go|keep|switch|stick|add|pick|move)|chose|choose to|opted (?:for|to)|"
    r"settled on|(?:we|i) should use|switch(?:ed|ing)? to|the plan is|plan is to)\b",
    re.IGNORECASE,
)
DISCOVERY = re.compile(
    r"\b(?:turns out|turned out|found that|find that|found out|the (?:issue|problem|bug|cause|"
    r"culprit) (?:was|is)|root cause|realized|realised|works because|worked because|"
    r"the fix (?:was|is)|figured out|discovered|noticed that|it was because)\b",
    re.IGNORECASE,
)
REASON = re.compile(
    r"\b(?:because|since|so that|which means|that way|the reason|this means|due to)\b|^so\b",
    re.IGNORECASE,
)
CONSEQUENCE = re.compile(
    r"\b(?:which means|this means|that means|therefore|so we|so you|so the|so it|as a result|"
    r"hence)\b|^so\b",
    re.IGNORECASE,
)
_BECAUSE = re.compile(r"\bbecause\b", re.IGNORECASE)
_PROCEDURE_NAME = re.compile(
    r"\b(?:steps?|how to|to do|install|setup|set up|configure|procedure|process|workflow|"
    r"instructions|run|deploy|migrate|build|guide|recipe|checklist|fix)\b",
    re.IGNORECASE,
)
_IMPERATIVE = wordset(
    "add run install create open set configure use check make click go type copy update delete "
    "remove build start stop restart enable disable select enter download upload save write "
    "edit deploy push pull commit test verify ensure call import define replace rename move "
    "clone cd mkdir export source activate generate apply merge rebase wait log sign navigate "
    "choose paste"
)
_NAME_CLEAN = re.compile(r"^#+\s*|[*_`]+|\s*:\s*$")


def _messages(lines: list[Line]) -> list[int]:
    """The message number of each line (each ``### role · time`` header starts one)."""
    out: list[int] = []
    number = 0
    for ln in lines:
        if ln.kind == "header":
            number += 1
        out.append(number)
    return out


def _follower(units: list[Unit], i: int, message_of: dict[int, int]) -> Unit | None:
    if i + 1 >= len(units):
        return None
    nxt = units[i + 1]
    same = message_of.get(nxt.line) == message_of.get(units[i].line)
    return nxt if same and not is_question(nxt.text) else None


def _because_part(text: str) -> str:
    m = _BECAUSE.search(text)
    if m is None or m.start() == 0:
        return ""
    return text[m.start() :].rstrip(" .")


def condense_chat(text: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The ``condense_chat`` output for ``text``."""
    lines = split_lines(text)
    numbers = _messages(lines)
    message_of = {ln.number: numbers[i] for i, ln in enumerate(lines)}
    units = [u for u in build_units(text, lines) if u.role != "tool"]
    limit = min(MAX_ITEMS, positive_int(variables.get("max_items")) or MAX_ITEMS)
    decisions: list[dict[str, str]] = []
    discoveries: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, unit in enumerate(units):
        if is_question(unit.text) or len(unit.text.split()) < 3:
            continue
        key = unit.text.casefold()
        if key in seen:
            continue
        nxt = _follower(units, i, message_of)
        if DECISION.search(unit.text) and len(decisions) < limit:
            seen.add(key)
            rationale = ""
            if nxt is not None and REASON.search(nxt.text):
                rationale = clean_claim(nxt.text)
            elif _because_part(unit.text):
                rationale = _because_part(unit.text)
            decisions.append(
                {"decision": clean_claim(unit.text), "rationale": rationale, "quote": unit.text}
            )
        elif DISCOVERY.search(unit.text) and len(discoveries) < limit:
            seen.add(key)
            implication = ""
            if nxt is not None and CONSEQUENCE.search(nxt.text):
                implication = clean_claim(nxt.text)
            discoveries.append(
                {
                    "discovery": clean_claim(unit.text),
                    "implication": implication,
                    "quote": unit.text,
                }
            )
    ranking = rank_units(text)
    summary = ranking.select(2 if ranking.words < 1500 else 3)
    summary.sort(key=lambda c: c.unit.index)
    return {
        "summary": " ".join(sentence(c.claim) for c in summary) or fallback_summary(text, ranking),
        "decisions": decisions,
        "discoveries": discoveries,
        "procedures": _procedures(text, lines, numbers)[:limit],
    }


def _indent(text: str, line: Line) -> int:
    raw = text[line.start : line.body_start]
    return len(raw) - len(raw.lstrip())


def _procedures(text: str, lines: list[Line], numbers: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(lines) and len(out) < MAX_PROCEDURES:
        ln = lines[i]
        if ln.kind != "text" or ln.marker is None or ln.role == "tool":
            i += 1
            continue
        run = [i]
        j = i + 1
        while j < len(lines) and numbers[j] == numbers[i]:
            nxt = lines[j]
            if nxt.kind in ("blank", "code"):
                j += 1
                continue
            if nxt.kind == "text" and nxt.marker == ln.marker:
                run.append(j)
                j += 1
                continue
            if nxt.kind == "text" and nxt.marker is not None:
                j += 1  # a nested item of another kind
                continue
            break
        top = min(_indent(text, lines[k]) for k in run)
        steps_at = [k for k in run if _indent(text, lines[k]) == top]
        name = _list_name(text, lines, i, numbers)
        steps = [text[lines[k].body_start : lines[k].body_end] for k in steps_at]
        if len(steps) >= 2 and _is_procedure(ln.marker, name, steps):
            out.append({"name": name or "Steps", "steps": steps, "quote": steps[0]})
        i = max(j, i + 1)
    return out


def _list_name(text: str, lines: list[Line], first: int, numbers: list[int]) -> str:
    """The text of the nearest non-blank line before a list, in the same message."""
    k = first - 1
    while k >= 0 and numbers[k] == numbers[first] and lines[k].kind == "blank":
        k -= 1
    if k < 0 or numbers[k] != numbers[first]:
        return ""
    ln = lines[k]
    if ln.kind == "text":
        body = text[ln.body_start : ln.body_end]
    elif ln.kind == "heading":
        end = text.find("\n", ln.start)
        body = text[ln.start : end if end >= 0 else len(text)]
    else:
        return ""
    return _NAME_CLEAN.sub("", body.strip()).strip()


def _is_procedure(marker: str | None, name: str, steps: list[str]) -> bool:
    if marker == "numbered":
        return True
    if _PROCEDURE_NAME.search(name):
        return True
    verbs = sum(
        1
        for step in steps
        if step.split()
        and re.sub(r"[^a-z]", "", step.split()[0].lower().strip("*_`")) in _IMPERATIVE
    )
    return verbs * 2 >= len(steps)
