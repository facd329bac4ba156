"""An answer's citation opens the built site's transcript at the quoted line: real ``mkdocs
build``, real headless Chromium (Debian's ``chromium``, as the site tests use it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arkai.cli import main
from arkai.ops.init import init_repo
from arkai.site.build import build_site
from tests.conftest import SAMPLES
from tests.func.test_site_browser import ARGS, CHROMIUM

pytestmark = pytest.mark.slow


def test_citation_links_open_the_quoted_line_in_the_built_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    files = [SAMPLES / "field-notes-on-reproducibility.txt", SAMPLES / "beekeeping-talk.vtt"]
    assert main(["--repo", str(repo), "add", "-q", *map(str, files)]) == 0
    capsys.readouterr()
    question = "what did the firmware update do to the hive temperature readings"
    assert main(["--repo", str(repo), "ask", question, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert main(["--repo", str(repo), "ask", question]) == 0
    markdown = capsys.readouterr().out
    build_site(repo)
    matches = {m["match_id"]: m for s in record["shards"] for m in s["matches"]}
    cited = [mid for v in record["verdicts"] for mid in v["evidence"]]
    links = [line.split("](", 1)[1].split(")", 1)[0] for line in markdown.splitlines()
             if line[:1].isdigit() and "](" in line]  # fmt: skip
    assert len(links) == len(dict.fromkeys(cited)) >= 1
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for mid, link in zip(dict.fromkeys(cited), links, strict=True):
                # A fresh page each time, as a reader opens a link; a short window, so that only
                # the lines around the target are in view.
                page = browser.new_page(viewport={"width": 900, "height": 240})
                m = matches[mid]
                path, _, fragment = link.partition("#")
                assert fragment.startswith(f"L{m['line']}:~:text=")
                page.goto((repo / path).resolve().as_uri() + "#" + fragment)
                seen = page.evaluate(
                    """(id) => { const el = document.getElementById(id);
                    if (!el) return null; const r = el.getBoundingClientRect();
                    return [el.textContent, r.top, r.bottom, window.innerHeight]; }""",
                    f"L{m['line']}",
                )
                assert seen is not None, link
                text, top, bottom, height = seen
                assert " ".join(m["quote"].split()) in " ".join(text.split())
                assert bottom > 0 and top < height, (link, top, bottom)  # scrolled into view
                page.close()
        finally:
            browser.close()
