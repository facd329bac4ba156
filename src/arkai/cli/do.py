"""``arkai do "words"``: words → one arkai command (:mod:`arkai.ops.intent`), checked against this
CLI's own grammar, shown, and run only when asked (``--yes``, or "y" at a prompt on a terminal).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say
from arkai.errors import InvalidInputError

#: Commands ``arkai do`` never runs: itself (no loops).
DENIED = frozenset({"do"})
#: Options that print and exit while being parsed: refused so that checking never prints.
EAGER = frozenset({"--help", "-h", "--version"})


def _package() -> Any:
    """The ``arkai.cli`` package (its ``cli`` group and ``main``), looked up at run time: this
    module is imported while the package is."""
    return importlib.import_module("arkai.cli")


def command_of(argv: list[str]) -> click.Command:
    """The CLI command ``argv`` names, after click's own parser accepted every argument
    (nothing is invoked). Raises :class:`InvalidInputError` saying what is wrong."""
    cli: click.Group = _package().cli
    if not argv:
        raise InvalidInputError("no command")
    if argv[0].startswith("-"):
        raise InvalidInputError(f"{argv[0]!r} is an option, not an arkai command")
    eager = EAGER.intersection(argv)
    if eager:
        raise InvalidInputError(f"{sorted(eager)[0]} is not run by arkai do")
    ctx = click.Context(cli, info_name="arkai", obj={"repo": None})
    cmd: click.Command = cli
    args, path = list(argv), ["arkai"]
    while isinstance(cmd, click.Group):
        if not args:
            raise InvalidInputError(f"`{' '.join(path)}` needs a sub-command")
        name = args.pop(0)
        sub = cmd.get_command(ctx, name)
        if sub is None or (len(path) == 1 and name in DENIED):
            what = "is not run by arkai do" if sub is not None else "is not an arkai command"
            raise InvalidInputError(f"{name!r} {what}")
        path.append(name)
        if isinstance(sub, click.Group):
            ctx = click.Context(sub, info_name=name, parent=ctx)
        cmd = sub
    try:
        with cmd.make_context(path[-1], args, parent=ctx):
            pass
    except click.ClickException as exc:
        raise InvalidInputError(
            f"`{' '.join(path)}` does not accept these arguments: "
            f"{exc.format_message().rstrip('.')}"
        ) from None
    return cmd


def _has_json(cmd: click.Command) -> bool:
    return any("--json" in getattr(p, "opts", ()) for p in cmd.params)


def _run(root: Path, argv: list[str], *, capture: bool) -> tuple[int, Any]:
    """Run ``arkai --repo ROOT ARGV`` in this process; its exit code, and (``capture``) what it
    printed (parsed JSON when it is JSON)."""
    main = _package().main  # exit codes are mapped there, in one place
    if not capture:
        return int(main(["--repo", str(root), *argv])), None
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = int(main(["--repo", str(root), *argv]))
    text = buf.getvalue()
    try:
        return code, json.loads(text)
    except ValueError:
        return code, text


@click.command("do")
@click.argument("words", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Run the command without asking.")
@click.option("--explain", is_flag=True, help="Say which layer chose the command, and why.")
@click.option("--provider", help="Provider for layer 3 (default: extract.provider in params).")
@json_option
@click.pass_context
def do(ctx: click.Context, words: tuple[str, ...], yes: bool, explain: bool,
       provider: str | None, as_json: bool) -> None:  # fmt: skip
    """Turn WORDS into one arkai command: URL rules, then routes learned from past successful
    runs, then the provider (pattern route_intent). The command is checked against arkai's own
    grammar and shown; it runs only with --yes (or after "y" at the prompt on a terminal)."""
    from arkai.ops import Repo
    from arkai.ops.intent import learn, plan

    root = get_repo(ctx).root
    repo = Repo(root)
    chosen = plan(repo, " ".join(words), validate=command_of, provider=provider)
    cmd = command_of(list(chosen.argv))
    run = yes
    if not yes and not as_json and sys.stdin.isatty() and sys.stdout.isatty():
        say(chosen.command)
        if explain:
            click.echo(f"  ({chosen.layer}: {chosen.why})")
        run = click.confirm("Run it?", default=False)
        shown = True
    else:
        shown = False
    out: dict[str, Any] = {**chosen.to_dict(), "ran": run, "exit_code": None, "learned": False}
    if not run:
        if as_json:
            emit_json(out)
        elif not shown:
            say(chosen.command)
            if explain:
                click.echo(f"  ({chosen.layer}: {chosen.why})")
            click.echo("not run: add --yes to run it", err=True)
        return
    argv = list(chosen.argv)
    if as_json and _has_json(cmd) and "--json" not in argv:
        argv.append("--json")
    if not as_json and not shown:
        click.echo(f"arkai do: {chosen.command}" + (f"  ({chosen.layer}: {chosen.why})"
                                                     if explain else ""), err=True)  # fmt: skip
    code, output = _run(root, argv, capture=as_json)
    out["exit_code"] = code
    if code == 0:
        out["learned"] = learn(repo, chosen)
    if as_json:
        emit_json({**out, "output": output})
    ctx.exit(code)
