"""DVC stage ``extract``: claims with byte-exact spans for every library item; then the
manifests of library/ and extracted/ that the stages downstream depend on (docs/scale.md).
DVC runs it on every ``dvc repro``; with nothing changed it only stats the files. The
provider's engines load while the files are walked (``preload``: this process ends with the
stage)."""

from arkai.cli.pipeline import extract_progress, show_extract
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.extract import extract_stage

exit_stage(
    run_stage("extract",
              lambda repo, bar: extract_stage(repo, progress=extract_progress(bar),
                                              preload=True),
              show_extract)
)  # fmt: skip
