"""Intent routing for ``arkai add`` (seed 000, "Intent Routing", layers 1 and 2).

Layer 1 asks each registered source kind, in order, whether its patterns match the input
(URL regexes, file extensions, content sniffing). When only the generic fallback (``article``
for any web URL) matches, layer 2 looks up the route that last succeeded for that host in
``.arkai/routes.json``. ``--type`` overrides both when that kind accepts the input.

The same file keeps ``arkai do``'s learned phrases (``"phrases"``: normalised words → the
arkai command that ran successfully for them; :func:`learn_phrase`), beside ``"hosts"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from arkai.adapters.fs import atomic_write_text
from arkai.errors import InvalidInputError
from arkai.sources.base import Source
from arkai.sources.registry import ALIASES, get_source, get_sources

ROUTES = Path(".arkai") / "routes.json"
FALLBACK = "article"
HEAD_BYTES = 65536


@dataclass(frozen=True, slots=True)
class Route:
    """Which source kind handles an input, and why."""

    source: Source
    layer: str
    """``override`` | ``reflex`` (layer 1) | ``learned`` (layer 2)."""
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source.name, "layer": self.layer, "reason": self.reason}


def is_url(ref: str) -> bool:
    """True for an ``http://`` or ``https://`` URL with a host."""
    try:
        parts = urlsplit(ref)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def host_of(ref: str) -> str:
    host = urlsplit(ref).hostname or ""
    return host.lower().removeprefix("www.")


def read_head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


def _load(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / ROUTES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(root: Path, data: dict[str, Any]) -> None:
    atomic_write_text(root / ROUTES, json.dumps(data, indent=2, sort_keys=True) + "\n")


def load_routes(root: Path) -> dict[str, str]:
    hosts = _load(root).get("hosts")
    return {str(k): str(v) for k, v in hosts.items()} if isinstance(hosts, dict) else {}


def learn_route(root: Path, ref: str, source: str) -> None:
    """Remember that ``source`` handled a URL of this host (layer 2)."""
    if not is_url(ref):
        return
    routes = load_routes(root)
    host = host_of(ref)
    if not host or routes.get(host) == source:
        return
    routes[host] = source
    _save(root, {**_load(root), "hosts": routes})


def load_phrases(root: Path) -> dict[str, list[str]]:
    """``arkai do``'s learned phrases: normalised words → argv (entries of another shape are
    skipped)."""
    phrases = _load(root).get("phrases")
    if not isinstance(phrases, dict):
        return {}
    return {
        str(k): [str(a) for a in v]
        for k, v in phrases.items()
        if isinstance(v, list) and v and all(isinstance(a, str) for a in v)
    }


def learn_phrase(root: Path, phrase: str, argv: list[str]) -> bool:
    """Remember that ``argv`` ran successfully for ``phrase`` (already normalised); True when
    the file changed."""
    phrases = load_phrases(root)
    if not phrase or phrases.get(phrase) == argv:
        return False
    phrases[phrase] = list(argv)
    _save(root, {**_load(root), "phrases": phrases})
    return True


def route(root: Path, ref: str, *, forced: str | None = None) -> Route:
    """Pick the source kind for ``ref`` (a URL or a local path)."""
    path = None if is_url(ref) else Path(ref)
    if path is not None and path.is_dir() and not path.is_symlink():
        raise InvalidInputError(f"{ref}: is a directory with no source files in it")
    head = read_head(path) if path is not None and path.is_file() else b""
    if forced is not None and ALIASES.get(forced, forced) in get_sources():
        source = get_source(forced)
        if source.match(ref, path, head):
            return Route(source, "override", f"--type {forced}")
    matches = [s for s in get_sources().values() if s.match(ref, path, head)]
    specific = [s for s in matches if s.name != FALLBACK]
    if specific:
        return Route(specific[0], "reflex", f"{specific[0].name} pattern matched")
    if path is None:
        learned = load_routes(root).get(host_of(ref))
        if learned and learned in get_sources():
            return Route(get_source(learned), "learned", f"{host_of(ref)} was {learned} before")
    if matches:
        return Route(matches[0], "reflex", f"{matches[0].name} pattern matched")
    if path is not None and not path.exists() and not path.is_symlink():
        raise InvalidInputError(f"{ref}: no such file")
    raise InvalidInputError(
        f"{ref}: cannot tell what kind of source this is",
        hint="give --type (youtube, podcast, article, pdf, chat, transcript, note)",
    )
