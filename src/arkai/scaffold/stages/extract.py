"""DVC stage ``extract``: claims with byte-exact spans for every library item; then the
manifests of library/ and extracted/ that the stages downstream depend on (docs/scale.md)."""

from arkai.adapters.manifest import then_write
from arkai.cli.pipeline import extract_progress, show_extract
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.extract import run_extract

exit_stage(
    run_stage("extract",
              lambda repo, bar: then_write(run_extract(repo, progress=extract_progress(bar)),
                                           repo.root, "library", "extracted"),
              show_extract)
)  # fmt: skip
