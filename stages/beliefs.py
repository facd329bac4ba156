"""DVC stage ``beliefs``: replay every claim (and imported belief) into beliefs/."""

from arkai.cli import main

raise SystemExit(main(["memory", "build"]))
