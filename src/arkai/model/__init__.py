"""Frozen data types shared by every layer. Nothing here reads files or the clock."""

from arkai.model.evidence import EvidenceLine, Resolution, Span
from arkai.model.status import METHODS, REASONS, STATUSES

__all__ = ["METHODS", "REASONS", "STATUSES", "EvidenceLine", "Resolution", "Span"]
