"""``arkai run`` / ``arkai resume``: the pipeline (``dvc repro``) under arkai's names."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json


@click.command(name="run")
@click.argument("stages", nargs=-1)
@click.option("--force", is_flag=True, help="Re-run the stages even when nothing changed.")
@click.pass_context
def run_(ctx: click.Context, stages: tuple[str, ...], force: bool) -> None:
    """Run the pipeline (`dvc repro`): every stage, or the STAGES named (extract, index,
    validate, site) and what they depend on. Exits 3 when a stage fails (resumable)."""
    from arkai.ops.run import run_pipeline

    run_pipeline(get_repo(ctx), stages, force=force, notice=_notice)


def _notice(message: str) -> None:
    click.echo(message, err=True)


@click.command()
@click.argument("run_id", required=False)
@click.option("--dry-run", is_flag=True, help="Only say what would be re-run.")
@json_option
@click.pass_context
def resume(ctx: click.Context, run_id: str | None, dry_run: bool, as_json: bool) -> None:
    """Resume a failed or interrupted run (RUN_ID, default the latest): re-runs its stage (or
    the pipeline), which skips every item already finished. Exits 3 if it fails again."""
    from arkai.ops.run import ResumePlan
    from arkai.ops.run import resume as resume_run

    def announce(plan: ResumePlan) -> None:
        target = " ".join(plan.stages) or "the whole pipeline"
        if as_json:
            emit_json(plan.to_dict() | {"dry_run": dry_run})
        else:
            click.echo(f"resuming run {plan.short_id} ({plan.pipeline}, {plan.status}): "
                       f"dvc repro {target}", err=True)  # fmt: skip

    resume_run(get_repo(ctx), run_id, dry_run=dry_run, announce=announce, notice=_notice)
