"""DVC stage ``extract``: claims with byte-exact spans for every library item."""

from arkai.cli import main

raise SystemExit(main(["extract"]))
