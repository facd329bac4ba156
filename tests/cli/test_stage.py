"""The DVC stage scripts call operations through the one stage runner, never the CLI."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, Runner, sh, tool_env

STAGE_DIRS = [ROOT / "stages", ROOT / "src" / "arkai" / "scaffold" / "stages"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


@pytest.mark.parametrize("folder", STAGE_DIRS, ids=["repo", "scaffold"])
def test_stage_scripts_call_an_operation_through_the_runner(folder: Path) -> None:
    scripts = sorted(folder.glob("*.py"))
    assert [p.name for p in scripts] == [
        "beliefs.py",
        "condense.py",
        "extract.py",
        "index.py",
        "site.py",
        "validate.py",
    ]
    for script in scripts:
        names = _imports(script)
        assert "arkai.cli.stage.run_stage" in names, script
        assert "arkai.cli.stage.exit_stage" in names, script
        assert any(n.startswith("arkai.ops.") for n in names), script
        assert "arkai.cli.main" not in names and "arkai.cli" not in names, script


def _stage(repo: Path, name: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return sh(cwd or repo, sys.executable, repo / "stages" / f"{name}.py", check=False)


def test_validate_stage_writes_its_metric(kr: Path) -> None:
    done = _stage(kr, "validate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("validate: 0 items, 0 valid"), done.stdout
    report = json.loads((kr / "reports" / "validation.json").read_text(encoding="utf-8"))
    assert report["items"] == 0 and report["ok"] is True


def test_stage_failures_map_to_the_cli_exit_codes(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    code, _, err = arkai("--repo", kr, "remember", "Bees dance to point at flowers.")
    assert code == 0, err
    done = _stage(kr, "validate")  # the note is not extracted yet: validation fails
    assert done.returncode == 1
    assert "1 not extracted" in done.stdout
    assert "arkai: error: some items are unreadable, failed or not extracted" in done.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    lost = _stage(kr, "validate", cwd=outside)
    assert lost.returncode == 1
    assert lost.stderr.startswith("arkai: error: ") and "not inside an arkai" in lost.stderr
    assert "Traceback" not in lost.stderr


def test_a_stage_script_imports_no_other_command(tmp_path: Path) -> None:
    # Issue 17: importing one command module ran arkai.cli's __init__, which imported every
    # command and what lies behind them (seconds per stage process under load).
    probe = (
        "import sys\n"
        "import arkai.cli.stage, arkai.cli.pipeline, arkai.cli.site, arkai.cli.index\n"
        "import arkai.cli.memory, arkai.cli.condense\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('arkai.cli'))))\n"
    )
    done = sh(tmp_path, sys.executable, "-c", probe)
    loaded = set(done.stdout.split())
    assert "arkai.cli.stage" in loaded and "arkai.cli.site" in loaded
    assert not loaded & {"arkai.cli.app", "arkai.cli.search", "arkai.cli.mcp", "arkai.cli.ask"}
    # The command line itself still has every command (the group is built on first use).
    help_ = sh(tmp_path, sys.executable, "-m", "arkai.cli.main", "--help").stdout
    assert all(f" {cmd} " in help_ for cmd in ("search", "mcp", "ask", "site", "recall"))


def test_the_validate_stage_does_not_import_the_extract_operation(tmp_path: Path) -> None:
    """The validate stage shows its result with arkai.cli.pipeline, the module of ``arkai
    extract`` too: the extract operation (≈ 0.1 s to import) is loaded only when that command
    runs."""
    script = (ROOT / "stages" / "validate.py").read_text(encoding="utf-8")
    imports = "\n".join(line for line in script.splitlines() if line.startswith(("from", "import")))
    probe = imports + "\nimport sys\nprint('arkai.ops.extract' in sys.modules)\n"
    assert "arkai.cli.pipeline" in imports
    assert sh(tmp_path, sys.executable, "-c", probe).stdout.strip() == "False"


def test_each_stage_records_its_time_and_peak_memory(kr: Path, tmp_path: Path) -> None:
    log = tmp_path / "stages.jsonl"
    env = tool_env(ARKAI_STAGE_METRICS=str(log))
    for _ in range(2):
        done = sh(kr, sys.executable, kr / "stages" / "validate.py", env=env)
        assert done.stdout.startswith("validate: 0 items"), done.stdout
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["stage"] == "validate" and row["exit_code"] == 0
        assert 0 < row["import_s"] < row["wall_s"] < 900
        assert 0 < row["cpu_s"] < 900
        assert 10 < row["maxrss_mb"] < 4096 and row["children_maxrss_mb"] >= 0
    assert rows[0]["started"] < rows[1]["started"]
    # Without the variable nothing is recorded anywhere.
    sh(kr, sys.executable, kr / "stages" / "validate.py")
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2


_EXIT = """
import atexit, sys, threading
from pathlib import Path
from arkai.cli.stage import exit_stage
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
if sys.argv[2] == "thread":
    never = threading.Event()
    def late() -> None:
        never.wait(2)
        (out / "thread").write_text("finished")
    threading.Thread(target=late).start()
sys.stdout.write("no newline, still buffered")
exit_stage(3)
"""


@pytest.mark.parametrize("case", ["plain", "thread"])
def test_exit_stage_flushes_runs_atexit_and_waits_for_threads(tmp_path: Path, case: str) -> None:
    script = tmp_path / "stage.py"
    script.write_text(_EXIT, encoding="utf-8")
    done = sh(tmp_path, sys.executable, script, tmp_path, case, check=False)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "no newline, still buffered"
    assert (tmp_path / "atexit").read_text() == "ran"
    # A non-daemon thread still running: the process exits the ordinary way, after it.
    assert (tmp_path / "thread").exists() == (case == "thread")


@pytest.mark.parametrize(
    "path", [ROOT / "dvc.yaml", ROOT / "src" / "arkai" / "scaffold" / "dvc.yaml.in"]
)
def test_stages_depend_only_on_what_they_read(path: Path) -> None:
    # Issue 17: DVC hashes every file of every directory dependency on each run. The site reads
    # three files of index/ (not lexical/, vectors/, shards/); condense reads transcripts only.
    stages = yaml.safe_load(path.read_text(encoding="utf-8"))["stages"]
    site = stages["site"]["deps"]
    assert "index" not in site
    index_outs = {next(iter(o)) if isinstance(o, dict) else o for o in stages["index"]["outs"]}
    read = {d for d in site if str(d).startswith("index/") and "/manifests/" not in d}
    assert read == {"index/topics.json", "index/chunks", "index/related.jsonl"}
    assert read <= index_outs  # so DVC still runs the site after the index
    assert "extracted" not in stages["condense"]["deps"]
    assert "index/manifests/extracted.tsv" not in stages["condense"]["deps"]
    assert "index/manifests/library.tsv" in stages["condense"]["deps"]


def test_dvc_parses_yaml_with_the_c_parser() -> None:
    # Issue 17: DVC parses params.yaml once per stage with params, and dvc.yaml and dvc.lock,
    # each run; without ruamel.yaml.clib ruamel falls back to its pure-Python parser (5x slower).
    from ruamel.yaml import YAML

    parser = YAML(typ="safe").Parser
    assert parser is not None and parser.__name__ == "CParser", parser


def test_the_runner_freezes_the_imported_objects_and_collects_cycles_less_often(
    kr: Path,
) -> None:
    probe = (
        "import gc, json\n"
        "from arkai.cli.stage import GC_THRESHOLDS, run_stage\n"
        "assert gc.get_threshold() != GC_THRESHOLDS and gc.get_freeze_count() == 0\n"
        "seen = {}\n"
        "def op(repo, progress):\n"
        "    # a cycle made during the operation is still collected\n"
        "    a = []; a.append(a); del a\n"
        "    seen.update(thresholds=list(gc.get_threshold()), frozen=gc.get_freeze_count(),\n"
        "                collected=gc.collect(), expected=list(GC_THRESHOLDS))\n"
        "    return 0\n"
        "code = run_stage('probe', op, lambda result: result)\n"
        "print(json.dumps({'code': code, **seen}))\n"
    )
    done = sh(kr, sys.executable, "-c", probe)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["code"] == 0 and got["thresholds"] == got["expected"]
    assert got["frozen"] > 10_000  # the modules' objects, never walked again
    assert got["collected"] >= 1


_MAPPINGS = """
import json

def heap():
    size = 0
    with open("/proc/self/maps") as fh:
        for line in fh:
            if line.rstrip().endswith("[heap]"):
                lo, hi = line.split()[0].split("-")
                size += int(hi, 16) - int(lo, 16)
    return size

def heap_or_own(tune):
    if tune:
        from arkai.cli.stage import tune_malloc
        assert tune_malloc()
    big = bytearray(16 << 20)  # mapped either way; freeing it raises glibc's threshold
    del big
    before = heap()
    kept = [bytearray(2 << 20) for _ in range(4)]
    return heap() - before

import sys
print(json.dumps(heap_or_own(sys.argv[1] == "tune")))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_runner_has_malloc_map_large_blocks(kr: Path) -> None:
    """A stage process (``run_stage`` calls ``tune_malloc``) maps every block from
    ``MMAP_THRESHOLD`` up, so freeing one gives its pages back: by default glibc, having freed
    a 16 MB block, serves 2 MB ones from its heap (which grows by them), which numpy's
    temporaries leave fragmented in a stage; tuned, the heap does not grow."""
    from arkai.cli import stage

    assert stage.MMAP_THRESHOLD == 1 << 20
    assert "tune_malloc()" in Path(stage.__file__).read_text().split("def run_stage", 1)[1]
    plain = json.loads(sh(kr, sys.executable, "-c", _MAPPINGS, "plain").stdout)
    tuned = json.loads(sh(kr, sys.executable, "-c", _MAPPINGS, "tune").stdout)
    assert plain >= 8 << 20 and tuned < 1 << 20, (plain, tuned)


_FAULTS = """
import json, resource, sys

if sys.argv[1] == "tune":
    from arkai.cli.stage import tune_malloc
    assert tune_malloc()
else:  # the mapping threshold alone, as before the trim threshold was set
    import ctypes
    from arkai.cli import stage
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    assert mallopt(stage._M_MMAP_THRESHOLD, stage.MMAP_THRESHOLD)

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def round_():
    held = [bytearray(512 << 10) for _ in range(16)]  # 8 MB of blocks under the threshold
    del held

round_()
before = faults()
for _ in range(20):
    round_()
print(json.dumps(faults() - before))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_runner_keeps_freed_heap_for_reuse(kr: Path) -> None:
    """With the mapping threshold set, glibc gives free memory at the top of its heap back
    from 128 KB up, so a step's blocks under the threshold, made and freed over and over, had
    their pages faulted in afresh every time (≈ 0.5 s of kernel time in the index stage at
    10,000 items); the runner keeps up to ``TRIM_THRESHOLD`` of it: 20 rounds of 8 MB of
    blocks fault in none of their pages again."""
    from arkai.cli import stage

    assert stage.TRIM_THRESHOLD >= 16 << 20
    plain = json.loads(sh(kr, sys.executable, "-c", _FAULTS, "plain").stdout)
    tuned = json.loads(sh(kr, sys.executable, "-c", _FAULTS, "tune").stdout)
    pages = (8 << 20) // 4096
    assert plain >= 10 * pages and tuned < pages, (plain, tuned)
