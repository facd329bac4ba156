"""DVC stage ``validate``: re-check digests and slice hashes; the report is a DVC metric."""

from arkai.cli import main

raise SystemExit(main(["validate", "--report", "reports/validation.json"]))
