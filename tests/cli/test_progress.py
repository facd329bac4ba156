"""Progress (issue 11): `arkai extract` (what the DVC stage runs) and `arkai eval retrieval`
draw rich progress on stderr when it is a terminal (a real pty here), and print nothing there
when it is not, or with --quiet."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, Runner

SOURCES = ("beekeeping-talk.vtt", "compilers-podcast.srt", "field-notes-on-reproducibility.txt")
ENV = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}


def on_pty(args: list[str], repo: Path | None = None) -> tuple[int, str, str]:
    """Run arkai with stderr on a pseudo-terminal; returns (code, stdout, what the pty got)."""
    env = {**ENV, **({"ARKAI_REPO": str(repo)} if repo else {})}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "arkai.cli.main", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    got = bytearray()
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        got += data
    os.close(master)
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out.decode(), got.decode("utf-8", "replace")


def piped(args: list[str], repo: Path | None = None) -> tuple[int, str, str]:
    env = {**ENV, **({"ARKAI_REPO": str(repo)} if repo else {})}
    done = subprocess.run(
        [sys.executable, "-m", "arkai.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def library(kr: Path, arkai: Runner) -> Path:
    code, _, err = arkai("--repo", kr, "add", *(SAMPLES / s for s in SOURCES), "--quiet")
    assert code == 0, err
    return kr


def test_extract_progress_on_a_terminal_only(library: Path) -> None:
    code, _, err = piped(["extract"], library)
    assert code == 0, err
    assert err == "", "no progress (nor anything else) on a stderr that is not a terminal"
    code, out, tty = on_pty(["extract", "--force"], library)
    assert code == 0, tty
    assert "extract" in tty and "/3" in tty, tty  # the bar: label and items done of 3
    assert "extract:" in out  # the summary still goes to stdout
    code, _, tty = on_pty(["extract", "--force", "--quiet"], library)
    assert code == 0 and tty == "", tty


def _beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [
        {"_id": f"d{i}", "title": f"Doc {i}", "text": f"bees make honey number {i}"}
        for i in range(20)
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "honey 3"}) + "\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    return root


def test_eval_retrieval_progress_on_a_terminal_only(tmp_path: Path) -> None:
    args = ["eval", "retrieval", "--corpus", str(_beir(tmp_path / "beir")), "--modes", "lexical"]
    code, out, err = piped(args)
    assert code == 0, err
    assert err == "" and "nDCG@10" in out
    code, out, tty = on_pty(args)
    assert code == 0, tty
    assert "eval retrieval" in tty, tty
    code, _, tty = on_pty([*args, "--quiet"])
    assert code == 0 and tty == "", tty


@pytest.mark.parametrize("bar", ["progress_bar", "progress_status"])
def test_an_items_title_on_the_bar_is_shown_as_it_is(
    monkeypatch: pytest.MonkeyPatch, bar: str
) -> None:
    """The bar's last column is an item's title (or a step): rich markup in it (`[/x]` raised
    a MarkupError) and `:emoji:` codes are shown as written."""
    import io

    from rich.console import Console

    from arkai.cli import output

    buf = io.StringIO()
    monkeypatch.setattr(output, "stderr", Console(file=buf, force_terminal=True, width=120))
    monkeypatch.setattr(output, "show_progress", lambda quiet: True)
    with getattr(output, bar)("extract", quiet=False) as update:
        if bar == "progress_bar":
            update(1, 2, "Plan [/x] :rocket:")
        else:
            update("Plan [/x] :rocket:")
    assert "Plan [/x] :rocket:" in buf.getvalue() and "🚀" not in buf.getvalue()
