"""DVC stage ``validate``: re-check digests and slice hashes; the report is a DVC metric."""

from pathlib import Path

from arkai.cli.pipeline import show_validate
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.validate import validate

REPORT = Path("reports/validation.json")

exit_stage(run_stage("validate", lambda repo, _: validate(repo, report=REPORT), show_validate))
