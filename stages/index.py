"""DVC stage ``index``: catalog, search chunks, BM25 + vector indexes, topics and graph."""

from arkai.cli import main

raise SystemExit(main(["reindex"]))
