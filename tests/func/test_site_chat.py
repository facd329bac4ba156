"""Chat messages on the site: private-use citation markers are dropped at import, and
messages render as Markdown (raw HTML escaped, http(s) links only, no images) with their
transcript line anchors and claim marks kept."""

from __future__ import annotations

import copy
import json
from typing import Any

from arkai.adapters.params import DEFAULTS
from arkai.site.chatmd import ChatMarkdown, MarkTag, inline, with_marks
from arkai.site.transcript import Mark, render_transcript
from arkai.sources.base import AddOptions
from arkai.sources.chats import parse_chat_export
from arkai.sources.chats.common import drop_private_use

CITED = "See the docs \ue200cite\ue202turn0search3\ue201 and \ue203this\ue204 too."


def chatgpt_export(*texts: tuple[str, str]) -> bytes:
    """A minimal ChatGPT export: one conversation of (role, text) messages."""
    mapping: dict[str, Any] = {"root": {"parent": None, "message": None}}
    parent = "root"
    for n, (role, text) in enumerate(texts):
        mapping[f"m{n}"] = {
            "parent": parent,
            "message": {
                "author": {"role": role},
                "create_time": 1760000000 + n,
                "content": {"content_type": "text", "parts": [text]},
            },
        }
        parent = f"m{n}"
    conv = {"id": "conv-1", "title": "Markers \ue200x\ue201", "current_node": parent,
            "create_time": 1760000000, "mapping": mapping}  # fmt: skip
    return json.dumps([conv]).encode()


def options() -> AddOptions:
    return AddOptions(params=copy.deepcopy(DEFAULTS), now="2026-01-01T00:00:00Z")


def test_private_use_markers_are_dropped_at_import() -> None:
    (item,), _ = parse_chat_export("e.json", chatgpt_export(("user", "hi"), ("assistant", CITED)),
                                   options())  # fmt: skip
    text = item.files["transcript.md"].decode("utf-8")
    assert "See the docs and this too." in text
    assert not any(0xE000 <= ord(c) <= 0xF8FF for c in text)
    assert not any(0xE000 <= ord(c) <= 0xF8FF for c in item.title)
    assert drop_private_use("a\U000f0001b\ue000c") == "abc"
    assert drop_private_use("plain ✓ text") == "plain ✓ text"


def test_inline_markdown_is_rendered_and_inert() -> None:
    html = inline("**bold** `co*de` <b>raw</b> [ok](https://example.org/a) "
                  "[bad](javascript:alert(1)) ![img](https://example.org/i.png) $x$")  # fmt: skip
    assert "<strong>bold</strong>" in html
    assert "<code>co&#42;de</code>" in html
    assert "&lt;b&gt;raw&lt;/b&gt;" in html and "<b>" not in html
    assert '<a rel="noopener nofollow noreferrer" href="https://example.org/a">ok</a>' in html
    assert "javascript" not in html.split("&#93;(")[0] and 'href="javascript' not in html
    assert "<img" not in html
    assert "$" not in html  # Markdown-significant characters stay references


def test_marks_survive_markdown_or_the_line_falls_back() -> None:
    mark = MarkTag(4, 17, '<mark id="E1">', "</mark>")
    assert with_marks("say **very bold** thing", [mark]) == (
        'say <mark id="E1"><strong>very bold</strong></mark> thing')  # fmt: skip
    # A mark that starts inside the emphasis markers would break the nesting: no Markdown.
    assert with_marks("say **very bold** thing", [MarkTag(0, 8, "<mark>", "</mark>")]) is None
    # A mark inside a link's URL cannot become markup either.
    assert (
        with_marks("[x](https://example.org/abc)", [MarkTag(20, 23, "<mark>", "</mark>")]) is None
    )


def test_chat_transcript_lines_keep_anchors_and_marks() -> None:
    lines = [
        "# Title",
        "",
        "### human · 2026-01-01 10:00:00 UTC",
        "Is **this** right?",
        "",
        "### assistant · 2026-01-01 10:00:05 UTC",
        "## Steps",
        "- first *step*",
        "  2. nested <i>x</i>",
        "> quoted",
        "```python",
        "x = '**not bold**'",
        "```",
        "Say **cross this",
    ]
    data = ("\n".join(lines) + "\n").encode()
    quote = b"Is **this** right?"
    start = data.index(quote)
    cross = data.index(b"**cross")
    marks = [Mark(start, start + len(quote), "Ea"), Mark(cross + 2, cross + 9, "Eb")]
    html = render_transcript(data, marks, chat=True)
    rows = html.split("\n")
    by_id = {r.split(" ", 2)[1]: r for r in rows if r.startswith("<div id=L")}
    assert len(by_id) == len(lines)
    assert by_id["id=L4"] == (
        '<div id=L4 class="ak-md-p"><mark id="Ea">Is <strong>this</strong> right?</mark></div>'
    )
    assert 'class="ak-md-h ak-md-h2">Steps<' in by_id["id=L7"]
    assert '<span class="ak-md-b">•</span>first <em>step</em>' in by_id["id=L8"]
    assert "ak-md-d1" in by_id["id=L9"] and "&lt;i&gt;x&lt;/i&gt;" in by_id["id=L9"]
    assert 'class="ak-md-bq">quoted<' in by_id["id=L10"]
    assert 'class="ak-md-code">' in by_id["id=L12"] and "<strong>" not in by_id["id=L12"]
    # Unclosed emphasis is literal text; the mark is exactly its quote.
    assert '<mark id="Eb">cross t</mark>' in by_id["id=L14"]
    # The fence state ends with the message.
    md = ChatMarkdown()
    assert md.line("```", [])[0] == "ak-md-fence"
    md.new_message()
    assert md.line("**b**", []) == ("ak-md-p", "<strong>b</strong>")
