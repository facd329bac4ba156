"""DVC stage ``beliefs``: replay every claim (and imported belief) into beliefs/."""

from arkai.cli.memory import show_build
from arkai.cli.stage import exit_stage, run_stage
from arkai.ops.memory import build

exit_stage(run_stage("beliefs", lambda repo, bar: build(repo, progress=bar), show_build))
