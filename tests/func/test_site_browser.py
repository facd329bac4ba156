"""The built site in a real browser (headless Chromium through Playwright): a claim link
lands on its highlighted quote, timestamps open YouTube at the second, chats read as
conversations, search finds a rare word and reaches its item, and hostile titles and
transcripts render as text without running anything.

Needs Debian's ``chromium`` (``make browser``; or ``$ARKAI_CHROMIUM``) and the ``playwright``
package; when either is missing the tests fail and say so. Screenshots are written to
``test-artifacts/site/``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters.chunkparts import write_lines
from arkai.cli import main
from arkai.ops.init import init_repo
from arkai.site.build import build_site
from tests.conftest import ROOT, SAMPLES, SHARED_DATA, TRANSCRIPTS
from tests.func.test_site_chat import chatgpt_export

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

CHROMIUM = os.environ.get("ARKAI_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VTT = TRANSCRIPTS / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt"
CHATGPT = SHARED_DATA / "chat_exports" / "chatgpt" / "echomine_golden_001_simple_text.raw.json"
ARTIFACTS = ROOT / "test-artifacts" / "site"
HOSTILE_TITLE = "<img src=x onerror=window.__pwned=1> <script>window.__pwned=1</script>"
HOSTILE_LINES = [
    "Mallory wrote <script>window.__pwned=1</script> into the transcript.",
    "Then <img src=x onerror=window.__pwned=1> and [a link](javascript:window.__pwned=1).",
    "The word quizzaciously appears in this hostile transcript only.",
]
YOUTUBE = "https://www.youtube.com/watch?v=VMvdvP02f-Y"
HIGHLIGHT = "rgb(255, 213, 79)"


MD_ANSWER = "\n".join(
    [
        "## Pinning",
        "Use **exact versions** in `requirements.txt` \ue200cite\ue202turn0search1\ue201 and "
        "see [the docs](https://pip.pypa.io/) <b>now</b>.",
        "",
        "- first, *freeze* the environment",
        "- then commit the lock file",
        "",
        "```python",
        "print('**not bold**')",
        "```",
    ]
)
TOPIC = "coffee"


def _make_stale(repo: Path, ids: dict[str, str]) -> str:
    """Edit a sample item's transcript after extraction so that its first claim is stale."""
    known = set(ids.values())
    for meta in sorted((repo / "library").rglob("metadata.json")):
        cid = json.loads(meta.read_text())["id"]
        rel = meta.parent.relative_to(repo / "library")
        evidence = repo / "extracted" / rel / "evidence.jsonl"
        if cid in known or not evidence.is_file():
            continue
        lines = [json.loads(x) for x in evidence.read_text().splitlines()]
        resolved = [e for e in lines if e["status"] == "resolved"]
        if not resolved:
            continue
        transcript = meta.parent / "transcript.md"
        data = transcript.read_bytes()
        start, end = resolved[0]["span"]["utf8_byte_offset"]
        transcript.write_bytes(data[:start] + b"Entirely different words now. " + data[end:])
        return cid
    raise AssertionError("no sample item with a resolved claim")


def _write_index(repo: Path, *cids: str) -> None:
    """A small topic index over real transcript lines (as the index stage writes it)."""
    index = repo / "index"
    index.mkdir(exist_ok=True)
    chunks, refs = [], {}
    for cid in cids:
        folder = next(m.parent for m in (repo / "library").rglob("metadata.json")
                      if json.loads(m.read_text())["id"] == cid)  # fmt: skip
        lines = (folder / "transcript.md").read_text().splitlines()
        hits = [n for n, line in enumerate(lines, 1) if TOPIC in line.lower()] or [1, 5, 9]
        for n in hits[:5]:
            refs.setdefault(cid, []).append(len(chunks))
            text = "\n".join(lines[n - 1 : n + 2])
            chunks.append({"content_id": cid, "kind": "transcript", "start_line": n,
                           "end_line": min(n + 2, len(lines)), "text": text})  # fmt: skip
    write_lines(index / "chunks", (json.dumps(c).encode() + b"\n" for c in chunks))
    items = [{"content_id": c, "relevance": "high" if i == 0 else "low", "chunks": refs[c]}
             for i, c in enumerate(cids)]  # fmt: skip
    (index / "topics.json").write_text(json.dumps(
        {"version": 1, "topics": {TOPIC: {"items": items}}, "synonyms": {}}))  # fmt: skip


@dataclass
class Site:
    repo: Path
    root: Path
    url: str
    ids: dict[str, str]
    """Short name → content ID."""

    def item_dir(self, cid: str) -> Path:
        for meta in (self.repo / "library").rglob("metadata.json"):
            if json.loads(meta.read_text())["id"] == cid:
                return meta.parent
        raise KeyError(cid)

    def evidence(self, cid: str) -> list[dict[str, Any]]:
        rel = self.item_dir(cid).relative_to(self.repo / "library")
        path = self.repo / "extracted" / rel / "evidence.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


def _arkai(*args: object) -> None:
    code = main([str(a) for a in args])
    assert code == 0, f"arkai {args} exited {code}"


def _added_id(repo: Path, before: set[str]) -> str:
    now = {json.loads(m.read_text())["id"] for m in (repo / "library").rglob("metadata.json")}
    (new,) = now - before
    return new


def _ids(repo: Path) -> set[str]:
    return {json.loads(m.read_text())["id"] for m in (repo / "library").rglob("metadata.json")}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("site-browser")
    repo = tmp / "kr"
    init_repo(repo, git=False)
    ids: dict[str, str] = {}
    _arkai("--repo", repo, "add", "-q", "-t", "sample",
           *sorted(p for p in SAMPLES.iterdir() if p.name != "README.md"))  # fmt: skip
    steps = {
        "podcast": ["-t", "podcast", TRANSCRIPTS / "virtual_coffee_srt" / "episode_1_1.srt"],
        "youtube": ["-t", "video", YOUTUBE, "--transcript", VTT],
        "chat": ["-t", "chat", CHATGPT],
    }  # fmt: skip
    hostile = tmp / "hostile-notes.txt"
    hostile.write_text("\n\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    steps["hostile"] = ["-t", "<b>tag</b>", "--title", HOSTILE_TITLE, hostile]
    for name, args in steps.items():
        before = _ids(repo)
        _arkai("--repo", repo, "add", "-q", *args)
        ids[name] = _added_id(repo, before)
    chat = tmp / "markdown-chat.json"
    chat.write_bytes(chatgpt_export(("user", "How do I **pin** a dependency?"),
                                    ("assistant", MD_ANSWER)))  # fmt: skip
    before = _ids(repo)
    _arkai("--repo", repo, "add", "-q", "-t", "chat", chat)
    ids["mdchat"] = _added_id(repo, before)
    _arkai("--repo", repo, "extract", "-q")
    ids["stale"] = _make_stale(repo, ids)
    _write_index(repo, ids["podcast"], ids["youtube"])
    # `arkai add` strips markup from titles; a hand-edited metadata.json may hold anything.
    meta_path = next(p for p in (repo / "library").rglob("metadata.json")
                     if json.loads(p.read_text())["id"] == ids["hostile"])  # fmt: skip
    meta = json.loads(meta_path.read_text())
    meta.update(title=HOSTILE_TITLE, url="javascript:window.__pwned=1")
    meta_path.write_text(json.dumps(meta))
    build_site(repo)
    root = repo / "site"

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(repo, root, f"http://127.0.0.1:{server.server_address[1]}/", ids)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Chromium context with a fresh profile; a missing browser fails, never skips."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.fail(f"the playwright package is missing ({exc}): pip install playwright",
                    pytrace=False)  # fmt: skip
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install chromium "
                    "(or `make browser`), or set ARKAI_CHROMIUM", pytrace=False)  # fmt: skip
    profile = tmp_path_factory.mktemp("chromium-profile")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        try:
            context = p.chromium.launch_persistent_context(
                str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
                viewport={"width": 1280, "height": 800},
            )  # fmt: skip
        except Exception as exc:  # the launch error says why (missing libraries, sandbox …)
            pytest.fail(f"Chromium at {CHROMIUM} could not be launched: {exc}", pytrace=False)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    pg = browser.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    yield pg
    pg.close()
    assert not errors, errors


def in_viewport(pg: Any, selector: str) -> dict[str, float]:
    return pg.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        const header = document.querySelector('.md-header').getBoundingClientRect().bottom;
        return {top: r.top, bottom: r.bottom, height: innerHeight, header}; }""",
        selector,
    )  # type: ignore[no-any-return]


def test_claim_link_lands_on_the_highlighted_quote(site: Site, page: Any) -> None:
    cid = site.ids["podcast"]
    claims = [e for e in site.evidence(cid) if e["status"] == "resolved"]
    claim = max(claims, key=lambda e: e["span"]["line"])  # deep in the page: it must scroll
    assert claim["span"]["line"] > 50
    page.goto(f"{site.url}items/{cid}/")
    link = page.locator(f'div.ak-claims a.ak-go[href$="#E{claim["id"]}"]')
    link.scroll_into_view_if_needed()
    link.click()
    page.wait_for_url(re.compile(rf"/transcripts/{cid}/#E{claim['id']}$"))
    page.wait_for_load_state("load")
    assert page.evaluate("location.hash") == f"#E{claim['id']}"
    target = page.evaluate(
        """() => { const t = document.querySelector(':target');
        return {tag: t.tagName, id: t.id, text: t.textContent,
                bg: getComputedStyle(t).backgroundColor,
                line: t.closest('div[id^="L"]').id}; }"""
    )
    assert target == {"tag": "MARK", "id": f"E{claim['id']}", "text": claim["quote"],
                      "bg": HIGHLIGHT, "line": f"L{claim['span']['line']}"}  # fmt: skip
    box = in_viewport(page, ":target")
    assert box["header"] <= box["top"] and box["bottom"] <= box["height"], box
    assert page.evaluate("scrollY") > 0
    page.screenshot(path=str(ARTIFACTS / "claim-highlight.png"))
    # A line anchor works the same way.
    page.goto(f"{site.url}transcripts/{cid}/#L40")
    assert page.evaluate("document.querySelector(':target').id") == "L40"


def test_youtube_timestamps_open_the_video_at_the_second(site: Site, page: Any) -> None:
    cid = site.ids["youtube"]
    page.goto(f"{site.url}transcripts/{cid}/")
    lines = (site.item_dir(cid) / "transcript.md").read_text().splitlines()
    for n in (1, 10, len(lines)):
        h, m, s = (int(x) for x in re.match(r"\[(\d+):(\d+):(\d+)\]", lines[n - 1]).groups())
        link = page.locator(f"div#L{n} > a").first
        assert link.get_attribute("href") == f"{YOUTUBE}&t={h * 3600 + m * 60 + s}s"
        assert link.inner_text() == f"{h:02d}:{m:02d}:{s:02d}"
    page.screenshot(path=str(ARTIFACTS / "youtube-transcript.png"))


def test_chat_reads_as_a_conversation(site: Site, page: Any) -> None:
    cid = site.ids["chat"]
    page.goto(f"{site.url}transcripts/{cid}/")
    roles = page.locator(".ak-msg .ak-mh .ak-role").all_inner_texts()
    meta = json.loads((site.item_dir(cid) / "metadata.json").read_text())
    assert len(roles) == meta["message_count"] and {r.lower() for r in roles} == {
        "human", "assistant"}  # fmt: skip
    assert page.locator(".ak-msg.ak-r-human").count() >= 1
    assert page.locator(".ak-msg.ak-r-assistant").count() >= 1
    colors = page.evaluate(
        """() => [...document.querySelectorAll('.ak-msg')].map(
            m => getComputedStyle(m).borderLeftColor)"""
    )
    assert len(set(colors)) == 2  # human and assistant messages look different
    page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=False)


def _rare_word(site: Site) -> tuple[str, str]:
    """A long word in exactly one transcript (and in no title)."""
    texts = {cid: (site.item_dir(cid) / "transcript.md").read_text().lower() for cid in
             {json.loads(m.read_text())["id"] for m in (site.repo / "library").rglob(
                 "metadata.json")}}  # fmt: skip
    cid = site.ids["podcast"]
    words = sorted(set(re.findall(r"\b[a-z]{9,}\b", texts[cid])))
    for w in words:
        if all(w not in t for other, t in texts.items() if other != cid):
            return w, cid
    raise AssertionError("no rare word")


def _search(page: Any, word: str) -> Any:
    opener = page.locator('label.md-header__button[for="__search"]')  # the phone layout's
    if opener.is_visible():
        opener.click()
    else:
        page.locator("label.md-search__icon, .md-search__input").first.click()
    # Material searches on key events: type the word, do not just set the value.
    page.locator("input.md-search__input").press_sequentially(word, delay=30)
    results = page.locator("li.md-search-result__item a")
    results.first.wait_for(state="visible", timeout=15000)
    return results


def test_search_finds_a_rare_word_and_reaches_its_item(site: Site, page: Any) -> None:
    word, cid = _rare_word(site)
    page.goto(site.url)
    results = _search(page, word)
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    assert hrefs and all(f"/{cid}/" in h for h in hrefs), hrefs
    page.screenshot(path=str(ARTIFACTS / "search.png"))
    results.first.click()
    page.wait_for_url(re.compile(rf"/(transcripts|items)/{cid}/"))
    # (text_content: the word may be in a collapsed section of the item page)
    assert word in (page.locator("article").text_content() or "").lower()
    # Claims are searchable too: a word from a claim finds the item page's claims.
    claim = site.evidence(site.ids["chat"])[0]["claim"]
    page.goto(site.url)
    results = _search(page, max(re.findall(r"[A-Za-z]{6,}", claim), key=len))
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    assert any(f"items/{site.ids['chat']}/" in h for h in hrefs), hrefs


def test_hostile_title_and_transcript_render_as_text(site: Site, page: Any) -> None:
    cid = site.ids["hostile"]
    for path in (f"items/{cid}/", f"transcripts/{cid}/", "", "library/", "library/dates/",
                 "tags/", "validation/"):  # fmt: skip
        page.goto(site.url + path)
        page.wait_for_load_state("load")
        assert page.evaluate("window.__pwned") is None, path
        assert page.locator(".ak-page script, .ak-page img, .ak-page svg").count() == 0, path
    page.goto(f"{site.url}items/{cid}/")
    assert page.locator("article h1").inner_text() == HOSTILE_TITLE
    assert page.title().startswith(HOSTILE_TITLE)
    assert page.locator('a[href^="javascript"]').count() == 0
    page.screenshot(path=str(ARTIFACTS / "hostile-item.png"))
    page.goto(f"{site.url}transcripts/{cid}/")
    shown = page.locator(".ak-t").inner_text()
    for line in HOSTILE_LINES:
        assert line in shown
    page.screenshot(path=str(ARTIFACTS / "hostile-transcript.png"))
    results = _search(page, "quizzaciously")
    assert results.count() >= 1
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=str(ARTIFACTS / "hostile-search.png"))


# --------------------------------------------------------------------------- layout

#: Viewports: a common phone (390 × 844 CSS px) and a laptop (1280 × 800).
WIDTHS = {390: 844, 1280: 800}
#: The narrowest title cell allowed in the library's item list: at 1280 px at least 200 px
#: (about 25 characters a line); on a phone each row is a card, its title the card's width.
TITLE_MIN = {390: 300, 1280: 200}


def _no_sideways_scroll(pg: Any, what: str) -> None:
    """Neither the page nor any table scrolls sideways (or is cut off)."""
    m = pg.evaluate("""() => ({scroll: document.documentElement.scrollWidth, width: innerWidth,
        tables: [...document.querySelectorAll('.ak-rt, .ak-rt table')].map(
            t => [t.className, t.scrollWidth, t.clientWidth]).filter(d => d[1] > d[2])})""")
    assert m["scroll"] <= m["width"] and not m["tables"], (what, m)


def _shot(pg: Any, name: str, width: int) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"))


@pytest.mark.parametrize("width", list(WIDTHS))
def test_pages_read_at_phone_and_laptop_width(site: Site, page: Any, width: int) -> None:
    height = WIDTHS[width]
    page.set_viewport_size({"width": width, "height": height})
    page.goto(site.url)
    _no_sideways_scroll(page, "home")
    _shot(page, "home", width)

    page.goto(f"{site.url}library/")
    _no_sideways_scroll(page, "library")
    cells = page.evaluate("""() => [...document.querySelectorAll('.ak-rt td:first-child')]
        .map(td => td.getBoundingClientRect().width)""")
    assert cells and min(cells) >= TITLE_MIN[width], cells
    _shot(page, "library", width)

    # The item page leads with the claims: their heading is on the first screen (a title,
    # one line of facts and a summary of at most 600 characters come before it).
    cid = site.ids["podcast"]
    page.goto(f"{site.url}items/{cid}/")
    _no_sideways_scroll(page, "item")
    top = page.evaluate("document.getElementById('claims').getBoundingClientRect().top")
    assert top < height, top
    assert page.locator("div.ak-claims li.ak-claim").count() >= 3
    first = page.locator("div.ak-claims li.ak-claim").first
    assert first.locator("q.ak-q, .ak-same").count() == 1  # each claim shows its quote
    assert page.locator("details.ak-more[open]").count() == 0  # the rest is collapsed
    _shot(page, "item", width)
    link = first.locator("a.ak-go")
    href = link.get_attribute("href")
    link.click()
    page.wait_for_url(re.compile(r"/transcripts/.+#E"))
    assert href and page.evaluate("location.hash") == "#" + href.split("#")[1]
    assert page.evaluate("document.querySelector(':target').tagName") == "MARK"
    box = in_viewport(page, ":target")
    assert box["header"] <= box["top"] and box["bottom"] <= box["height"], box
    _no_sideways_scroll(page, "transcript")
    _shot(page, "transcript-claim", width)

    page.goto(f"{site.url}entities/")
    _no_sideways_scroll(page, "entities")
    page.locator(".ak-chips a[href*='/']").first.click()
    page.wait_for_url(re.compile(r"/entities/.+/"))
    said = page.locator(".ak-group .ak-said li")
    assert said.count() >= 1
    assert said.first.locator("mark.ak-m").inner_text().strip()
    assert re.search(r"/transcripts/[^/]+/#L\d+$", said.first.locator("a").get_attribute(
        "href") or "")  # fmt: skip
    _no_sideways_scroll(page, "entity")
    _shot(page, "entity", width)

    page.goto(f"{site.url}topics/")
    page.locator(".ak-chips a").first.click()
    page.wait_for_url(re.compile(r"/topics/.+/"))
    marks = page.locator(".ak-said mark.ak-m").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {TOPIC}
    assert page.locator(".ak-group").count() == 2  # grouped by item
    _no_sideways_scroll(page, "topic")
    _shot(page, "topic", width)

    page.goto(f"{site.url}transcripts/{site.ids['mdchat']}/")
    _no_sideways_scroll(page, "chat")
    _shot(page, "chat", width)

    page.goto(f"{site.url}validation/")
    _no_sideways_scroll(page, "validation")
    _shot(page, "validation", width)

    page.goto(site.url)
    _search(page, TOPIC)
    page.wait_for_timeout(300)  # let the result list settle before the picture
    _no_sideways_scroll(page, "search")
    _shot(page, "search", width)


def test_chat_markdown_renders_without_markup_or_boxes(site: Site, page: Any) -> None:
    page.goto(f"{site.url}transcripts/{site.ids['mdchat']}/")
    t = page.locator(".ak-t")
    assert t.locator("strong", has_text="exact versions").count() == 1
    assert t.locator("code", has_text="requirements.txt").count() == 1
    assert t.locator("a[href='https://pip.pypa.io/']").count() == 1
    assert t.locator(".ak-md-li").count() == 2 and t.locator(".ak-md-h").count() == 1
    text = t.inner_text()
    assert "<b>now</b>" in text and t.locator("b", has_text="now").count() == 0
    assert "print('**not bold**')" in text  # code stays code
    assert "**" not in text.replace("print('**not bold**')", "")
    assert not any(0xE000 <= ord(c) <= 0xF8FF for c in text), "private-use characters"
    # Every line keeps its anchor.
    lines = (site.item_dir(site.ids["mdchat"]) / "transcript.md").read_text().splitlines()
    assert page.locator(".ak-t div[id^='L']").count() == len(lines)


def test_stale_claims_are_marked_and_link_to_a_notice(site: Site, page: Any) -> None:
    cid = site.ids["stale"]
    page.goto(f"{site.url}items/{cid}/")
    # The edit shifted every later quote too: all of them are stale.
    cards = page.locator("li.ak-claim.ak-st-stale")
    assert cards.count() >= 1
    assert page.locator("li.ak-claim .ak-b-stale").count() == cards.count()
    card = cards.first
    link = card.locator("a.ak-go")
    eid = (link.get_attribute("href") or "").split("#E")[1]
    link.click()
    page.wait_for_url(re.compile(rf"/transcripts/{cid}/#E{eid}$"))
    target = page.evaluate("""() => { const t = document.querySelector(':target');
        return {tag: t.tagName, notice: !!t.closest('.ak-stale')}; }""")
    assert target == {"tag": "LI", "notice": True}
    assert page.locator(f"mark#E{eid}").count() == 0
    page.screenshot(path=str(ARTIFACTS / "stale-notice.png"))
    page.goto(f"{site.url}validation/")
    notice = page.locator(f"a[href$='transcripts/{cid}/#E{eid}']")
    assert notice.count() == 1 and notice.inner_text() == "notice"


def test_search_ranks_items_before_entity_pages(site: Site, page: Any) -> None:
    index = json.loads((site.root / "search" / "search_index.json").read_text())
    titles = [d["title"] for d in index["docs"] if d["location"].startswith("entities/")]
    texts = " ".join(d["text"] for d in index["docs"] if d["location"].startswith("items/"))
    name = next(t for t in titles if re.fullmatch(r"[A-Za-z]{5,}", t) and t in texts)
    page.goto(site.url)
    results = _search(page, name)
    hrefs = [results.nth(i).get_attribute("href") or "" for i in range(results.count())]
    kinds = [h.split("/")[-3] if h.endswith("/") else h.split("/")[-2].split("#")[0]
             for h in hrefs]  # fmt: skip
    assert "entities" not in kinds[:1], hrefs
    first_index_page = next((i for i, h in enumerate(hrefs) if "/entities/" in h or
                             "/topics/" in h), len(hrefs))  # fmt: skip
    assert all("/items/" in h or "/transcripts/" in h for h in hrefs[:first_index_page])
    assert first_index_page > 0, hrefs


def test_search_suggestion_shows_no_character_references(site: Site, page: Any) -> None:
    index = json.loads((site.root / "search" / "search_index.json").read_text())
    assert "&(?:lt|gt|amp|quot);" in index["config"]["separator"]
    # The suggestion completes the last word from the words of page titles; the hostile
    # title holds "onerror=window.__pwned=1>", indexed (escaped) as "…=1&gt;".
    page.goto(site.url)
    _search(page, "onerr")
    suggest = page.locator(".md-search__suggest")
    page.wait_for_function("document.querySelector('.md-search__suggest').textContent.length > 0",
                           timeout=15000)  # fmt: skip
    shown = suggest.text_content() or ""
    assert "&gt;" not in shown and "&lt;" not in shown and "&amp;" not in shown, shown
