"""DVC stage ``condense``: every transcript in chunks at message boundaries, each condensed with
byte-exact quotes (``condensed/``), and the manifest of condensed/; the ``index`` stage then
builds the shards from them."""

from arkai.adapters.manifest import then_write
from arkai.cli.condense import show_condense
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.condense import condense

exit_stage(
    run_stage("condense",
              lambda repo, bar: then_write(condense(repo, shards=False, progress=bar),
                                           repo.root, "condensed"),
              show_condense)
)  # fmt: skip
