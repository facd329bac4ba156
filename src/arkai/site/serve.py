"""``arkai site serve``: generate the pages, then ``mkdocs serve`` on 127.0.0.1 only.

MkDocs watches ``.site-build/``; run ``arkai site build --no-mkdocs`` (or ``arkai site
build``) in another terminal after the library changes and the browser reloads. Pages are
re-rendered with ``--dirty`` (only changed ones), which keeps reloads fast on big libraries.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arkai.adapters import interrupt
from arkai.errors import InvalidInputError
from arkai.site.build import SiteOptions, prepare

HOST = "127.0.0.1"


def serve_command(config_file: Path, port: int) -> list[str]:
    if not 1 <= port <= 65535:
        raise InvalidInputError(f"--port {port}: expected 1–65535")
    return [sys.executable, "-m", "mkdocs", "serve", "--dirty", "-f", str(config_file),
            "-a", f"{HOST}:{port}"]  # fmt: skip


def serve(root: Path, *, port: int = 8000, options: SiteOptions | None = None) -> int:
    """Run ``mkdocs serve`` until interrupted (Ctrl-C or SIGTERM, which also stop the server
    so the port is free again); returns its exit status."""
    config_file, _, _ = prepare(root, options=options)
    with interrupt.stop_on_signals():
        proc = subprocess.Popen(serve_command(config_file, port), cwd=root)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return 130
