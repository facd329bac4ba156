"""Whole-pipeline scale benchmark: the daily loop of a knowledge repo of N synthetic talks.

    python bench/scale.py --sizes 100 1000 [--base 100] [--repeat 3] [--out scale.json]
    python bench/scale.py --sizes 10000 --repeat 1 --out scale.json     # merged into the file
    python bench/scale.py --sizes 1000 --label before --out scale.json  # a labelled set
    python bench/scale.py --out scale.json --plot docs/scale.png --markdown   # re-render only

For each N it builds a fresh knowledge repo of N synthetic ten-minute talks, adds them with
``arkai add`` and runs the whole pipeline with the real ``dvc repro`` (every stage of
dvc.yaml). Measured:

* ``full``: the first ``dvc repro`` (seconds, once): the seed build, see below;
* ``noop``: ``dvc repro`` with nothing changed;
* ``changed``: one transcript edited (a line appended to a different item each time), then
  ``dvc repro``;
* ``added``: one new talk (a transcript no other item has) added with ``arkai add`` (not
  timed), then ``dvc repro``;

each loop ``--repeat`` times (min and median reported). Every ``dvc repro`` runs with
``$ARKAI_STAGE_METRICS`` set, so each stage process appends its wall time (from process start),
CPU seconds, import time and peak RSS (:mod:`arkai.cli.stage`); ``dvc_s`` is the rest of the
``dvc repro`` wall time: DVC's own work (hashing deps, checking outs, the lock file) plus
starting DVC and each stage's interpreter shutdown. Each loop keeps each stage's highest peak
RSS over its runs (``peak_rss_mb``), the size its highest over all runs.

Growing a library cheaply (``--base B``, default 100). Extracting N talks from scratch costs
about a CPU second each in the full build (1,000 took ≈ 9 minutes, 10,000 would take hours),
and the loops, not the seed, are what is measured. So only B talks are distinct
(``extract.py``'s ``make_items``: ten-minute windows cut from the real transcripts in
../shared/data, each opened by its own "Session i" line); item i ≥ B is a *copy* of talk
i mod B whose source file differs only in the number of its first SubRip cue (``i + 1``, a
line the parser skips). So every item is an item of its own — its own file hash, content ID,
folder, title (``Talk 0i``), evidence IDs, chunks and vectors (chunk keys include the content
ID), graph node and site page — but a copy's ``transcript.md`` is byte-identical to its base
talk's, so the provider calls on its text (the four transcript patterns, condensing) hit the
content-addressed response store; verifying its claims is a call of its own (that input names
the item's own evidence IDs; the builtin provider answers it in milliseconds). Extraction then
costs ≈ 15 ms per copy instead of ≈ 300 ms. Embedding is the other cost that would make the seed
take hours (≈ 18 chunks per talk, ≈ 29 ms of CPU each with the default int8 MiniLM: ≈ 90 minutes
at 10,000 items), and a chunk's vector key names its item, so the store does not share rows.
So the seed runs in two steps: the B distinct talks are added and built (``dvc repro``, the
``seed.distinct_build`` figures); then the copies are added and :func:`reuse_vectors` gives
each copy's chunks the rows its base talk's identical chunks have (the same text through the
same model, and the model runs each text alone: the bits a fresh encoding of the text gives);
then one plain ``dvc repro`` over all N items
— the ``full`` run, its ``embedded`` count says what the index stage still embedded (0 when
every copy's chunk was found). Every stage of that run does its full work on N items:
extraction of the copies, condensing, the index (chunks, lexical, topics, graph), beliefs,
validation, the site. Nothing is committed with ``dvc commit``: every timed loop is a plain
``dvc repro`` of the real pipeline, the changed item is a copy whose transcript then differs from
every other (it really re-extracts and re-embeds), the added talk a new distinct one (a miss
everywhere).

How the grown library differs from N independent talks: its text repeats every B items (the
shared data holds only 26 distinct ten-minute windows, so ``make_items`` itself repeats them
every 26 items, one opening line apart, and real talks of one library would differ more than
either). Repeated text means the same entities and key phrases on N/B items: topic pages and
RELATED_TO neighbourhoods are denser than in a library of unrelated talks, belief replay
reinforces more and creates fewer beliefs, and the lexical lane's document frequencies are
those of B texts repeated. The seed's ``full`` time is therefore not a full build of N
independent talks (``base`` in the JSON says how many were extracted); ``--base 0`` (or
B ≥ N) makes all N distinct.

The seconds (wall and CPU) of each loop, and each stage's CPU seconds and peak RSS in each
loop, are fitted against N by least squares (a line) and projected to 10,000 and 100,000 items.
With ``--out FILE`` the results are merged into FILE (sizes measured now replace the same sizes
there), so sizes can be measured in separate runs; ``--label NAME`` keeps them apart under
``labels.NAME`` (a "before" set from older code). ``--plot PNG`` draws seconds against N (log
x) with the targets (one changed ≤ 10 s, no-op ≤ 3 s at 10,000) and any labelled sets;
``--markdown`` prints the README table(s) to stderr. Each size prints its wall time to stderr.
Nothing is written into this repository except the files named by ``--out`` and ``--plot``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _sibling(name: str) -> Any:
    """bench/<name>.py loaded by path: putting bench/ on sys.path would let its scripts
    (bench/mcp.py) shadow real packages in a process that imports this one (the tests)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_extract = _sibling("extract")
BIN, make_items = _extract.BIN, _extract.make_items

LOOPS = ("noop", "changed", "added")
PROJECT = (10_000, 100_000)
TARGETS = {"changed": 10.0, "noop": 3.0}  # seconds at 10,000 items (issue 17)


def _env(metrics: Path) -> dict[str, str]:
    """The commands' environment. Python keeps its compiled modules (``__pycache__``), as on
    a user's machine: an environment that says not to (``PYTHONDONTWRITEBYTECODE``, set on
    the machine the README's figures come from) would have every stage compile arkai's
    modules again, ≈ 0.1 s a stage."""
    return {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_NO_UPDATER": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "ARKAI_STAGE_METRICS": str(metrics),
    }


def _call(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run ``cmd``; its wall seconds and the CPU seconds of it and every process it waited for."""
    t0, c0 = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    dt, c1 = time.perf_counter() - t0, os.times()
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(cmd)} failed with {proc.returncode} in {cwd}")
    return dt, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def repro(repo: Path, metrics: Path) -> dict[str, Any]:
    """One timed ``dvc repro``: total seconds, each stage's seconds and peak RSS, DVC's rest."""
    metrics.unlink(missing_ok=True)
    total, cpu = _call(["dvc", "repro"], repo, _env(metrics))
    stages = (
        [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    )
    own = sum(s["wall_s"] for s in stages)
    return {
        "total_s": round(total, 3),
        "dvc_s": round(total - own, 3),
        "stages": {s["stage"]: s["wall_s"] for s in stages},
        "cpu_s": round(cpu, 3),
        "dvc_cpu_s": round(cpu - sum(s.get("cpu_s", 0.0) for s in stages), 3),
        "stage_cpu_s": {s["stage"]: s.get("cpu_s") for s in stages},
        "import_s": {s["stage"]: s["import_s"] for s in stages},
        # A stage's own peak plus its children's: the index stage's side steps run in a forked
        # child at the same time as it (arkai.adapters.beside), so the sum bounds the stage's
        # peak from above (the pages they share after the fork are counted twice).
        "rss_mb": {s["stage"]: round(s["maxrss_mb"] + s["children_maxrss_mb"], 1) for s in stages},
    }


def _peak(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Each stage's highest peak RSS (MB) over ``runs``."""
    peak: dict[str, float] = {}
    for r in runs:
        for stage, mb in r["rss_mb"].items():
            peak[stage] = max(peak.get(stage, 0.0), mb)
    return peak


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    totals = [r["total_s"] for r in runs]
    med = sorted(runs, key=lambda r: r["total_s"])[(len(runs) - 1) // 2]
    stages = list(dict.fromkeys(st for r in runs for st in r["stage_cpu_s"]))
    return {
        "min_s": min(totals),
        "median_s": round(statistics.median(totals), 3),
        "median_cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
        # Each stage's median CPU seconds over the runs (0 where a run skipped the stage), and
        # ``dvc``: the rest of the run's CPU (DVC itself, process starts and exits).
        "stage_cpu_s": {
            **{
                st: round(statistics.median(r["stage_cpu_s"].get(st) or 0.0 for r in runs), 3)
                for st in stages
            },
            "dvc": round(statistics.median(r["dvc_cpu_s"] for r in runs), 3),
        },
        "peak_rss_mb": _peak(runs),
        "median_run": med,  # the per-stage breakdown of the (lower) median run
        "runs": runs,
    }


def first_cue_number(data: bytes, number: int) -> bytes:
    """SubRip ``data`` whose first cue is numbered ``number``: other bytes, the same cues (the
    parser skips cue numbers), so the same ``transcript.md``."""
    head, sep, rest = data.partition(b"\n")
    if not (sep and head.strip().isdigit()):
        raise ValueError("a SubRip file opening with its cue number expected")
    return str(number).encode() + sep + rest


def grow_items(
    dest: Path, spare: Path, n: int, base: int, extra: int
) -> tuple[list[Path], list[Path], int]:
    """``n`` talk files in ``dest`` of which ``base`` are distinct and the rest copies (see the
    module doc), and ``extra`` more distinct talks in ``spare`` for the "added" loop.
    Returns the files, the extra files and the words of the distinct talks."""
    base = n if base <= 0 or base >= n else base
    made, words = make_items(spare, base + extra)
    bodies = [f.read_bytes() for f in made[:base]]
    for f in made[:base]:
        f.unlink()
    files = []
    for i in range(n):
        path = dest / f"talk-{i:05d}.srt"
        path.write_bytes(first_cue_number(bodies[i % base], i + 1))
        files.append(path)
    return files, made[base:], words


def _git(*args: str) -> str:
    here = Path(__file__).resolve().parent.parent
    return subprocess.run(
        ["git", *args], cwd=here, capture_output=True, text=True, check=True
    ).stdout


def _revision() -> str:
    """The commit of the code measured (this checkout), ``+dirty`` with uncommitted changes."""
    try:
        rev = _git("rev-parse", "--short", "HEAD").strip()
        dirty = _git("status", "--porcelain", "--untracked-files=no").strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def _metadata(repo: Path) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text(encoding="utf-8"))
        for p in (repo / "library").glob("*/*/metadata.json")
    ]


def reuse_vectors(repo: Path, base: int) -> int:
    """Give every copy's chunks (talk i ≥ ``base``, titled ``Talk 0i``) the rows its base
    talk's identical chunks already have in ``index/vectors`` — the same text through the same
    model — so the next index run embeds only what is new. Returns the rows added.

    A chunk's key is the SHA-256 of its text and its item's content ID
    (:func:`arkai.search.chunks.chunk_key`); the texts come from ``index/chunks/``, the
    rows are written through :class:`arkai.search.vectors.VectorStore`, the store's one owner.
    """
    from arkai.adapters.chunkparts import ChunkParts
    from arkai.search.chunks import chunk_key
    from arkai.search.vectors import VectorStore

    index = repo / "index"
    embedder = json.loads((index / "manifest.json").read_text(encoding="utf-8")).get("embedder")
    if not isinstance(embedder, dict):
        return 0  # the vector lane is off
    store = VectorStore.load(index / "vectors", str(embedder["name"]), dim=int(embedder["dim"]))
    chunks: dict[str, list[tuple[str, str]]] = {}
    listing = ChunkParts.load(index / "chunks")
    for line in listing.iter_lines() if listing is not None else ():
        d = json.loads(line)
        chunks.setdefault(d["content_id"], []).append((d["key"], d["text"]))
    ids = {
        int(m["title"].split()[-1]): m["id"] for m in _metadata(repo) if m["title"][:5] == "Talk "
    }
    todo: dict[str, str] = {}  # copy's chunk key → its base chunk's key
    for i, cid in ids.items():
        if i >= base:
            for key, text in chunks.get(ids.get(i % base, ""), []):
                new = chunk_key(cid, text)
                if key in store and new not in store:
                    todo.setdefault(new, key)
    if todo:
        store.add(list(todo), store.get(list(todo.values())))
        store.save(index / "vectors")
    return len(todo)


def _embedded_by_last_index_run(repo: Path) -> int | None:
    """The chunks the last index stage run embedded (its ``vectors`` step event)."""
    runs = sorted((repo / ".arkai" / "runs").glob("*/events.jsonl"))
    for path in reversed(runs):
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        if events and events[0].get("pipeline") == "index":
            for e in events:
                if e.get("type") == "StepCompleted" and e.get("step") == "vectors":
                    return int(e.get("embedded", 0))
            return None
    return None


def seed(repo: Path, inbox: Path, n: int, distinct: int, metrics: Path) -> dict[str, Any]:
    """The first build of ``n`` items: with copies (``distinct`` < ``n``), the distinct talks
    are added and built first, then the copies added, their vectors reused, and the whole
    pipeline run again — the ``full`` run measured. Returns its figures."""
    env = _env(metrics)
    files = sorted(inbox.iterdir())
    info: dict[str, Any] = {}
    t0 = time.perf_counter()
    if distinct < n:
        first, rest = inbox / "distinct", inbox / "copies"
        first.mkdir()
        rest.mkdir()
        for k, f in enumerate(files):
            f.rename((first if k < distinct else rest) / f.name)
        info["add_s"] = _call(["arkai", "add", str(first), "--quiet"], repo, env)[0]
        print(f"n={n}: {distinct} distinct talks added; their build", file=sys.stderr)
        info["distinct_build"] = repro(repo, metrics)
        add_copies = _call(["arkai", "add", str(rest), "--quiet"], repo, env)[0]
        info["add_s"] += add_copies
        print(f"n={n}: {n - distinct} copies added in {add_copies:.0f} s", file=sys.stderr)
        info["vectors_reused"] = reuse_vectors(repo, distinct)
    else:
        info["add_s"] = _call(["arkai", "add", str(inbox), "--quiet"], repo, env)[0]
    info["add_s"] = round(info["add_s"], 2)
    print(f"n={n}: first build of all {n}", file=sys.stderr)
    info["full"] = repro(repo, metrics)
    info["full"]["embedded"] = _embedded_by_last_index_run(repo)
    info["seed_s"] = round(time.perf_counter() - t0, 1)
    print(f"n={n}: seeded in {info['seed_s']:.0f} s", file=sys.stderr)
    return info


def measure(n: int, repeat: int, work: Path, base: int = 100) -> dict[str, Any]:
    """Build a repo of ``n`` talks (``base`` distinct), the seed build, then each loop
    ``repeat`` times."""
    t_start = time.perf_counter()
    revision = _revision()  # the code measured: before the hour this may take
    repo, inbox, spare = work / "kb", work / "inbox", work / "spare"
    metrics = work / "stages.jsonl"
    shutil.rmtree(work, ignore_errors=True)
    inbox.mkdir(parents=True)
    spare.mkdir()
    _, extras, words = grow_items(inbox, spare, n, base, repeat)
    distinct = n if base <= 0 or base >= n else base
    _call(["arkai", "init", str(repo)], work, _env(metrics))
    seeded = seed(repo, inbox, n, distinct, metrics)
    full = seeded.pop("full")
    loops: dict[str, list[dict[str, Any]]] = {loop: [] for loop in LOOPS}
    transcripts = sorted((repo / "library").rglob("transcript.md"))
    for k in range(repeat):
        print(f"n={n}: round {k + 1}/{repeat}", file=sys.stderr)
        loops["noop"].append(repro(repo, metrics))
        edited = transcripts[k * len(transcripts) // repeat]
        with open(edited, "a", encoding="utf-8") as fh:
            fh.write(f"[00:10:3{k}] An editor added sentence number {k} to this talk today.\n")
        loops["changed"].append(repro(repo, metrics))
        _call(["arkai", "add", str(extras[k]), "--quiet"], repo, _env(metrics))
        loops["added"].append(repro(repo, metrics))
    wall = time.perf_counter() - t_start
    print(f"n={n}: measured in {wall:.0f} s of wall time", file=sys.stderr)
    return {
        "items": n,
        "base": distinct,
        "words_per_item": round(words / (distinct + repeat)),
        "add_s": seeded.pop("add_s"),
        "full": full,
        "seed": seeded,
        **{loop: _summary(runs) for loop, runs in loops.items()},
        "peak_rss_mb": _peak([full, *(r for runs in loops.values() for r in runs)]),
        "bench_wall_s": round(wall, 1),
        "revision": revision,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],  # others' work on the machine
    }


def fit(points: list[tuple[int, float]]) -> dict[str, Any]:
    """Least-squares line of seconds against items; the projection to 10,000 and 100,000."""
    if len({n for n, _ in points}) < 2:
        return {"points": len(points)}
    xs, ys = [float(n) for n, _ in points], [s for _, s in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    intercept = my - slope * mx
    return {
        "points": len(points),
        "ms_per_item": round(slope * 1000, 3),
        "intercept_s": round(intercept, 3),
        "projected_s": {str(n): round(intercept + slope * n, 1) for n in PROJECT},
    }


def _fit_field(ordered: list[dict[str, Any]], loop: str, field: str) -> dict[str, Any]:
    """Per stage, the fit of ``size[loop][field][stage]`` against N (sizes that have it).
    The keys are seconds-named; for ``peak_rss_mb`` read them as MB (``ms_per_item``: kB)."""
    stages = list(dict.fromkeys(st for s in ordered for st in s[loop].get(field, {})))
    return {
        st: fit([(s["items"], s[loop][field][st]) for s in ordered if st in s[loop].get(field, {})])
        for st in stages
    }


def analyse(sizes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Fits over every measured size, per loop and per stage, and the targets at 10,000."""
    ordered = sorted(sizes.values(), key=lambda s: s["items"])
    # A grown size's first build is not a full build (its copies are cheap): only sizes whose
    # talks are all distinct are fitted for it.
    whole = [s for s in ordered if s.get("base", s["items"]) >= s["items"]]
    fits = {
        "full": fit([(s["items"], s["full"]["total_s"]) for s in whole]),
        **{loop: fit([(s["items"], s[loop]["median_s"]) for s in ordered]) for loop in LOOPS},
    }
    # CPU seconds (every process of the run): on a machine others load, the better estimate of
    # the wall time on an idle one, since the pipeline runs one single-threaded stage at a time.
    cpu = {
        "full": fit([(s["items"], s["full"]["cpu_s"]) for s in whole if "cpu_s" in s["full"]]),
        **{
            loop: fit(
                [
                    (s["items"], s[loop]["median_cpu_s"])
                    for s in ordered
                    if "median_cpu_s" in s[loop]
                ]
            )
            for loop in LOOPS
        },
    }
    targets = {}
    for loop, limit in TARGETS.items():
        for name, fits_of in (("", fits), ("cpu_", cpu)):
            at = fits_of[loop].get("projected_s", {}).get("10000")
            targets[f"{loop}_{name}le_{limit:g}s_at_10000"] = None if at is None else at <= limit
    return {
        "fit": fits,
        "fit_cpu": cpu,
        # Where each loop's growth is: each stage's median CPU seconds and peak RSS (MB)
        # fitted against N, projected to 10,000 and 100,000.
        "fit_stage_cpu": {loop: _fit_field(ordered, loop, "stage_cpu_s") for loop in LOOPS},
        "fit_stage_rss_mb": {loop: _fit_field(ordered, loop, "peak_rss_mb") for loop in LOOPS},
        "targets": targets,
    }


def _cpu(seconds: float | None) -> str:
    return "" if seconds is None else f" ({seconds:.1f} s CPU)"


def markdown(sizes: dict[str, dict[str, Any]]) -> str:
    """The README table: N, full build, the loops' medians (wall, and CPU), peak RSS per stage.
    † marks a grown size's first build: the copies added to the built distinct talks."""
    ordered = sorted(sizes.values(), key=lambda s: s["items"])
    stages = list(dict.fromkeys(st for s in ordered for st in s["peak_rss_mb"]))  # run order
    head = ["N", "full build", "no-op", "one changed", "one added"]
    head += [f"{st} MB" for st in stages]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in ordered:
        n = f"{s['items']:,}"
        if s.get("base", s["items"]) < s["items"]:
            n += f" ({s['base']:,} distinct)"
        seed = "" if s.get("base", s["items"]) >= s["items"] else " †"  # not a full build
        cells = [n, f"{s['full']['total_s']:.0f} s" + _cpu(s["full"].get("cpu_s")) + seed]
        cells += [
            f"{s[loop]['median_s']:.1f} s" + _cpu(s[loop].get("median_cpu_s")) for loop in LOOPS
        ]
        cells += [f"{s['peak_rss_mb'].get(st, 0):.0f}" for st in stages]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def stage_table(result: dict[str, Any]) -> str:
    """Per loop and stage: median CPU seconds and peak RSS at each N, and the CPU fit's growth
    per 1,000 items and projection to 10,000 and 100,000 (what grows, and where)."""
    ordered = sorted(result["sizes"].values(), key=lambda s: s["items"])
    head = ["loop", "stage", *(f"CPU s at {s['items']:,}" for s in ordered)]
    head += [*(f"MB at {s['items']:,}" for s in ordered)]
    head += ["s per 1,000 more", "at 10,000", "at 100,000"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for loop in LOOPS:
        fits = result.get("fit_stage_cpu", {}).get(loop, {})
        stages = list(dict.fromkeys(st for s in ordered for st in s[loop].get("stage_cpu_s", {})))
        for st in stages:
            cells = [loop, st]
            cells += [_num(s[loop].get("stage_cpu_s", {}).get(st)) for s in ordered]
            cells += [_num(s[loop].get("peak_rss_mb", {}).get(st), "{:.0f}") for s in ordered]
            f = fits.get(st, {})
            cells.append(_num(f.get("ms_per_item")))  # ms per item = s per 1,000 items
            cells += [_num(f.get("projected_s", {}).get(str(n))) for n in PROJECT]
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _num(value: float | None, form: str = "{:.2f}") -> str:
    return "—" if value is None else form.format(value)


def plot(result: dict[str, Any], png: Path) -> None:
    """Seconds against N (log x) for the three loops, their fitted lines and the targets; a
    labelled set (``labels``: older code) as grey lines of its CPU seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(result["sizes"].values(), key=lambda s: s["items"])
    fig, ax = plt.subplots(figsize=(10, 4.6), dpi=120)
    xs = [s["items"] for s in ordered]
    every = [
        *xs,
        *(s["items"] for o in result.get("labels", {}).values() for s in o["sizes"].values()),
    ]
    lo, hi = min(every), max(PROJECT)
    span = [lo * (hi / lo) ** (k / 60) for k in range(61)]  # even steps on the log axis
    labels = {"noop": "no-op", "changed": "one changed", "added": "one added"}
    for loop, colour in zip(LOOPS, ("tab:green", "tab:blue", "tab:orange"), strict=True):
        if not ordered:
            break
        ax.plot(xs, [s[loop]["median_s"] for s in ordered], "o-", color=colour, alpha=0.45,
                label=f"{labels[loop]}: wall")  # fmt: skip
        cpu = [s[loop].get("median_cpu_s") for s in ordered]
        if all(c is not None for c in cpu):
            ax.plot(xs, cpu, "s-", color=colour, label=f"{labels[loop]}: CPU")
        f = result.get("fit_cpu", {}).get(loop, {})
        if "ms_per_item" in f:
            line = [f["intercept_s"] + f["ms_per_item"] / 1000 * n for n in span]
            ax.plot(span, line, ":", color=colour, alpha=0.8)
    # The labelled sets (older code, other machines) in grey, one legend entry per loop for all
    # of them: an entry per set and loop took the plot's height once there were seventeen.
    named: set[str] = set()
    for _, other in sorted(result.get("labels", {}).items()):
        old = sorted(other["sizes"].values(), key=lambda s: s["items"])
        for loop, mark in (("changed", "v"), ("noop", "^")):
            ys = [s[loop].get("median_cpu_s", s[loop]["median_s"]) for s in old]
            label = "_nolegend_" if loop in named else f"earlier sets: {labels[loop]}, CPU"
            named.add(loop)
            ax.plot([s["items"] for s in old], ys, mark + "--", color="grey", alpha=0.5,
                    label=label)  # fmt: skip
            f = other.get("fit_cpu", {}).get(loop, {})
            if "ms_per_item" in f:
                line = [f["intercept_s"] + f["ms_per_item"] / 1000 * n for n in span]
                ax.plot(span, line, ":", color="grey", alpha=0.6)
    ax.scatter([10_000], [TARGETS["changed"]], marker="*", s=160, color="tab:blue", zorder=5,
               label="target: one changed ≤ 10 s at 10,000")  # fmt: skip
    ax.scatter([10_000], [TARGETS["noop"]], marker="*", s=160, color="tab:green", zorder=5,
               label="target: no-op ≤ 3 s at 10,000")  # fmt: skip
    ax.axhline(TARGETS["changed"], color="tab:blue", lw=0.8, ls="--", alpha=0.5)
    ax.axhline(TARGETS["noop"], color="tab:green", lw=0.8, ls="--", alpha=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("library items (N)")
    ax.set_ylabel("dvc repro, seconds (median)")
    ax.set_title("arkai daily loop: medians measured (solid), CPU fitted (dotted)")
    ax.grid(True, which="both", alpha=0.3)
    # Beside the axes, not over the lines.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)


def _load(path: Path | None) -> dict[str, Any]:
    if path is None or not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _write(path: Path, result: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def merge(
    old: dict[str, Any], measured: dict[str, dict[str, Any]], label: str | None, repeat: int
) -> dict[str, Any]:
    """``old`` results with the sizes ``measured`` now merged in (the main set, or the set
    ``labels[label]``), every set re-analysed."""
    sizes = dict(old.get("sizes", {}))
    sets = {name: dict(other.get("sizes", {})) for name, other in old.get("labels", {}).items()}
    if label is None:
        sizes.update(measured)
    else:
        sets.setdefault(label, {}).update(measured)
    result: dict[str, Any] = {"sizes": sizes}
    if sizes:
        result.update(analyse(sizes))
    result["repeat"] = repeat if measured else old.get("repeat", repeat)
    result["machine"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    if sets:
        result["labels"] = {
            name: {"sizes": got, **analyse(got)} for name, got in sorted(sets.items())
        }
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[], help="library sizes to measure")
    ap.add_argument("--base", type=int, default=100,
                    help="distinct talks; the rest are copies (0: all distinct)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=3, help="runs of each timed loop (≥ 3)")
    ap.add_argument("--out", type=Path, help="JSON file to merge the results into")
    ap.add_argument("--label", help="merge into labels.LABEL (e.g. before), not the main set")
    ap.add_argument("--plot", type=Path, help="write the PNG here (matplotlib)")
    ap.add_argument("--markdown", action="store_true", help="the README tables on stderr")
    ap.add_argument("--keep", type=Path, help="build the repos under this folder and keep them")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    old = _load(args.out)
    if not args.sizes and not (old.get("sizes") or old.get("labels")):
        ap.error("give --sizes, or --out naming results to re-render")
    measured: dict[str, dict[str, Any]] = {}
    work = args.keep or Path(tempfile.mkdtemp(prefix="arkai-scale-"))
    try:
        for n in args.sizes:
            measured[str(n)] = measure(n, args.repeat, work / f"n{n}", args.base)
            if args.out:  # after each size: a later one that fails loses nothing measured
                _write(args.out, merge(_load(args.out), {str(n): measured[str(n)]}, args.label,
                                       args.repeat))  # fmt: skip
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    # Read FILE again only now: another run may have merged its sizes meanwhile.
    result = merge(_load(args.out), measured, args.label, args.repeat)
    text = json.dumps(result, indent=2)
    if args.out:
        _write(args.out, result)
    if args.plot and (result["sizes"] or result.get("labels")):
        plot(result, args.plot)
    if args.markdown:
        print(markdown(result["sizes"]), file=sys.stderr)
        print("\n" + stage_table(result), file=sys.stderr)
        for name, other in result.get("labels", {}).items():
            print(f"\n{name}:\n" + markdown(other["sizes"]), file=sys.stderr)
    print(text)


if __name__ == "__main__":
    main()
