"""CLI paper cuts (issue 11): exclusive review flags, a pasteable `evidence open --print`,
queries with `-word` exclusions, and `arkai site serve` freeing its port on SIGTERM."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, Runner


@pytest.fixture
def extracted(kr: Path, arkai: Runner) -> Path:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "beekeeping-talk.vtt", "--quiet")
    assert code == 0, err
    code, _, err = arkai("--repo", kr, "extract", "--quiet")
    assert code == 0, err
    return kr


def first_claim(kr: Path) -> dict[str, object]:
    path = next((kr / "extracted").rglob("evidence.jsonl"))
    return dict(json.loads(path.read_text().splitlines()[0]))


def test_review_accept_and_reject_together_is_refused(extracted: Path, arkai: Runner) -> None:
    claim = first_claim(extracted)
    code, _, err = arkai("--repo", extracted, "review", claim["id"], "--accept", "--reject")
    assert code == 2
    assert "--accept and --reject are exclusive" in err
    assert not list((extracted / "library").rglob("review.yaml")), "nothing may be written"
    code, _, err = arkai("--repo", extracted, "review", claim["id"], "--reject")
    assert code == 0, err
    assert "rejected" in next((extracted / "library").rglob("review.yaml")).read_text()


def test_evidence_open_print_is_shell_quoted(
    extracted: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    claim = first_claim(extracted)
    span = claim["span"]
    assert isinstance(span, dict)
    monkeypatch.setenv("EDITOR", "vim")
    code, out, _ = arkai("--repo", extracted, "evidence", "open", claim["id"], "--print")
    assert code == 0
    argv = shlex.split(out)  # one shell word per argument, whatever the folder name holds
    assert argv[:2] == ["vim", f"+{span['line']}"]
    path = Path(argv[-1])
    assert " " in str(path) and path.is_file() and path.name == "transcript.md"


def test_search_word_starting_with_a_dash(extracted: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", extracted, "search", "bees", "-queen", "--mode", "lexical")
    assert code == 2
    assert "-queen is not an option" in err and "arkai search -- " in err
    code, _, err = arkai("--repo", extracted, "context", "bees", "-queen")
    assert code == 2 and "arkai context -- " in err
    code, _, err = arkai("--repo", extracted, "reindex", "--quiet")
    assert code == 0, err
    code, out, err = arkai("--repo", extracted, "search", "--mode", "lexical", "--json", "--",
                           "bees", "-queen")  # fmt: skip
    assert code == 0, err
    assert "queen" not in " ".join(
        hit["snippet"].lower() for item in json.loads(out)["results"] for hit in item["hits"]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_site_serve_frees_its_port_on_sigterm(kr: Path) -> None:
    port = free_port()
    env = {**os.environ, "ARKAI_REPO": str(kr)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "arkai.cli.main", "site", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # a hang guard: mkdocs builds the site first
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "mkdocs serve never listened"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    with socket.socket() as again:  # the server is gone: the port can be bound again
        again.bind(("127.0.0.1", port))


def test_text_that_looks_like_rich_markup_or_emoji_codes_is_printed_as_it_is(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    """A title, a file name or an error is the user's text: rich's markup (a source in a folder
    named `notes[` called `launch] :rocket:.md` stopped `arkai status` with a MarkupError,
    `[draft]` in a title vanished) and its `:emoji:` codes (`:rocket:` became 🚀) are not
    applied to it, in listings, run details or errors."""
    folder = tmp_path / "notes["
    folder.mkdir()
    src = folder / "launch] :rocket:.md"
    src.write_text("# Launch plan [draft]\n\nThe launch moves to May.\n", encoding="utf-8")
    code, out, err = arkai("--repo", kr, "add", src, "--quiet")
    assert code == 0, err
    assert "Launch plan [draft]" in out, out
    code, out, err = arkai("--repo", kr, "status")  # the add run's events
    assert code == 0, err
    assert "notes[/launch] :rocket:.md" in out and "🚀" not in out, out
    code, out, err = arkai("--repo", kr, "validate", "--verbose")
    assert "Launch plan [draft]" in out, out
    code, _, err = arkai("--repo", kr, "add", folder / "gone] :rocket:.md", "--quiet")
    assert code != 0 and "gone] :rocket:.md" in err and "🚀" not in err, err
