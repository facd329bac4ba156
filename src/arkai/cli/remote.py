"""``arkai remote add|list``: the DVC remote a team shares caches through (docs/team.md)."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, progress_bar, stderr
from arkai.errors import EXIT_PIPELINE


@click.group()
def remote() -> None:
    """Share provider responses, embeddings and built indexes through a DVC remote."""


@remote.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--default", "-d", "default", is_flag=True, help="Make it the default remote.")
@click.option("--endpoint-url", help="S3-compatible server (MinIO, Ceph…) for an s3:// URL.")
@click.option("--keyfile", help="Private key for an ssh:// URL (kept in .dvc/config.local).")
@click.option("--force", "-f", is_flag=True, help="Replace a remote of the same name.")
@json_option
@click.pass_context
def add_cmd(
    ctx: click.Context,
    name: str,
    url: str,
    default: bool,
    endpoint_url: str | None,
    keyfile: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Add remote NAME at URL (s3://bucket/path, ssh://user@host/path or a local folder);
    then `arkai remote push` sends the caches there and `arkai remote pull` in another clone
    fetches them."""
    from arkai.ops.remote import add_remote

    added = add_remote(
        get_repo(ctx),
        name,
        url,
        default=default,
        endpoint_url=endpoint_url,
        keyfile=keyfile,
        force=force,
    )
    if as_json:
        emit_json({"remote": added.to_dict()})
        return
    click.echo(f"remote {added.name}: {added.url}{' (default)' if added.default else ''}")
    click.echo("commit .dvc/config to share it; `arkai remote push` sends the caches there")


@remote.command("list")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the configured remotes, the default one marked."""
    from arkai.ops.remote import list_remotes

    remotes = list_remotes(get_repo(ctx))
    if as_json:
        emit_json({"remotes": [r.to_dict() for r in remotes]})
        return
    for r in remotes:
        mark = "\t(default)" if r.default else ""
        click.echo(f"{r.name}\t{r.url}{mark}")


def _transfer(ctx: click.Context, direction: str, name: str | None, as_json: bool) -> None:
    from arkai.ops.remote import pull, push

    op = push if direction == "push" else pull
    with progress_bar(f"remote {direction}", quiet=as_json) as bar:
        done = op(get_repo(ctx), name, progress=bar)
    responses = done.responses
    for bad in responses.damaged:
        stderr.print(f"damaged response {bad.where}: {bad.problem} (not used)")
    if done.dvc_error is not None:
        stderr.print(f"dvc {direction} failed: {done.dvc_error}")
    if as_json:
        emit_json(done.to_dict())
    else:
        verb = "sent" if direction == "push" else "received"
        click.echo(f"remote {done.remote}: {done.url}")
        click.echo(f"dvc {direction}: {'failed' if done.dvc_error else done.dvc or 'done'}")
        click.echo(
            f"responses: {responses.transferred} {verb}, {responses.present} already there"
            + (f", {len(responses.damaged)} damaged (not used)" if responses.damaged else "")
        )
    if not done.ok:
        ctx.exit(EXIT_PIPELINE)


@remote.command("push")
@click.argument("name", required=False)
@json_option
@click.pass_context
def push_cmd(ctx: click.Context, name: str | None, as_json: bool) -> None:
    """`dvc push` to remote NAME (default: the default remote), then send the provider
    responses it lacks; `dvc push` alone cannot carry them."""
    _transfer(ctx, "push", name, as_json)


@remote.command("pull")
@click.argument("name", required=False)
@json_option
@click.pass_context
def pull_cmd(ctx: click.Context, name: str | None, as_json: bool) -> None:
    """`dvc pull` from remote NAME (default: the default remote), then fetch the provider
    responses this clone lacks, each checked before it is used."""
    _transfer(ctx, "pull", name, as_json)
