"""The index stage's per-item cache: what it derives from one item's files (chunks, phrase
counts, graph contributions), keyed by a digest of those files, so an unchanged item is not
read, chunked or analysed again (docs/index-format.md, "Incremental builds").

Canonical JSON files per item and part, ``.arkai/index-cache/<2 chars>/<content id>.<part>.json``
(local and derived like the rest of ``.arkai/``: git-ignored, not a DVC output, rebuilt when
absent): a header line, then the data, each one line of canonical JSON::

    {"digest": "sha256:…", "key": "sha256:…", "version": 1}
    {…}

``key`` is the caller's digest of the item's inputs; ``digest`` is the SHA-256 of the bytes
after the header line (checked before they are parsed). An entry is used only when it parses,
has this version, the expected key and a matching digest — anything else (a truncated file, an
edited one, a stale one) is a miss that the caller rebuilds and :attr:`ItemCache.rejected`
counts; it is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from arkai.adapters.fs import atomic_write_bytes
from arkai.core import canonjson

CACHE_DIR = Path(".arkai") / "index-cache"
CACHE_VERSION = 1


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class ItemCache:
    """Digest-checked per-item entries under ``<root>/.arkai/index-cache``."""

    def __init__(self, root: Path) -> None:
        self.folder = root / CACHE_DIR
        self.hits = 0
        self.misses = 0
        self.rejected = 0
        """Entries that existed but failed a check (damaged or stale): rebuilt, not used."""

    def path(self, content_id: str, part: str) -> Path:
        safe = "".join(c for c in content_id if c.isalnum() or c in "-_") or "_"
        return self.folder / safe[:2] / f"{safe}.{part}.json"

    def get(self, content_id: str, key: str, part: str) -> dict[str, Any] | None:
        """The entry's data when it is intact and made from inputs with this ``key``."""
        body = self.get_bytes(content_id, key, part)
        if body is None:
            return None
        try:
            data = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):
            self.hits -= 1  # intact bytes, but not a record: counted as a rejected entry
            self._reject()
            return None
        return data

    def get_bytes(self, content_id: str, key: str, part: str) -> bytes | None:
        """The entry's body, unparsed (a part stored with :meth:`put_bytes`), when it is
        intact and made from inputs with this ``key``."""
        path = self.path(content_id, part)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        header, _, body = raw.partition(b"\n")
        try:
            entry = json.loads(header.decode("utf-8"))
            ok = (
                isinstance(entry, dict)
                and entry.get("version") == CACHE_VERSION
                and entry.get("key") == key
                and entry.get("digest") == _digest(body)
            )
        except (ValueError, UnicodeDecodeError):
            ok = False
        if not ok:
            self._reject()
            return None
        self.hits += 1
        return body

    def _reject(self) -> None:
        self.rejected += 1
        self.misses += 1

    def put(self, content_id: str, key: str, part: str, data: dict[str, Any]) -> None:
        self.put_bytes(content_id, key, part, canonjson.dumps_line(data).encode("utf-8"))

    def put_bytes(self, content_id: str, key: str, part: str, body: bytes) -> None:
        """Store ``body`` as it is (read back with :meth:`get_bytes`)."""
        header = {"digest": _digest(body), "key": key, "version": CACHE_VERSION}
        # Derived data, rebuilt when lost: no fsync (a torn entry fails its digest check).
        atomic_write_bytes(
            self.path(content_id, part),
            canonjson.dumps_line(header).encode("utf-8") + body,
            fsync=False,
        )

    def prune(self, keep: set[str]) -> int:
        """Remove the entries of items not in ``keep`` (content IDs); how many went."""
        if not self.folder.is_dir():
            return 0
        wanted = {self.path(cid, "x").name.split(".")[0] for cid in keep}
        removed = 0
        for sub in self.folder.iterdir():
            if not sub.is_dir():
                continue
            for p in sub.iterdir():
                if p.name.split(".")[0] not in wanted:
                    os.unlink(p)
                    removed += 1
        return removed
