"""DVC stage ``site``: the library as a static MkDocs-Material site in site/ (incremental), and
site/'s manifest, the stage's DVC output; pages edited by hand are rendered again
(docs/scale.md)."""

from arkai.adapters.manifest import rebuild
from arkai.cli.site import show_site
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.site import build

exit_stage(
    run_stage("site",
              lambda repo, bar: rebuild(repo.root, "site", lambda: build(repo, progress=bar)),
              show_site)
)  # fmt: skip
