"""``library/<item>/review.yaml``: people accept or reject claims by evidence ID.

```yaml
claims:
  75cb019d446cb067: {status: rejected, note: "misquotes the speaker", by: ana, at: 2026-11-22}
  9f150a5cbb6c4973: {status: accepted}
```

Rejected claims stay in ``evidence.jsonl`` (marked ``review.status = rejected``) and are left
out of indexes and the site's main views. The file is written by people (or ``arkai review``)
and never rewritten by the pipeline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from arkai.errors import LibraryError
from arkai.model.evidence import EvidenceLine

REVIEW_STATUSES = ("accepted", "rejected")


def load_review(path: Path) -> dict[str, dict[str, Any]]:
    """Evidence ID → review entry; a missing file is no reviews, a malformed one an error."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({exc})") from None
    if raw is None:
        return {}
    claims = raw.get("claims") if isinstance(raw, dict) else None
    if not isinstance(claims, dict):
        raise LibraryError(f"{path}: expected a mapping 'claims: {{evidence_id: {{status: …}}}}'")
    out: dict[str, dict[str, Any]] = {}
    for eid, entry in claims.items():
        if isinstance(entry, str):
            entry = {"status": entry}
        if not isinstance(entry, dict) or entry.get("status") not in REVIEW_STATUSES:
            raise LibraryError(
                f"{path}: claim {eid}: status must be one of {', '.join(REVIEW_STATUSES)}"
            )
        out[str(eid)] = {k: str(v) for k, v in entry.items() if v is not None}
    return out


def apply_review(
    lines: list[EvidenceLine], reviews: dict[str, dict[str, Any]]
) -> list[EvidenceLine]:
    """Mark each reviewed line with its review (ID prefixes of ≥ 8 characters match)."""
    if not reviews:
        return lines
    out = []
    for line in lines:
        entry = reviews.get(line.id) or next(
            (v for k, v in reviews.items() if len(k) >= 8 and line.id.startswith(k)), None
        )
        if entry is not None:
            line = EvidenceLine.from_dict({**line.to_dict(), "review": entry})
        out.append(line)
    return out


def is_rejected(line: EvidenceLine) -> bool:
    return (line.extra.get("review") or {}).get("status") == "rejected"
