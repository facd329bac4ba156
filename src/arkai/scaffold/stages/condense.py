"""DVC stage ``condense``: every transcript in chunks at message boundaries, each condensed with
byte-exact quotes (``condensed/``); the ``index`` stage then builds the shards from them."""

from arkai.cli import main

raise SystemExit(main(["condense", "--no-shards"]))
