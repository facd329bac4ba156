"""``arkai mcp`` (the tool registry as an MCP server) and ``arkai agent`` (the agent hook
loop); docs/agents.md."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say
from arkai.errors import InvalidInputError

if TYPE_CHECKING:
    from arkai.tools.registry import Limits


def _limits(root: Path) -> Limits:
    from arkai.ops import Repo
    from arkai.tools.registry import Limits

    repo = Repo.at(root)
    kb = repo.param("mcp.max_reply_kb", 512)
    timeout = repo.param("mcp.timeout_s", 60)
    if not isinstance(kb, int) or isinstance(kb, bool) or kb < 1:
        raise InvalidInputError("mcp.max_reply_kb: expected a positive integer")
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise InvalidInputError("mcp.timeout_s: expected a positive number of seconds")
    return Limits(max_reply_bytes=kb * 1024, timeout_s=float(timeout))


@click.command()
@click.option("--http", "http", is_flag=True,
              help="Serve Streamable HTTP on 127.0.0.1 (default: stdio).")  # fmt: skip
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="With --http: the port (0: any free one, printed on stderr).")  # fmt: skip
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path),
              help="With --http: bearer tokens, one a line (TOKEN or ROLE TOKEN); also "
                   "$ARKAI_MCP_TOKEN (editor) and $ARKAI_MCP_VIEWER_TOKEN (viewer).")  # fmt: skip
@click.option("--allow-write", is_flag=True,
              help="Let editors call the write tools (add, remember, review).")  # fmt: skip
@click.option("--list", "list_tools", is_flag=True,
              help="Print the declared tools and their token cost, then exit.")  # fmt: skip
@json_option
@click.pass_context
def mcp(ctx: click.Context, http: bool, port: int, token_file: Path | None, allow_write: bool,
        list_tools: bool, as_json: bool) -> None:  # fmt: skip
    """Serve the library to agents over MCP: read tools (search, context, show, library,
    topics, evidence_show, validate, diff, log, runs, health) and, with --allow-write, write
    tools (add, remember, review). Every call is audited in .arkai/audit/."""
    from arkai.ops import Repo
    from arkai.tools import server
    from arkai.tools.catalog import default_registry

    registry = default_registry()
    if list_tools:
        from arkai.tools.declare import tools_list

        listing = tools_list(registry, allow_write=allow_write)
        if as_json:
            emit_json(listing)
        else:
            for tool in listing["tools"]:
                say(f"{tool['name']:<14} {tool['description']}")
            say(f"{len(listing['tools'])} tools, {listing['tokens']} tokens declared")  # fmt: skip
        return
    root = get_repo(ctx).root
    repo = Repo.at(root)
    limits = _limits(root)
    opts = server.ServeOptions(allow_write=allow_write, limits=limits)
    if not http:
        if token_file is not None:
            raise click.UsageError("--token-file applies to --http")
        server.serve_stdio(repo, registry, opts)
        return
    from arkai.tools.auth import ENV_EDITOR, ENV_VIEWER, load_tokens

    tokens = load_tokens(token_file, os.environ)
    if not tokens:
        raise InvalidInputError(
            "arkai mcp --http needs a bearer token",
            hint=f"set ${ENV_EDITOR} (editor) or ${ENV_VIEWER} (viewer), or give --token-file",
        )

    def ready(bound: int) -> None:
        click.echo(f"arkai mcp: serving http://127.0.0.1:{bound}/mcp", err=True)
        sys.stderr.flush()

    server.serve_http(repo, registry, opts, tokens, port, ready=ready)


@click.command()
@click.argument("task", nargs=-1, required=True)
@click.option("--allow-write", is_flag=True, help="Let the agent call the write tools.")
@click.option("--max-steps", type=click.IntRange(1, 100),
              help="Hook turns before giving up (default: agent.max_steps in params).")  # fmt: skip
@json_option
@click.pass_context
def agent(ctx: click.Context, task: tuple[str, ...], allow_write: bool, max_steps: int | None,
          as_json: bool) -> None:  # fmt: skip
    """Answer TASK with the agent hook (hooks.agent in params.yaml): the hook gets the task
    and the tools, and replies with tool calls (run through the same registry, policy and
    audit as `arkai mcp`) or the final answer."""
    from arkai.ops import Repo
    from arkai.tools.agent import AgentConfig, run_agent
    from arkai.tools.catalog import default_registry

    root = get_repo(ctx).root
    repo = Repo.at(root)
    limits = _limits(root)
    config = AgentConfig.from_params(repo, max_steps)
    result = run_agent(repo, default_registry(), " ".join(task), config,
                       allow_write=allow_write, limits=limits)  # fmt: skip
    if as_json:
        emit_json(result.to_dict())
        return
    for call in result.calls:
        mark = "ok" if call["ok"] else call["code"]
        click.echo(f"arkai: step {call['step']}: {call['tool']} → {mark}", err=True)
    click.echo(result.answer)
