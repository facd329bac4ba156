"""Finding and loading patterns (DESIGN §5).

A pattern is a folder holding ``system.md`` — fabric's layout, so fabric users' own patterns
work unchanged — and optionally ``pattern.yaml``::

    name: extract_claims        # must equal the folder name when given
    version: 2                  # integer, bumped when the output contract changes
    description: One line.
    output: {type: array, ...}  # JSON schema of the output (subset: arkai.patterns.model)
    variables: {max_claims: 12} # defaults for {{name}} placeholders (scalars)
    input_delimiters:           # optional: the input is sent between these, marked as data
      open: "<<<INPUT {nonce}>>>"
      close: "<<<END INPUT {nonce}>>>"

Keys starting with ``x-`` are allowed for extensions; any other key is an error, so a typo such
as ``ouput`` cannot silently drop the schema. Without ``pattern.yaml`` a pattern has version
``"0"``, no schema (free-text output) and no variable defaults.

Search order (the first directory holding a pattern wins, so a repo can override a user's
pattern and a user can shadow fabric's): the knowledge repo's ``patterns/``, then every
directory in ``$ARKAI_PATTERNS_PATH`` (``os.pathsep``-separated, ``~`` expanded), then
``~/.config/fabric/patterns``. Shadowed patterns are never read, so a broken copy further down
the path does no harm.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from arkai.adapters.fs import read_repo_file
from arkai.core.hashing import digest
from arkai.errors import LibraryError, NotFoundError
from arkai.patterns.model import Pattern, SchemaDefinitionError, Source, check_schema, json_type
from arkai.patterns.render import VARIABLE_NAME

__all__ = ["ENV_VAR", "Pattern", "get_pattern", "get_patterns", "load_pattern", "pattern_dirs"]

ENV_VAR = "ARKAI_PATTERNS_PATH"
REPO_DIR = "patterns"
PACKAGED = Path(__file__).resolve().parent.parent / "scaffold" / "patterns"
SYSTEM_FILE = "system.md"
META_FILE = "pattern.yaml"
_META_KEYS = frozenset(
    ["name", "version", "description", "output", "variables", "input_delimiters"]
)


def pattern_dirs(root: Path | None) -> list[Path]:
    """Directories searched for patterns, highest precedence first: ``root/patterns`` (when
    ``root`` is given), each entry of ``$ARKAI_PATTERNS_PATH``, ``~/.config/fabric/patterns``,
    then the patterns packaged with arkai.

    Directories that do not exist are listed too (they are skipped when searching); a
    directory named twice is listed once, at its first place.
    """
    dirs: list[Path] = []
    if root is not None:
        dirs.append(root / REPO_DIR)
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()).expanduser())
    dirs.append(Path.home() / ".config" / "fabric" / "patterns")
    # Last: the patterns arkai ships (what `arkai init` copies), so they work outside a repo.
    dirs.append(PACKAGED)
    seen: set[Path] = set()
    out: list[Path] = []
    for d in dirs:
        key = d.resolve() if d.exists() else d.absolute()
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _scan(root: Path | None) -> dict[str, tuple[Path, Source]]:
    """Pattern name → (folder, source) for every visible pattern, precedence applied."""
    found: dict[str, tuple[Path, Source]] = {}
    for i, base in enumerate(pattern_dirs(root)):
        source: Source = (
            "repo" if root is not None and i == 0 else "packaged" if base == PACKAGED else "user"
        )
        try:
            children = sorted(base.iterdir(), key=lambda p: p.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise LibraryError(f"{base}: cannot list pattern directory: {exc}") from None
        for child in children:
            if child.name not in found and (child / SYSTEM_FILE).is_file():
                found[child.name] = (child, source)
    return found


def get_patterns(root: Path | None) -> dict[str, Pattern]:
    """Every visible pattern by name, sorted by name; the first directory holding a name wins.
    A folder is a pattern when it holds ``system.md``."""
    return {
        name: load_pattern(path, source) for name, (path, source) in sorted(_scan(root).items())
    }


def get_pattern(name: str, root: Path | None) -> Pattern:
    """The pattern called ``name``; :class:`NotFoundError` (naming close matches) if none."""
    found = _scan(root)
    if name in found:
        path, source = found[name]
        return load_pattern(path, source)
    close = difflib.get_close_matches(name, list(found), n=5, cutoff=0.6)
    if close:
        hint = "did you mean: " + ", ".join(close)
    elif found:
        hint = "available: " + ", ".join(sorted(found))
    else:
        hint = "no patterns found; searched " + ", ".join(str(d) for d in pattern_dirs(root))
    raise NotFoundError(f"pattern {name!r} not found", hint=hint)


def load_pattern(path: Path, source: Source = "user") -> Pattern:
    """Load the pattern folder ``path``. :class:`LibraryError` names the file at fault."""
    system_path = path / SYSTEM_FILE
    meta_path = path / META_FILE

    def read(file: Path) -> bytes:
        # The repo's own patterns are library content: regular files only, never a link out of
        # the repo. Pattern folders a person configured elsewhere (fabric's) are read as they are.
        if source == "repo":
            data = read_repo_file(file, path.parent)
            assert data is not None
            return data
        return file.read_bytes()

    try:
        system_bytes = read(system_path)
    except OSError as exc:
        raise LibraryError(f"{system_path}: cannot read: {exc}") from None
    try:
        system = system_bytes.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise LibraryError(f"{system_path}: not UTF-8 text ({exc.reason})") from None
    try:
        meta_bytes = read(meta_path)
    except FileNotFoundError:
        meta_bytes = None
    except OSError as exc:
        raise LibraryError(f"{meta_path}: cannot read: {exc}") from None
    meta = _parse_meta(meta_path, meta_bytes, path.name) if meta_bytes is not None else {}
    return Pattern(
        name=path.name,
        path=path,
        system=system,
        version=meta.get("version", "0"),
        description=meta.get("description", ""),
        schema=meta.get("output"),
        variables=meta.get("variables", {}),
        digest=digest(system_bytes + b"\0" + (meta_bytes or b"")),
        source=source,
        input_delimiters=meta.get("input_delimiters"),
    )


def _parse_meta(file: Path, data: bytes, folder: str) -> dict[str, Any]:
    def bad(problem: str) -> LibraryError:
        return LibraryError(f"{file}: {problem}")

    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise bad(f"not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1} col {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or "malformed"
        raise bad(f"invalid YAML{at}: {problem}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise bad(f"expected a mapping, got {json_type(raw)}")
    unknown = sorted(
        str(k) for k in raw if str(k) not in _META_KEYS and not str(k).startswith("x-")
    )
    if unknown:
        raise bad(f"unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(_META_KEYS))}")
    out: dict[str, Any] = {}
    name = raw.get("name")
    if name is not None and name != folder:
        raise bad(f"name {name!r} does not match the folder name {folder!r}")
    if "version" in raw:
        version = raw["version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise bad(f"version must be a non-negative integer, got {version!r}")
        out["version"] = str(version)
    description = raw.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise bad("description must be a string")
        out["description"] = " ".join(description.split())
    schema = raw.get("output")
    if schema is not None:
        try:
            check_schema(schema)
        except SchemaDefinitionError as exc:
            raise bad(f"output schema: {exc}") from None
        if not isinstance(schema, dict):
            raise bad("output must be a JSON schema mapping")
        out["output"] = schema
    variables = raw.get("variables")
    if variables is not None:
        if not isinstance(variables, dict):
            raise bad("variables must be a mapping of name: default")
        for key in variables:
            if not isinstance(key, str) or not VARIABLE_NAME.fullmatch(key):
                raise bad(
                    f"variable name {key!r} is not a placeholder name (letters, digits, _ . -; "
                    "quote it if YAML read it as a boolean or number)"
                )
        out["variables"] = {k: _scalar(bad, k, v) for k, v in variables.items()}
    delimiters = raw.get("input_delimiters")
    if delimiters is not None:
        out["input_delimiters"] = _delimiters(bad, delimiters)
    return out


def _delimiters(bad: Callable[[str], LibraryError], value: Any) -> tuple[str, str]:
    """``input_delimiters``: ``{open: str, close: str}``, two distinct one-line strings."""
    if not isinstance(value, dict) or set(value) != {"open", "close"}:
        raise bad("input_delimiters must be a mapping with exactly the keys open and close")
    opening, closing = value["open"], value["close"]
    for name, text in (("open", opening), ("close", closing)):
        if not isinstance(text, str) or not text.strip() or "\n" in text or "\r" in text:
            raise bad(f"input_delimiters.{name} must be a non-empty one-line string")
    if opening == closing:
        raise bad("input_delimiters.open and .close must differ")
    return opening, closing


def _scalar(bad: Callable[[str], LibraryError], name: str, value: Any) -> str:
    """A variable default as the string substituted into the prompt."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    raise bad(f"variables.{name} must be a string, number or boolean")
