"""DVC stage ``site``: the library as a static MkDocs-Material site in site/ (incremental)."""

from arkai.cli.site import show_site
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.site import build

exit_stage(run_stage("site", lambda repo, bar: build(repo, progress=bar), show_site))
