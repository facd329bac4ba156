"""DVC stage ``index``: catalog, search chunks, BM25 + vector indexes, topics and graph."""

from arkai.cli.index import show_index
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.index import run_index

exit_stage(run_stage("index", lambda repo, bar: run_index(repo, progress=bar), show_index))
