"""``arkai remote add|list``: the DVC remote a team shares caches through (docs/team.md)."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json


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
    then `dvc push` sends the caches there and `dvc pull` in another clone fetches them."""
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
    click.echo("commit .dvc/config to share it; `dvc push` sends the caches there")


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
