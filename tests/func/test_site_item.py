"""The item page of a real auto-captioned video and of a renamed item: nothing said twice,
plural words that agree, titles from file names that read, and a title edit that keeps the
content ID."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from arkai.cli import main
from arkai.ops.init import init_repo
from arkai.site.build import build_site
from arkai.site.html import plural
from arkai.sources.local import title_from_filename
from tests.conftest import TRANSCRIPTS

VTT = TRANSCRIPTS / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt"
SRT = TRANSCRIPTS / "virtual_coffee_srt" / "episode_1_1.srt"


class Texts(HTMLParser):
    """The text of every ``li`` and ``p`` element of the page body."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[str] = []
        self._open: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("li", "p"):
            self._open.append([])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("li", "p") and self._open:
            self.items.append("".join(self._open.pop()))

    def handle_data(self, data: str) -> None:
        for buf in self._open:
            buf.append(data)


def _arkai(*args: object) -> None:
    assert main([str(a) for a in args]) == 0, args


def _meta(repo: Path) -> dict[str, Path]:
    return {json.loads(m.read_text())["id"]: m for m in (repo / "library").rglob("metadata.json")}


def test_item_page_says_nothing_twice_and_titles_read(tmp_path: Path) -> None:
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    _arkai("--repo", repo, "add", "-q", "-t", "video", "https://www.youtube.com/watch?v=VMvdvP02f-Y",
           "--transcript", VTT)  # fmt: skip
    _arkai("--repo", repo, "add", "-q", "-t", "podcast", SRT)
    _arkai("--repo", repo, "add", "-q", "--title", "Coffee chat, renamed", SRT.with_name(
        "episode_2_6.srt"))  # fmt: skip
    _arkai("--repo", repo, "extract", "-q")
    build_site(repo, mkdocs=False)
    docs = repo / ".site-build" / "docs"
    metas = _meta(repo)
    titles = {json.loads(m.read_text())["title"]: cid for cid, m in metas.items()}
    assert "Episode 1.1" in titles and "Coffee chat, renamed" in titles

    # Auto-captions: the extractive summary, takeaway, key points, ideas and facts are built
    # from the same sentences; each sentence is shown once.
    video = next(cid for cid, m in metas.items() if "youtube" in str(m))
    parser = Texts()
    parser.feed((docs / "items" / f"{video}.md").read_text())
    texts = [" ".join(t.split()) for t in parser.items]
    sentences = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s) >= 40]
    repeated = {s for s in sentences if sentences.count(s) > 1}
    assert not repeated, repeated
    assert "One-sentence takeaway" not in (docs / "items" / f"{video}.md").read_text()

    # A title edited in metadata.json changes the pages, not the ID.
    cid = titles["Coffee chat, renamed"]
    meta = json.loads(metas[cid].read_text())
    meta["title"] = "Virtual Coffee, season 2"
    metas[cid].write_text(json.dumps(meta))
    build_site(repo, mkdocs=False)
    assert set(_meta(repo)) == set(metas)
    assert "<h1>Virtual Coffee, season 2</h1>" in (docs / "items" / f"{cid}.md").read_text()
    tag_page = next((docs / "tags").glob("podcast-*.md")).read_text()
    assert "<p>1 item</p>" in tag_page


def test_plural_and_file_name_titles() -> None:
    assert [plural(n, "item") for n in (0, 1, 2)] == ["0 items", "1 item", "2 items"]
    assert plural(1, "entity", "entities") == "1 entity"
    assert plural(3, "entity", "entities") == "3 entities"
    assert title_from_filename("episode_1_1.srt") == "Episode 1.1"
    assert title_from_filename("season-2_ep_8_3.srt") == "Season 2 ep 8.3"
    assert title_from_filename("beekeeping-talk.en.vtt") == "Beekeeping talk"
    assert title_from_filename("2017_neural-networks.srt") == "2017 neural networks"
