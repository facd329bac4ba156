"""The site's escaping, links and transcript markup: hostile text stays text."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from arkai.core.escape import (
    MARKDOWN_SIGNIFICANT,
    escape_attr,
    escape_text,
    safe_url,
    slugify,
    yaml_string,
)
from arkai.site.config import UserConfig, generated_config, load_user_config
from arkai.site.html import MARKER, page
from arkai.site.links import Urls, media_linker
from arkai.site.transcript import Mark, render_transcript

HOSTILE = [
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=window.__pwned=1>",
    '"><svg onload=alert(1)>',
    "[click](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "<a href='javascript:alert(1)'>x</a>",
    "**bold** _em_ `code` ~~del~~ ==mark== ^sup^ $x$ {{ config }} {% raw %}",
    "--8<-- /etc/passwd",
    "&lt;script&gt; &amp; &#60;",
    "\x00\x07 control \x1b[31m \ud800",
    "line one\nline two\r\n--8<-- 'x'",
]


class _Collector(HTMLParser):
    """Every start tag with its attributes, and the text of each element with an id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str | None] = []
        self.text: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        ident = dict(attrs).get("id")
        self.stack.append(ident)
        if ident:
            self.text[ident] = ""

    def handle_endtag(self, tag: str) -> None:
        if self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        for ident in self.stack:
            if ident:
                self.text[ident] += data


def parse(text: str) -> _Collector:
    p = _Collector()
    p.feed(text)
    p.close()
    return p


# --------------------------------------------------------------------------- escape_text


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_inert(text: str) -> None:
    out = escape_text(text)
    assert "<" not in out and ">" not in out and "\n" not in out and "\r" not in out
    assert not set(MARKDOWN_SIGNIFICANT) & set(re.sub(r"&#?\w+;", "", out))
    # Parsed as HTML it is one text node: no element appears.
    assert parse(f"<p>{out}</p>").tags == [("p", {})]


@given(st.text())
def test_escape_round_trips_through_html(text: str) -> None:
    out = escape_text(text)
    expected = re.sub(
        "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]", "\ufffd", text
    )
    assert html.unescape(out) == expected.replace("\r", "")
    assert not set(MARKDOWN_SIGNIFICANT + "<>\n\r") & set(re.sub(r"&#?\w+;", "", out))


def test_attribute_escape_closes_no_attribute() -> None:
    assert parse(f'<p title="{escape_attr(chr(34) + " onmouseover=x")}">t</p>').tags == [
        ("p", {"title": '" onmouseover=x'})
    ]


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_leaves_escaped_text_alone(text: str) -> None:
    """Even where a Markdown processor with common extensions sees the text, nothing of it
    turns into markup (defence in depth: the site hook skips Markdown for these pages)."""
    exts = ["extra", "toc", "admonition", "md_in_html", "attr_list", "pymdownx.snippets",
            "pymdownx.emoji", "pymdownx.mark", "pymdownx.tilde", "pymdownx.caret",
            "pymdownx.arithmatex", "pymdownx.superfences", "pymdownx.magiclink"]  # fmt: skip
    body = f'<div class="x">\n<div id=L1>{escape_text(text)}</div>\n</div>\n'
    out = markdown.markdown(body, extensions=exts)
    tags = [t for t, _ in parse(out).tags]
    assert tags == ["div", "div"], out
    assert "/etc/passwd" not in out or "--8&lt;--" in out


# --------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)", "java\tscript:x",
     "data:text/html,<script>", "vbscript:x", "//evil.example/x", "file:///etc/passwd",
     "https://user:pw@evil.example/", "https://", "ftp://example.com/x", "", None, 42,
     "https://exa mple.com/"],
)  # fmt: skip
def test_unsafe_urls_are_refused(url: object) -> None:
    assert safe_url(url) is None


def test_safe_urls_are_kept_and_quoted() -> None:
    assert safe_url("https://www.youtube.com/watch?v=abc&t=5s") == (
        "https://www.youtube.com/watch?v=abc&t=5s"
    )
    odd = safe_url('https://example.com/a"b<c>{{d}}`e')
    assert odd == "https://example.com/a%22b%3Cc%3E%7B%7Bd%7D%7D%60e"


def test_media_links() -> None:
    yt = media_linker({"url": "https://youtu.be/VMvdvP02f-Y"})
    assert yt is not None and yt(123) == "https://www.youtube.com/watch?v=VMvdvP02f-Y&t=123s"
    pod = media_linker({"url": "https://pod.example/ep1", "audio_url": "https://cdn.example/1.mp3"})
    assert pod is not None and pod(7) == "https://cdn.example/1.mp3#t=7"
    assert media_linker({"url": "https://example.com/article"}) is None
    assert media_linker({"url": "javascript:alert(1)//.mp3"}) is None


@pytest.mark.parametrize(
    ("directory_urls", "frm", "to", "want"),
    [
        (True, "items/abc.md", "transcripts/abc.md", "../../transcripts/abc/"),
        (True, "index.md", "items/abc.md", "items/abc/"),
        (True, "items/abc.md", "index.md", "../../"),
        (True, "library/index.md", "library/dates.md", "../library/dates/"),
        (True, "index.md", "index.md", "./"),
        (False, "items/abc.md", "transcripts/abc.md", "../transcripts/abc.html"),
        (False, "index.md", "items/abc.md", "items/abc.html"),
        (False, "library/dates.md", "index.md", "../index.html"),
        (False, "validation.md", "index.md", "index.html"),
    ],
)
def test_relative_links(directory_urls: bool, frm: str, to: str, want: str) -> None:
    assert Urls(directory_urls).href(frm, to) == want


def test_slugs_are_safe_and_distinct() -> None:
    names = ["Henrik Søndergaard", "henrik sondergaard", "<script>", "../../etc", "", "ETH Zürich"]
    slugs = [slugify(n) for n in names]
    assert len(set(slugs)) == len(slugs)
    assert all(re.fullmatch(r"[a-z0-9-]+", s) for s in slugs)


# --------------------------------------------------------------------------- transcript


def test_marks_wrap_exactly_the_quoted_bytes() -> None:
    data = "[00:00:01] Ana: Hello <b>wörld</b>. Next.\n[00:00:05] Ben: Fine.\n[00:00:09] Ana: Ok.\n"
    raw = data.encode()
    quote = "Hello <b>wörld</b>."
    start = raw.index(quote.encode())
    marks = [Mark(start, start + len(quote.encode()), "E1")]
    out = render_transcript(
        raw, marks, linker=lambda s: f"https://www.youtube.com/watch?v=x&t={s}s"
    )
    p = parse(out)
    assert p.text["E1"] == quote
    assert [t for t, _ in p.tags].count("script") == 0 and "<b>" not in out
    hrefs = [a["href"] for t, a in p.tags if t == "a"]
    assert hrefs == [f"https://www.youtube.com/watch?v=x&t={s}s" for s in (1, 5, 9)]
    assert p.text["L1"].startswith("00:00:01 Ana: Hello")
    assert all(line.startswith("<") for line in out.split("\n"))


def test_crossing_and_nested_spans_keep_one_id_each() -> None:
    raw = b"alpha beta gamma delta\nepsilon zeta\n"
    a = Mark(0, raw.index(b"gamma") + 5, "E1")
    b = Mark(raw.index(b"beta"), raw.index(b"zeta") + 4, "E2")  # crosses E1 and the line end
    c = Mark(0, raw.index(b"gamma") + 5, "E3")  # same span as E1
    out = render_transcript(raw, [a, b, c])
    p = parse(out)
    assert [x for t, x in p.tags if t == "mark" and x.get("id")] == [
        {"id": "E1"}, {"id": "E3"}, {"id": "E2"}
    ]  # fmt: skip
    assert p.text["E1"] == p.text["E3"] == "alpha beta gamma"
    assert p.text["E2"] == "beta gamma"  # first piece; the rest are continuations
    assert out.count('data-e="E2"') == 2


def test_chat_messages_are_grouped() -> None:
    raw = (
        "# T\n\n### human · 2025-10-15 04:37:46 UTC\nHi <there>\n\n### assistant\nHello\n".encode()
    )
    out = render_transcript(raw, chat=True)
    p = parse(out)
    classes = [a.get("class") for t, a in p.tags if t == "div"]
    assert "ak-msg ak-r-human" in classes and "ak-msg ak-r-assistant" in classes
    assert p.text["L3"].startswith("human") and p.text["L4"] == "Hi <there>"


# --------------------------------------------------------------------------- pages, config


def test_page_title_is_escaped_for_themes_that_print_it_raw() -> None:
    title = "<img src=x onerror=alert(1)> & {{ x }}"
    text = page(title, ["<p>x</p>"], kind="item")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["title"] == escape_text(title) and "<" not in front["title"]
    assert front["search"] == {"exclude": True}
    assert text.split("---\n", 2)[2].startswith(MARKER)
    with pytest.raises(ValueError, match="does not start with a tag"):
        page("t", ["--8<-- x"], kind="item")
    tricky = 'a: "b" #c'
    assert yaml.safe_load("t: " + yaml_string(tricky))["t"] == tricky


def test_generated_config_inherits_and_rebases(tmp_path: Path) -> None:
    user_text = (
        "site_name: !ENV [SITE, 'My library']\nsite_dir: public\nuse_directory_urls: false\n"
        "theme:\n  name: material\n  custom_dir: overrides\nhooks: [my_hooks.py]\n"
        "extra_css: [extra.css]\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
    )
    (tmp_path / "mkdocs.yml").write_text(user_text)
    user = load_user_config(tmp_path)
    assert user.directory_urls is False and user.site_dir == tmp_path / "public"
    cfg = yaml.safe_load(
        generated_config(user, tmp_path / ".site-build", topics=True, beliefs=False)
    )
    assert cfg["INHERIT"] == "../mkdocs.yml" and cfg["docs_dir"] == "docs"
    assert cfg["site_dir"] == "../public"
    assert cfg["theme"] == {"custom_dir": "../overrides"}
    assert cfg["hooks"][0] == "../my_hooks.py" and cfg["hooks"][1].endswith("hooks.py")
    assert cfg["extra_css"] == ["extra.css", "assets/arkai/arkai.css"]
    assert [next(iter(n)) for n in cfg["nav"]] == [
        "Home", "Library", "Tags", "Entities", "Topics", "Validation"
    ]  # fmt: skip
    assert (tmp_path / "mkdocs.yml").read_text() == user_text  # read, never written
    bare = yaml.safe_load(generated_config(UserConfig(tmp_path, None, {}), tmp_path / "b",
                                           topics=True, beliefs=True))  # fmt: skip
    assert "INHERIT" not in bare and bare["theme"] == {"name": "material"}
    assert {"Beliefs": "beliefs.md"} in bare["nav"]


def test_the_mkdocs_fingerprint_does_not_name_where_arkai_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same code installed at another path (another virtual environment or checkout)
    makes the same fingerprint, so the next MkDocs build stays a dirty one; a change to the
    config does change it."""
    import arkai.site.build as site_build
    import arkai.site.config as site_config

    user = UserConfig(tmp_path, None, {})
    here = generated_config(user, tmp_path / "b", topics=True, beliefs=False)
    assert str(site_config.HOOKS) in here
    # The other install: its hook file elsewhere, in its config and in its fingerprint.
    elsewhere = Path("/opt/other-venv/lib/site-packages/arkai/site/hooks.py")
    monkeypatch.setattr(site_config, "HOOKS", elsewhere)
    monkeypatch.setattr(site_build, "HOOKS", elsewhere)
    there = generated_config(user, tmp_path / "b", topics=True, beliefs=False)
    assert str(elsewhere) in there and there != here
    theirs = site_build._fingerprint(user, there)
    monkeypatch.undo()
    assert site_build._fingerprint(user, here) == theirs
    other = generated_config(user, tmp_path / "b", topics=False, beliefs=False)
    assert site_build._fingerprint(user, other) != theirs
