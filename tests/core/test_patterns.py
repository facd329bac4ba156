"""Patterns: loading and precedence, digests, rendering, and the shipped patterns' contract."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.errors import InvalidInputError, LibraryError, NotFoundError
from arkai.patterns import (
    ENV_VAR,
    OutputError,
    Pattern,
    SchemaDefinitionError,
    check_schema,
    claims_input,
    get_pattern,
    get_patterns,
    iter_verbatim,
    load_pattern,
    parse_output,
    pattern_dirs,
    placeholders,
    render_system,
    split_claims_input,
    strip_annotations,
)
from arkai.patterns.load import PACKAGED

ROOT = Path(__file__).resolve().parents[2]
SCAFFOLD = ROOT / "src" / "arkai" / "scaffold" / "patterns"
EXAMPLES = yaml.safe_load((ROOT / "tests/fixtures/patterns/examples.yaml").read_text("utf-8"))
SHIPPED = sorted(p.name for p in SCAFFOLD.iterdir() if (p / "system.md").is_file())
REQUIRED = [
    "extract_claims", "extract_entities", "extract_wisdom",
    "summarize", "condense_chat", "validate_claims",
]  # fmt: skip
HARD_RULE = (
    "HARD RULE: quotes are verbatim substrings of the input. Copy every quote character for "
    "character — same words, spelling, punctuation, capitalisation and spacing — from one place "
    "in the input; never paraphrase, correct, translate, shorten with an ellipsis, or join "
    "pieces from different places."
)
SECTIONS = ["# IDENTITY and PURPOSE", "# STEPS", "# OUTPUT INSTRUCTIONS", "# INPUT"]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME and no ARKAI_PATTERNS_PATH, so the machine's own patterns never leak in."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(ENV_VAR, raising=False)
    return home


def write_pattern(base: Path, name: str, system: str, meta: str | None = None) -> Path:
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "system.md").write_text(system, encoding="utf-8")
    if meta is not None:
        (folder / "pattern.yaml").write_text(meta, encoding="utf-8")
    return folder


# --------------------------------------------------------------------------------------------
# Loading


def test_pattern_dirs_order(
    tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv(ENV_VAR, f"{a}{os.pathsep}{b}")
    fabric = isolated / ".config" / "fabric" / "patterns"
    packaged = PACKAGED
    assert pattern_dirs(tmp_path / "kr") == [tmp_path / "kr" / "patterns", a, b, fabric, packaged]
    assert pattern_dirs(None) == [a, b, fabric, packaged]


def test_precedence_repo_then_env_then_fabric(
    tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "kr"
    env1, env2 = tmp_path / "env1", tmp_path / "env2"
    fabric = isolated / ".config" / "fabric" / "patterns"
    for base in (repo / "patterns", env1, env2, fabric):
        write_pattern(base, "shared", f"from {base}\n")
    write_pattern(env1, "env_and_fabric", "env1\n")
    write_pattern(fabric, "env_and_fabric", "fabric\n")
    write_pattern(env2, "env2_only", "env2\n")
    write_pattern(fabric, "fabric_only", "fabric\n")
    (fabric / "not_a_pattern").mkdir()  # no system.md
    monkeypatch.setenv(ENV_VAR, os.pathsep.join([str(env1), "", str(env2)]))

    found = get_patterns(repo)
    mine = [name for name, p in found.items() if p.source != "packaged"]
    assert mine == ["env2_only", "env_and_fabric", "fabric_only", "shared"]
    assert found["extract_claims"].source == "packaged"
    assert found["shared"].system == f"from {repo / 'patterns'}\n"
    assert found["shared"].source == "repo"
    assert found["env_and_fabric"].system == "env1\n"
    assert found["env_and_fabric"].source == "user"
    assert found["env2_only"].path == env2 / "env2_only"
    assert found["fabric_only"].system == "fabric\n"
    assert get_pattern("env_and_fabric", repo).system == "env1\n"

    # Without a repo, the environment comes first.
    assert get_patterns(None)["shared"].system == f"from {env1}\n"
    # Without the variable, fabric's folder still counts.
    monkeypatch.delenv(ENV_VAR)
    assert get_pattern("env_and_fabric", repo).system == "fabric\n"


def test_shadowed_broken_pattern_is_never_read(tmp_path: Path, isolated: Path) -> None:
    repo = tmp_path / "kr"
    write_pattern(repo / "patterns", "p", "good\n", "version: 3\n")
    write_pattern(isolated / ".config/fabric/patterns", "p", "bad\n", "version: [\n")
    assert get_pattern("p", repo).version == "3"


def test_fabric_pattern_without_yaml(tmp_path: Path, isolated: Path) -> None:
    text = "# IDENTITY and PURPOSE\n\nYou are {{role}}.\n\n# INPUT\n\nINPUT:\n"
    folder = write_pattern(isolated / ".config/fabric/patterns", "my_fabric", text)
    p = get_pattern("my_fabric", tmp_path / "kr")
    assert p == Pattern(
        name="my_fabric",
        path=folder,
        system=text,
        version="0",
        description="",
        schema=None,
        variables={},
        digest=p.digest,
        source="user",
    )
    assert p.digest.startswith("sha256:") and len(p.digest) == 71
    # No {{input}}: the caller sends the input as the user message.
    system, embedded = render_system(p, {"role": "an editor"}, "some input")
    assert system == text.replace("{{role}}", "an editor")
    assert embedded is False
    # Output without a schema: the first JSON value.
    assert parse_output(p, 'ok: {"a": 1}') == {"a": 1}
    hash(p)  # usable as a dict key despite its dict fields


def test_pattern_yaml_fields(tmp_path: Path) -> None:
    meta = (
        "name: p\nversion: 4\ndescription: |\n  Two\n  lines.\n"
        "output: {type: array, items: {type: string, x-verbatim: true}}\n"
        "variables: {n: 3, ratio: 0.5, flag: true, 'off': false, none: null, word: hi}\n"
        "x-notes: anything\n"
    )
    p = load_pattern(write_pattern(tmp_path, "p", "s", meta), "repo")
    assert p.version == "4"
    assert p.description == "Two lines."
    assert p.schema == {"type": "array", "items": {"type": "string", "x-verbatim": True}}
    assert p.variables == {
        "n": "3", "ratio": "0.5", "flag": "true", "off": "false", "none": "", "word": "hi",
    }  # fmt: skip
    assert p.source == "repo"


@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ("version: [1\n", "invalid YAML at line"),
        ("- a list\n", "expected a mapping, got array"),
        ("version: '2'\n", "version must be a non-negative integer"),
        ("version: true\n", "version must be a non-negative integer"),
        ("name: other\n", "name 'other' does not match the folder name 'p'"),
        ("ouput: {type: array}\n", "unknown key(s) ouput"),
        ("output: {type: arrray}\n", "output schema: $.type: must be one of"),
        ("output: {type: array, item: {}}\n", "output schema: $.item: unsupported keyword"),
        ("output: {properties: {a: {minLength: -1}}}\n",
         "output schema: $.properties.a.minLength: must be a non-negative integer"),
        ("variables: {v: [1, 2]}\n", "variables.v must be a string, number or boolean"),
        ("variables: [a]\n", "variables must be a mapping"),
        ("variables: {off: 1}\n", "variable name False is not a placeholder name"),
        ("variables: {'a b': 1}\n", "variable name 'a b' is not a placeholder name"),
        ("description: 3\n", "description must be a string"),
    ],
)  # fmt: skip
def test_malformed_pattern_yaml(tmp_path: Path, meta: str, problem: str) -> None:
    folder = write_pattern(tmp_path / "patterns", "p", "s", meta)
    with pytest.raises(LibraryError) as info:
        get_pattern("p", tmp_path)
    assert str(folder / "pattern.yaml") in str(info.value)
    assert problem in str(info.value)


def test_bad_system_md_names_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "patterns" / "p"
    folder.mkdir(parents=True)
    (folder / "system.md").write_bytes(b"\xff\xfe bad")
    with pytest.raises(LibraryError, match=re.escape(str(folder / "system.md"))):
        get_pattern("p", tmp_path)


def test_not_found_lists_close_names(tmp_path: Path) -> None:
    for name in ("extract_claims", "extract_entities", "summarize"):
        write_pattern(tmp_path / "patterns", name, "s")
    with pytest.raises(NotFoundError) as info:
        get_pattern("extract_claim", tmp_path)
    assert "did you mean: extract_claims" in str(info.value)
    with pytest.raises(
        NotFoundError, match="available: check_contradiction, condense_chat, extract_claims, extr"
    ):
        get_pattern("zzz", tmp_path)
    # Outside any repo the packaged patterns are still found.
    assert get_pattern("extract_claims", tmp_path / "empty").source == "packaged"


def test_digest_is_stable_and_tracks_both_files(tmp_path: Path) -> None:
    folder = write_pattern(tmp_path, "p", "system text\n", "version: 1\n")
    first = load_pattern(folder).digest
    assert load_pattern(folder).digest == first
    expected = hashlib.sha256(b"system text\n\0version: 1\n").hexdigest()
    assert first == "sha256:" + expected

    (folder / "system.md").write_text("system text!\n")
    second = load_pattern(folder).digest
    assert second != first
    (folder / "pattern.yaml").write_text("version: 1\nvariables: {n: 2}\n")
    third = load_pattern(folder).digest
    assert third not in (first, second)
    (folder / "pattern.yaml").unlink()
    fourth = load_pattern(folder).digest
    assert fourth == "sha256:" + hashlib.sha256(b"system text!\n\0").hexdigest()
    # The separator keeps a byte moving from one file to the other from giving the same digest.
    a = write_pattern(tmp_path / "x", "p", "s#", "#x\n")
    b = write_pattern(tmp_path / "y", "p", "s", "##x\n")
    assert load_pattern(a).digest != load_pattern(b).digest


# --------------------------------------------------------------------------------------------
# Rendering


def _p(system: str, variables: dict[str, str] | None = None) -> Pattern:
    return Pattern(
        name="t", path=Path("t"), system=system, version="1", description="", schema=None,
        variables=variables or {}, digest="sha256:" + "0" * 64, source="repo",
    )  # fmt: skip


def test_render_variables_defaults_and_overrides() -> None:
    p = _p("At most {{max}} of {{ kind }}, {{  kind}} again; {{unknown}} stays.\n", {"max": "5"})
    assert render_system(p, {"kind": "claims"}) == (
        "At most 5 of claims, claims again; {{unknown}} stays.\n",
        False,
    )
    assert render_system(p, {"max": "9", "kind": "x"})[0].startswith("At most 9 of x")
    assert placeholders(p.system) == ["max", "kind", "unknown"]


def test_render_input_embedded_or_left_to_the_caller() -> None:
    p = _p("Do it.\n\n# INPUT\n\nINPUT:\n\n{{ input }}\n")
    assert render_system(p, {}, "hello {{max}}") == (
        "Do it.\n\n# INPUT\n\nINPUT:\n\nhello {{max}}\n",
        True,
    )
    # Without input text the placeholder goes and the prompt ends at INPUT:.
    assert render_system(p, {}) == ("Do it.\n\n# INPUT\n\nINPUT:\n", False)
    # `input` is never taken from the variables.
    assert render_system(p, {"input": "nope"}) == ("Do it.\n\n# INPUT\n\nINPUT:\n", False)


def test_render_is_single_pass() -> None:
    p = _p("{{a}} {{b}}", {"a": "{{b}}", "b": "B"})
    assert render_system(p, {}, None)[0] == "{{b}} B\n"
    p = _p("x {{input}} {{input}}")
    assert render_system(p, {}, "$1 \\g<0>") == ("x $1 \\g<0> $1 \\g<0>", True)


def test_claims_input_round_trip() -> None:
    claims = [
        {"id": "a1", "claim": "C one", "quote": 'said "x"', "extra": 1},
        {"id": "b2", "claim": "Café", "quote": "TRANSCRIPT:"},
    ]
    transcript = "\nTRANSCRIPT:\nline one\r\nline two  \n"
    text = claims_input(claims, transcript)
    assert text.startswith('CLAIMS:\n[\n{"id": "a1", "claim": "C one", "quote": "said \\"x\\""},\n')
    got, body = split_claims_input(text)
    assert got == [{k: c[k] for k in ("id", "claim", "quote")} for c in claims]
    assert body == transcript
    assert split_claims_input(claims_input([], "t")) == ([], "t")
    for bad in (
        "[]\nTRANSCRIPT:\nx",
        "CLAIMS:\n[1]\nTRANSCRIPT:\nx",
        "CLAIMS:\n[]\nx",
        "CLAIMS: [",
    ):
        with pytest.raises(InvalidInputError):
            split_claims_input(bad)


# --------------------------------------------------------------------------------------------
# The shipped patterns


def test_required_patterns_are_shipped_and_copied_into_this_repo() -> None:
    assert set(REQUIRED) <= set(SHIPPED)
    for name in SHIPPED:
        for file in ("system.md", "pattern.yaml"):
            shipped = (SCAFFOLD / name / file).read_bytes()
            assert (ROOT / "patterns" / name / file).read_bytes() == shipped, (name, file)
    assert sorted(p.name for p in (ROOT / "patterns").iterdir()) == SHIPPED


def _sections(system: str) -> dict[str, str]:
    """Top-level ``# `` heading → body."""
    parts = re.split(r"^(# .+)$", system, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_system_md_contract(name: str) -> None:
    p = load_pattern(SCAFFOLD / name, "repo")
    assert p.name == name and p.version.isdigit() and int(p.version) >= 1 and p.description
    system = p.system
    headings = [line for line in system.splitlines() if line.startswith("# ")]
    assert headings == SECTIONS, name
    sections = _sections(system)
    assert HARD_RULE in sections["# OUTPUT INSTRUCTIONS"], name
    assert system.count("HARD RULE") == 1
    assert sections["# INPUT"] == "\n\nINPUT:\n\n{{input}}\n", name
    assert system.endswith("INPUT:\n\n{{input}}\n")
    # Every placeholder has a default, so the pattern renders without extra variables.
    assert set(placeholders(system)) - {"input"} == set(p.variables), name
    rendered, embedded = render_system(p, {}, None)
    assert embedded is False and rendered.rstrip().endswith("INPUT:")
    assert placeholders(rendered) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_schema_is_valid_and_accepts_the_example(name: str) -> None:
    p = load_pattern(SCAFFOLD / name, "repo")
    assert p.schema is not None
    check_schema(p.schema)
    check_schema(strip_annotations(p.schema))
    assert "x-verbatim" not in json.dumps(strip_annotations(p.schema))
    example = EXAMPLES["examples"][name]
    # The example passes through the full repair path, fenced and with chatter around it.
    raw = f"Here you go:\n```json\n{json.dumps(example, indent=2)}\n```\nDone."
    assert parse_output(p, raw) == example
    source = EXAMPLES["input"]
    if name == "validate_claims":
        source = claims_input(EXAMPLES["claims"], EXAMPLES["input"])
        ids = [c["id"] for c in EXAMPLES["claims"]]
        assert [v["id"] for v in example] == ids
    quotes = list(iter_verbatim(p.schema, example))
    no_quotes = (
        "validate_claims", "route_intent", "synthesize_answer", "check_contradiction",
        "suggest_tasks",
    )  # fmt: skip
    if name not in no_quotes:  # these outputs hold no verbatim strings
        assert quotes, name
    for path, quote in quotes:
        assert quote in source, (name, path, quote)
    # A missing quote anywhere is a schema error that names where.
    if quotes:
        broken = json.loads(json.dumps(example))
        where: Any = broken
        *parents, last = quotes[0][0]
        for seg in parents:
            where = where[seg]
        if isinstance(last, int):
            where[last] = 7
        else:
            del where[last]
        with pytest.raises(OutputError, match="schema: "):
            parse_output(p, json.dumps(broken))


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "$ref": "#/x"},
        {"items": [{"type": "string"}]},
        {"required": "a"},
        {"enum": []},
        {"pattern": "("},
        {"x-verbatim": "yes"},
        {"anyOf": {}},
        {"minimum": "1"},
        [],
    ],
)
def test_check_schema_rejects_unsupported(schema: Any) -> None:
    with pytest.raises(SchemaDefinitionError):
        check_schema(schema)
