"""How :func:`arkai.cli.guarded` reports what a command raised: an EOFError from a file a
command read is an error naming it, not the "aborted" of a prompt the user ended."""

from __future__ import annotations

import io
from collections.abc import Callable

import click
import pytest

from arkai.cli import guarded


def _run(body: Callable[[], object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    @click.command()
    def command() -> None:
        body()

    code = guarded(lambda: command.main(args=[], prog_name="arkai", standalone_mode=False))
    return code, capsys.readouterr().err


def test_an_eof_error_in_the_command_is_an_unexpected_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """numpy raises EOFError for an empty .npy (an index file emptied): click turned it into
    Abort, and the command said "aborted" with exit 130."""

    def read_empty() -> None:
        import numpy as np

        np.load(io.BytesIO(b""), allow_pickle=False)

    code, err = _run(read_empty, capsys)
    assert code == 1
    assert "arkai: unexpected error: EOFError: " in err and "aborted" not in err


def test_a_prompt_at_the_end_of_its_input_is_aborted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, err = _run(lambda: click.confirm("go on?", abort=True), capsys)
    assert code == 130
    assert err.rstrip().endswith("aborted") and "unexpected" not in err


def test_an_interrupt_is_interrupted(capsys: pytest.CaptureFixture[str]) -> None:
    def stop() -> None:
        raise KeyboardInterrupt

    code, err = _run(stop, capsys)
    assert code == 130 and "aborted" not in err and "unexpected" not in err
