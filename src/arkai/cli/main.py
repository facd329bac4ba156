"""``python -m arkai.cli.main …`` — the CLI as a module (used by tests)."""

from arkai.cli import main

raise SystemExit(main())
