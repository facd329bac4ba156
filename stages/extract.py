"""DVC stage ``extract``: claims with byte-exact spans for every library item."""

from arkai.cli.pipeline import extract_progress, show_extract
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.extract import run_extract

exit_stage(
    run_stage("extract", lambda repo, bar: run_extract(repo, progress=extract_progress(bar)),
              show_extract)
)  # fmt: skip
