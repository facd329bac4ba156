"""Prompt patterns: loading (fabric-compatible folders), rendering, and output repair.

- :func:`get_patterns` / :func:`get_pattern` find patterns in the repo's ``patterns/``, then
  ``$ARKAI_PATTERNS_PATH``, then ``~/.config/fabric/patterns`` (:mod:`arkai.patterns.load`).
- :func:`render_system` substitutes ``{{input}}`` and ``{{name}}`` variables
  (:mod:`arkai.patterns.render`).
- :func:`parse_output` repairs fenced or chatty model output and validates it against the
  pattern's schema, raising :class:`OutputError` (:mod:`arkai.patterns.output`).
"""

from __future__ import annotations

from arkai.patterns.load import ENV_VAR, get_pattern, get_patterns, load_pattern, pattern_dirs
from arkai.patterns.model import (
    Pattern,
    SchemaDefinitionError,
    check_schema,
    first_violation,
    format_path,
    strip_annotations,
)
from arkai.patterns.output import OutputError, iter_verbatim, parse_json, parse_output
from arkai.patterns.render import (
    claims_input,
    data_notice,
    frame_input,
    input_frame,
    placeholders,
    render_system,
    split_claims_input,
)

__all__ = [
    "ENV_VAR",
    "OutputError",
    "Pattern",
    "SchemaDefinitionError",
    "check_schema",
    "claims_input",
    "data_notice",
    "first_violation",
    "format_path",
    "frame_input",
    "get_pattern",
    "get_patterns",
    "input_frame",
    "iter_verbatim",
    "load_pattern",
    "parse_json",
    "parse_output",
    "pattern_dirs",
    "placeholders",
    "render_system",
    "split_claims_input",
    "strip_annotations",
]
