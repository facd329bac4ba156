"""Digests and deterministic identifiers (seed 000, "Content Addressing" and "Evidence IDs")."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import BinaryIO

DIGEST_PREFIX = "sha256:"


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data`` — the form every stored digest takes."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def file_digest(fh: BinaryIO, block: int = 1 << 20) -> str:
    """``sha256:<hex>`` of what is left to read of the binary file ``fh``, read ``block``
    bytes at a time (never whole)."""
    h = hashlib.sha256()
    while data := fh.read(block):
        h.update(data)
    return DIGEST_PREFIX + h.hexdigest()


def text_digest(text: str) -> str:
    """``sha256:<hex>`` of the UTF-8 encoding of ``text``."""
    return digest(text.encode("utf-8"))


def content_id(canonical: str) -> str:
    """Content ID = ``sha256(canonical_url)[0:16]``.

    ``canonical`` is the canonical URL for web sources, or the ``file:sha256:<hex>`` reference
    built from a local file's bytes, so the same file added twice is one item.
    """
    return sha256_hex(canonical.encode("utf-8"))[:16]


def evidence_id(
    content_id: str, extractor: str, quote_sha256: str, span: tuple[int, int] | None
) -> str:
    """The seed's two-tier evidence ID.

    Without a span: ``sha256(content_id + extractor + quote_sha256)[0:16]``; with one:
    ``sha256(content_id + extractor + quote_sha256 + start + end)[0:16]``, the offsets written
    as decimal integers. Plain concatenation is collision-free here: for one quote the span length
    ``end - start`` is fixed, so two different starts can never spell the same digit string.
    """
    key = content_id + extractor + quote_sha256
    if span is not None:
        key += f"{span[0]}{span[1]}"
    return sha256_hex(key.encode("utf-8"))[:16]


def source_digest(*modules: str) -> str:
    """``sha256:<hex>`` of the source of the modules named (dotted names, each imported or
    importable): what a derived file that code makes is kept under, so that other code makes
    it again rather than trust what the old code made."""
    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(name)
        data = Path(spec.origin).read_bytes()
        h.update(b"%s\0%d\0" % (name.encode("utf-8"), len(data)) + data)
    return DIGEST_PREFIX + h.hexdigest()
