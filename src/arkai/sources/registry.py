"""Source kinds are plugins: built-ins register through the ``arkai.sources`` entry-point group
exactly as a third-party package would. Two plugins claiming one name is an error at load time.
"""

from __future__ import annotations

from functools import cache

from arkai.adapters.plugins import load_plugins
from arkai.errors import InvalidInputError
from arkai.sources.base import Source

GROUP = "arkai.sources"
#: Layer-1 routing order: specific kinds before general ones (an ``.json`` chat export before a
#: youtube-transcript-api ``.json``; any http(s) URL falls to ``article`` last).
ORDER = ("youtube", "podcast", "chat", "pdf", "note", "transcript", "article")
#: Names people may give with ``--type`` for a kind: its own, or its plural (a library folder).
ALIASES = {alias: kind for kind in ORDER for alias in (kind, kind + "s") if alias != "youtubes"}


@cache
def get_sources() -> dict[str, Source]:
    """Every registered source kind by name, in routing order (unknown plugins last)."""
    found: dict[str, Source] = {}
    for name, obj in load_plugins(GROUP, "source").items():
        source = obj() if isinstance(obj, type) else obj
        found[str(getattr(source, "name", name))] = source
    rank = {n: i for i, n in enumerate(ORDER)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))


def get_source(name: str) -> Source:
    """The source kind called ``name`` (or an alias such as ``articles``)."""
    sources = get_sources()
    key = ALIASES.get(name, name)
    if key not in sources:
        raise InvalidInputError(f"unknown source kind {name!r}; known: {', '.join(sources)}")
    return sources[key]
