"""DVC stage ``site``: the library as a static MkDocs-Material site in site/ (incremental)."""

from arkai.cli import main

raise SystemExit(main(["site", "build"]))
