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

from arkai.cli import main
from arkai.ops.init import init_repo
from arkai.site.build import build_site
from tests.conftest import ROOT, SAMPLES, SHARED_DATA, TRANSCRIPTS

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
    _arkai("--repo", repo, "extract", "-q")
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
    link = page.locator(f'div.ak-claims a[href$="#E{claim["id"]}"]')
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
    assert word in page.locator("article").inner_text().lower()
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
