"""``arkai run`` and ``arkai resume``: the seed's pipeline commands, mapped onto DVC.

arkai's pipeline is the repo's ``dvc.yaml`` (extract → condense → index → validate → site), each
stage incremental inside: an interrupted run leaves every finished item committed
(``extraction.json`` is written last), so resuming is running the pipeline again — DVC re-runs
the stages whose inputs changed and the extract stage skips the items already done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from arkai.adapters import dvc, events
from arkai.adapters.repo import Repo
from arkai.errors import InvalidInputError, PipelineError
from arkai.model.record import AsDict

__all__ = ["ResumePlan", "plan_resume", "resume", "run_pipeline"]


def run_pipeline(
    repo: Repo,
    stages: tuple[str, ...] = (),
    *,
    force: bool = False,
    notice: Callable[[str], None] | None = None,
) -> None:
    """Run the pipeline (or ``stages`` and what they depend on); raise :class:`PipelineError`
    (exit 3, resumable) when DVC fails. A file a killed DVC left torn, which would stop DVC at
    once, is set aside first (:func:`arkai.adapters.dvc.clear_torn`), and ``notice`` told."""
    for line in dvc.clear_torn(repo.root):
        if notice is not None:
            notice(line)
    code = dvc.repro(repo.root, stages, force=force)
    if code != 0:
        raise PipelineError(
            f"dvc repro failed (exit {code})",
            hint="fix the cause, then `arkai resume` (or `dvc repro`) to go on where it stopped",
        )


@dataclass(frozen=True)
class ResumePlan(AsDict):
    run_id: str
    pipeline: str
    status: str
    """``success``, ``failed``, ``interrupted``, or ``running or interrupted`` (no end event)."""
    stages: tuple[str, ...]
    """What to re-run: the run's own stage when it was one, else the whole pipeline."""

    @property
    def short_id(self) -> str:
        return events.short_run_id(self.run_id)


def plan_resume(repo: Repo, run_id: str | None = None) -> ResumePlan:
    """What resuming ``run_id`` (default: the latest run) means; a run that completed
    successfully has nothing to resume (:class:`InvalidInputError`)."""
    root = repo.root
    runs = events.list_runs(root)
    if not runs:
        raise InvalidInputError("no runs to resume", hint="`arkai run` starts the pipeline")
    rid = events.get_run(root, run_id) if run_id else runs[-1]
    evs = events.read_events(root / events.RUNS_DIR / rid / "events.jsonl")
    start = next((e for e in evs if e.get("type") == "RunStarted"), {})
    end = next((e for e in evs if e.get("type") == "RunCompleted"), None)
    status = str(end.get("status")) if end else "running or interrupted"
    pipeline = str(start.get("pipeline") or "")
    if status == "success":
        raise InvalidInputError(
            f"run {events.short_run_id(rid)} ({pipeline}) completed successfully: "
            "nothing to resume",
            hint="`arkai run` runs the pipeline again",
        )
    stages = (pipeline,) if pipeline in dvc.stage_names(root) else ()
    return ResumePlan(rid, pipeline, status, stages)


def resume(
    repo: Repo,
    run_id: str | None = None,
    *,
    dry_run: bool = False,
    announce: Callable[[ResumePlan], None] | None = None,
    notice: Callable[[str], None] | None = None,
) -> ResumePlan:
    """Resume ``run_id`` (default the latest): plan it, tell ``announce``, then (unless
    ``dry_run``) re-run its stage or the pipeline (:class:`PipelineError` if it fails again)."""
    plan = plan_resume(repo, run_id)
    if announce is not None:
        announce(plan)
    if not dry_run:
        run_pipeline(repo, plan.stages, notice=notice)
    return plan
