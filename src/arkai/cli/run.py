"""``arkai run`` / ``arkai resume``: the pipeline (``dvc repro``) under arkai's names."""

from __future__ import annotations

import click

from arkai.cli.common import json_option, repo_root
from arkai.cli.output import emit_json


@click.command(name="run")
@click.argument("stages", nargs=-1)
@click.option("--force", is_flag=True, help="Re-run the stages even when nothing changed.")
@click.pass_context
def run_(ctx: click.Context, stages: tuple[str, ...], force: bool) -> None:
    """Run the pipeline (`dvc repro`): every stage, or the STAGES named (extract, index,
    validate, site) and what they depend on. Exits 3 when a stage fails (resumable)."""
    from arkai.ops.run import run_pipeline

    run_pipeline(repo_root(ctx), stages, force=force)


@click.command()
@click.argument("run_id", required=False)
@click.option("--dry-run", is_flag=True, help="Only say what would be re-run.")
@json_option
@click.pass_context
def resume(ctx: click.Context, run_id: str | None, dry_run: bool, as_json: bool) -> None:
    """Resume a failed or interrupted run (RUN_ID, default the latest): re-runs its stage (or
    the pipeline), which skips every item already finished. Exits 3 if it fails again."""
    from arkai.adapters.events import short_run_id
    from arkai.ops.run import plan_resume, run_pipeline

    root = repo_root(ctx)
    plan = plan_resume(root, run_id)
    target = " ".join(plan.stages) or "the whole pipeline"
    if as_json:
        emit_json({"run_id": plan.run_id, "pipeline": plan.pipeline, "status": plan.status,
                   "stages": list(plan.stages), "dry_run": dry_run})  # fmt: skip
    else:
        click.echo(f"resuming run {short_run_id(plan.run_id)} ({plan.pipeline}, {plan.status}): "
                   f"dvc repro {target}", err=True)  # fmt: skip
    if not dry_run:
        run_pipeline(root, plan.stages)
