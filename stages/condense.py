"""DVC stage ``condense``: every transcript in chunks at message boundaries, each condensed with
byte-exact quotes (``condensed/``), and the manifest of condensed/; the ``index`` stage then
builds the shards from them. DVC runs it on every ``dvc repro``; with nothing changed it only
stats the files."""

from arkai.cli.condense import show_condense
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.condense import condense_stage

exit_stage(
    run_stage("condense",
              lambda repo, bar: condense_stage(repo, progress=bar),
              show_condense)
)  # fmt: skip
