"""Operations are the only entry: the CLI imports nothing below ``arkai.ops`` and every
operation takes the :class:`~arkai.adapters.repo.Repo`, whose params are read once."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Runner

PACKAGE = ROOT / "src" / "arkai"
#: What a CLI module may import besides arkai.cli, arkai.ops, arkai.model and arkai.errors:
#: the one JSON writer, the one Markdown escaper and the secret scrubber (pure output helpers).
CLI_MAY_ALSO_IMPORT = {
    "arkai.core.canonjson",
    "arkai.core.escape",
    "arkai.core.redact",
    "arkai.core.grammar",
}
#: Operations that work on no knowledge repo: `arkai init` creates one, `arkai eval` reads a
#: labelled corpus folder.
NO_REPO = {"init.py", "eval.py", "verify.py"}  # verify reads a SciFact corpus, not a repo


def _arkai_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arkai"):
            found |= {
                f"{node.module}.{a.name}" if node.module == "arkai.core" else node.module
                for a in node.names
            }
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("arkai")}
    return found


def test_the_cli_imports_only_operations() -> None:
    # arkai.tools: the tool registry, an entry layer above ops (`arkai mcp`, `arkai agent`).
    allowed = ("arkai.cli", "arkai.tools", "arkai.ops", "arkai.model", "arkai.errors")
    reached = {
        f"{path.name}: {name}"
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        for name in _arkai_imports(path)
        if not name.startswith(allowed) and name not in CLI_MAY_ALSO_IMPORT
    }
    assert not reached, f"the CLI reaches past arkai.ops: {sorted(reached)}"


def _first_param(fn: ast.FunctionDef) -> str | None:
    args = fn.args.posonlyargs + fn.args.args
    if not args or args[0].annotation is None:
        return None
    return ast.unparse(args[0].annotation)


def test_every_operation_takes_the_repo() -> None:
    modules = sorted(p for p in (PACKAGE / "ops").glob("*.py") if p.name != "__init__.py")
    assert modules
    without = []
    for path in modules:
        if path.name in NO_REPO:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        public = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        if not any(_first_param(fn) in ("Repo", "Repo | None") for fn in public):
            without.append(path.name)
    assert not without, f"operations with no `op(repo: Repo, …)`: {without}"


def _names_used_by_entry_points() -> set[tuple[str, str]]:
    """(ops module, function) pairs that cli/ and tools/ import or reach as ``module.name``."""
    used: set[tuple[str, str]] = set()
    for path in [*(PACKAGE / "cli").glob("*.py"), *(PACKAGE / "tools").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules: dict[str, str] = {}  # local name → ops module, for `from arkai.ops import x`
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("arkai.ops"):
                for a in node.names:
                    if node.module == "arkai.ops":
                        modules[a.asname or a.name] = a.name
                    else:
                        used.add((str(node.module).rsplit(".", 1)[-1], a.name))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
                continue
            if node.value.id in modules:
                used.add((modules[node.value.id], node.attr))
    return used


#: What an operation may not return: a bare dict or list of dicts, or Any (untyped).
UNTYPED = re.compile(r"^(dict\b|list\[dict\b|list$|Any$|Mapping\b|list\[Any\]|object$)")


def _untyped_operations() -> list[str]:
    used = _names_used_by_entry_points()
    found = []
    for path in sorted((PACKAGE / "ops").glob("*.py")):
        for fn in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                continue
            is_op = _first_param(fn) in ("Repo", "Repo | None") or (path.stem, fn.name) in used
            returns = ast.unparse(fn.returns) if fn.returns is not None else "Any"
            if is_op and UNTYPED.match(returns):
                found.append(f"{path.name}: {fn.name} -> {returns}")
    return found


def test_every_operation_returns_a_typed_result() -> None:
    # An operation (a public function of ops/ that takes the Repo, or that the CLI or the MCP
    # tools call) returns a typed result whose to_dict() is the --json output, never a dict.
    assert _untyped_operations() == []


def test_the_typed_result_check_finds_an_untyped_operation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The check itself: a copy of ops/ with one op returning a dict again is caught.
    ops = tmp_path / "arkai" / "ops"
    ops.mkdir(parents=True)
    for name in ("cli", "tools"):
        (tmp_path / "arkai" / name).mkdir()
    (ops / "library.py").write_text(
        "def show_item(repo: Repo, ident: str) -> dict[str, Any]: ...\n"
        "def helper(text: str) -> dict[str, Any]: ...\n"
        "def _private(repo: Repo) -> list[dict[str, Any]]: ...\n",
        encoding="utf-8",
    )
    (tmp_path / "arkai" / "tools" / "t.py").write_text(
        "from arkai.ops.library import helper\n", encoding="utf-8"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "arkai")
    assert _untyped_operations() == [
        "library.py: show_item -> dict[str, Any]",
        "library.py: helper -> dict[str, Any]",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("validate",),
        ("doctor",),
        ("evidence", "reanchor", "--all"),
    ],
    ids=lambda a: " ".join(a),
)
def test_params_are_read_once_per_command(
    kr: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    code, _, err = arkai("--repo", kr, "remember", "Bees dance to point at flowers.")
    assert code == 0, err
    from arkai.adapters import params

    reads: list[Path] = []
    real = params.read_repo_file

    def counting(path: Path, root: Path, **kw: Any) -> bytes | None:
        if path.name == "params.yaml":
            reads.append(path)
        return real(path, root, **kw)

    monkeypatch.setattr(params, "read_repo_file", counting)
    arkai("--repo", kr, *args)
    assert len(reads) <= 1, f"params.yaml read {len(reads)} times by `arkai {' '.join(args)}`"
