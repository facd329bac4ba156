"""Site benchmark: ``arkai site build`` (page generation + ``mkdocs build``) for N synthetic
items, the site's size, peak memory, and the rebuilds after nothing changed, one item
changed and one item added. Prints JSON.

    python bench/site.py [--items 300 1000 3000] [--keep DIR]
    python bench/site.py --grow KEPT/n1000/kb --copies 1 3 [--changes 3]

The second form measures what the synthetic items lack, an index (topics, chunks, related
items) as the pipeline makes it: a repo kept by ``bench/scale.py --keep`` is grown K-fold
(:func:`grow`) and built, then one transcript changed ``--changes`` times (CPU s, peak RSS).

Base items are the real transcripts in ../shared/data (five SubRip podcast episodes, the
auto-captioned YouTube VTT and two youtube-transcript-api JSON files with their YouTube
URLs, the 3Blue1Brown captions), added and extracted (builtin provider) once in a fresh
knowledge repo. Synthetic items are copies of them with their own ID, title, tags, date and
one extra transcript line (so every transcript differs); the extraction files are copied
with the content ID rewritten — the spans stay valid because the extra line is appended.
Each build runs in a child process that imports what the ``site`` stage script imports and
calls the same function, so its peak RSS is the stage's (MkDocs runs inside that process:
there is no other process to count). Targets: 1,000 items ≤ 30 s and ≤ 150 MB; one-item
rebuild ≤ 25 % of the full build.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data" / "transcripts"
TAGS = ("talk", "podcast", "ml", "python", "startups", "career", "community", "video")

BUILD = """
import json, sys
from pathlib import Path
import arkai.cli.site, arkai.cli.stage, arkai.ops.site  # what stages/site.py imports
from arkai.site.build import build_site
r = build_site(Path(sys.argv[1]), full=sys.argv[2] == "full")
print(json.dumps(r.to_dict()))
"""


def arkai(*args: str) -> None:
    cmd = [sys.executable, "-m", "arkai.cli.main", *args]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def bases(repo: Path) -> None:
    """Add and extract the real transcripts once."""
    arkai("init", "--no-git", str(repo))
    srts = sorted((SHARED / "virtual_coffee_srt").glob("*.srt"))
    arkai("-C", str(repo), "add", "-q", "-t", "podcast", *map(str, srts))
    vtt = SHARED / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt"
    url = "https://www.youtube.com/watch?v=VMvdvP02f-Y"
    arkai("-C", str(repo), "add", "-q", "-t", "video", url, "--transcript", str(vtt))
    for js in sorted((SHARED / "youtube_transcript_api_json").glob("*.json")):
        vid = js.name.split("_")[0]
        arkai("-C", str(repo), "add", "-q", "-t", "video",
              f"https://www.youtube.com/watch?v={vid}", "--transcript", str(js))  # fmt: skip
    captions = SHARED / "3b1b_human_captions" / "2017_neural-networks" / "captions.srt"
    arkai("-C", str(repo), "add", "-q", "-t", "ml", "--title", "Neural networks", str(captions))
    arkai("-C", str(repo), "extract", "-q")


def synthesize(repo: Path, n: int) -> None:
    """Replace the library with ``n`` copies of the base items (kept in ``.bench-bases``)."""
    lib, ext, stash = repo / "library", repo / "extracted", repo / ".bench-bases"
    if not stash.exists():
        shutil.copytree(lib, stash / "library")
        shutil.copytree(ext, stash / "extracted")
    shutil.rmtree(lib)
    shutil.rmtree(ext)
    lib.mkdir()
    ext.mkdir()
    for i in range(n):
        add_item(repo, i)


def add_item(repo: Path, i: int) -> None:
    """Item number ``i``: a copy of base item ``i`` modulo the number of bases."""
    stash = repo / ".bench-bases"
    metas = sorted((stash / "library").rglob("metadata.json"))
    src = metas[i % len(metas)].parent
    rel = src.relative_to(stash / "library")
    files = {p.name: p.read_bytes() for p in (stash / "extracted" / rel).iterdir()}
    make_item(repo, src, rel, files, i)


def make_item(repo: Path, src: Path, rel: Path, files: dict[str, bytes], i: int) -> None:
    meta = json.loads((src / "metadata.json").read_text(encoding="utf-8"))
    cid = hashlib.sha256(f"bench:{i}".encode()).hexdigest()[:16]
    old = meta["id"]
    name = f"{meta['title']} #{i} ({cid[:8]})"
    folder = repo / "library" / rel.parts[0] / name
    folder.mkdir(parents=True)
    transcript = (src / "transcript.md").read_bytes()
    stamp = b"[09:59:59] " if transcript.startswith(b"[") else b""
    transcript += stamp + f"Synthetic item {i} for the site benchmark, token zq{i}x.\n".encode()
    (folder / "transcript.md").write_bytes(transcript)
    digest = "sha256:" + hashlib.sha256(transcript).hexdigest()
    meta.update(
        id=cid, title=f"{meta['title']} #{i}", source_id=cid[:8],
        tags=[TAGS[i % len(TAGS)], TAGS[(i * 7 + 3) % len(TAGS)]],
        created_at=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
    )  # fmt: skip
    meta.setdefault("artifact_digests", {})["transcript.md"] = digest
    (folder / "metadata.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    out = repo / "extracted" / rel.parts[0] / name
    out.mkdir(parents=True)
    for fname, data in files.items():
        text = data.decode("utf-8").replace(old, cid)
        if fname == "extraction.json":
            obj = json.loads(text)
            obj["transcript_digest"] = digest
            text = json.dumps(obj, indent=2)
        (out / fname).write_text(text, encoding="utf-8")


def build(repo: Path, mode: str) -> dict[str, Any]:
    report, _ = peak_rss_mb(repo, mode)
    return report


#: Run before a measured child's code: its own peak (``VmHWM``) written to a file when it
#: exits. ``ru_maxrss`` of a fork+exec child starts at its parent's peak — here the benchmark,
#: which may hold a grown library's index (``--grow``: every chunk line) — so it did not measure
#: the build.
_PEAK = """
import atexit as _atexit, os as _os
from arkai.adapters.events import maxrss_mb as _maxrss_mb
_atexit.register(lambda: open(_os.environ["ARKAI_BENCH_PEAK"], "w").write(str(_maxrss_mb())))
"""


def measured(
    code: str, args: list[str], out: Path, what: str
) -> tuple[dict[str, Any], dict[str, float]]:
    """``python -c code *args`` as a fork+exec child, stdout to ``out``: the JSON of its last
    line, its wall and CPU seconds and its own peak RSS (``VmHWM``, see :data:`_PEAK`;
    bench/index_scale.py measures its index runs with this too)."""
    peak_file = out.with_suffix(".peak")
    peak_file.unlink(missing_ok=True)
    env = dict(os.environ, ARKAI_BENCH_PEAK=str(peak_file))
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child: exec the code with stdout to a file
        with open(out, "wb") as fh:
            os.dup2(fh.fileno(), 1)
        os.execve(sys.executable, [sys.executable, "-c", _PEAK + code, *args], env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"{what} failed (status {status})")
    report = json.loads(out.read_text().strip().splitlines()[-1])
    # CPU time too: on a shared machine the wall clock also measures the neighbours.
    return report, {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": float(peak_file.read_text()),
    }


def peak_rss_mb(repo: Path, mode: str) -> tuple[dict[str, Any], float]:
    report, figures = measured(BUILD, [str(repo), mode], repo / ".bench-out.json", "site build")
    report["wall_s"], report["cpu_s"] = figures["wall_s"], figures["cpu_s"]
    return report, figures["peak_rss_mb"]


def size_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1)


def largest_page(docs: Path) -> dict[str, Any]:
    size, path = max((p.stat().st_size, p) for p in docs.rglob("*.md"))
    return {"page": path.relative_to(docs).as_posix(), "mb": round(size / 1e6, 2)}


def change_one(repo: Path) -> None:
    """Edit one item the way a person would: retitle it and add a tag."""
    meta_path = sorted((repo / "library").rglob("metadata.json"))[0]
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["title"] += " (edited)"
    meta["tags"] = [*meta.get("tags", []), "edited"]
    meta_path.write_text(json.dumps(meta, indent=2), encoding="utf-8")


def run(repo: Path, n: int) -> dict[str, Any]:
    synthesize(repo, n)
    for d in (".site-build", "site"):
        shutil.rmtree(repo / d, ignore_errors=True)
    full, rss = peak_rss_mb(repo, "auto")
    noop = build(repo, "auto")
    change_one(repo)
    one, one_rss = peak_rss_mb(repo, "auto")
    add_item(repo, n)
    added, added_rss = peak_rss_mb(repo, "auto")
    forced = build(repo, "full")
    fields = ("mkdocs", "generate_s", "mkdocs_s", "items_regenerated", "pages_written")
    return {
        "items": n,
        "pages": full["pages"],
        "full_build_s": full["wall_s"],
        "full_build_cpu_s": full["cpu_s"],
        "full_generate_s": full["generate_s"],
        "full_mkdocs_s": full["mkdocs_s"],
        "peak_rss_mb": rss,
        "site_mb": size_mb(repo / "site"),
        "search_index_mb": size_mb(repo / "site" / "search"),
        "build_folder_mb": size_mb(repo / ".site-build"),
        # Pages whose size grows with the library are held several times over while MkDocs
        # renders them: the largest one, and which.
        "largest_page": largest_page(repo / ".site-build" / "docs"),
        "noop_rebuild_s": noop["wall_s"],
        "noop_rebuild_cpu_s": noop["cpu_s"],
        "one_item_rebuild_s": one["wall_s"],
        "one_item_rebuild_cpu_s": one["cpu_s"],
        "one_item_rebuild_rss_mb": one_rss,
        "one_item_rebuild": {k: one[k] for k in fields},
        "one_item_ratio": round(one["wall_s"] / full["wall_s"], 3),
        "one_item_cpu_ratio": round(one["cpu_s"] / full["cpu_s"], 3),
        "one_added_rebuild_s": added["wall_s"],
        "one_added_rebuild_cpu_s": added["cpu_s"],
        "one_added_rebuild_rss_mb": added_rss,
        "one_added_rebuild": {k: added[k] for k in fields},
        "one_added_cpu_ratio": round(added["cpu_s"] / full["cpu_s"], 3),
        "forced_full_rebuild_s": forced["wall_s"],
    }


def grow(src: Path, dst: Path, copies: int) -> int:
    """A repo for the site stage alone: the items of a repo built by the whole pipeline
    (``bench/scale.py --keep``) ``copies`` times over, each copy under its own content ID
    and title, with ``index/`` (chunks, topics, related items) and ``beliefs/`` grown to
    match — what the site reads of a pipeline library ``copies`` times as large, without
    running the pipeline on it. Returns the number of items."""
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for name in ("library", "extracted", "beliefs", "mkdocs.yml", "params.yaml"):
        if (src / name).is_dir():
            shutil.copytree(src / name, dst / name)
        elif (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    ids = {m.parent: json.loads(m.read_text())["id"] for m in
           sorted((src / "library").rglob("metadata.json"))}  # fmt: skip
    from arkai.adapters.chunkparts import ChunkParts, write_lines

    listing = ChunkParts.load(src / "index" / "chunks")
    chunks = list(listing.iter_lines()) if listing is not None else []
    related = (src / "index" / "related.jsonl").read_bytes().splitlines(keepends=True)
    topics = json.loads((src / "index" / "topics.json").read_bytes())
    # topics.json version 2 names each item's own chunks, placed by catalog.json (the chunk lines'
    # order: here the items, then each copy's block); version 1 held positions in the file.
    positions = topics.get("version") == 1
    catalog = json.loads((src / "index" / "catalog.json").read_bytes())
    out_catalog = list(catalog["items"])
    out_chunks, out_related = list(chunks), list(related)
    extra: dict[str, list[dict[str, Any]]] = {}
    for c in range(1, copies):
        new = {cid: hashlib.sha256(f"grow:{c}:{cid}".encode()).hexdigest()[:16] for cid in
               ids.values()}  # fmt: skip
        for folder, cid in ids.items():
            rel = folder.relative_to(src / "library")
            for tree in ("library", "extracted"):
                if not (src / tree / rel).is_dir():
                    continue
                to = dst / tree / rel.parent / f"{rel.name} c{c}"
                to.mkdir(parents=True)
                for f in (src / tree / rel).iterdir():
                    if f.name == "metadata.json":
                        meta = json.loads(f.read_text())
                        meta.update(id=new[cid], title=f"{meta['title']} c{c}",
                                    source_id=new[cid][:8])  # fmt: skip
                        (to / f.name).write_text(json.dumps(meta, indent=2))
                    elif f.is_file():
                        data = f.read_bytes().replace(cid.encode(), new[cid].encode())
                        (to / f.name).write_bytes(data)
        out_catalog.extend(dict(e, id=new.get(e["id"], e["id"])) for e in catalog["items"])
        for line in chunks:
            cid = json.loads(line).get("content_id")
            out_chunks.append(line.replace(cid.encode(), new[cid].encode()) if cid in new else line)
        for line in related:
            cid = json.loads(line).get("id")
            if cid in new:
                out_related.append(line.replace(cid.encode(), new[cid].encode()))
        for term, entry in topics["topics"].items():
            extra.setdefault(term, []).extend(
                dict(it, content_id=new[it["content_id"]],
                     chunks=[pos + c * len(chunks) for pos in it["chunks"]] if positions
                     else it["chunks"])
                for it in entry["items"] if it["content_id"] in new
            )  # fmt: skip
    for term, more in extra.items():
        topics["topics"][term]["items"].extend(more)
    (dst / "index").mkdir()
    write_lines(dst / "index" / "chunks", out_chunks)
    (dst / "index" / "related.jsonl").write_bytes(b"".join(out_related))
    # In the index stage's layout (a topic per line), as the site reads the pipeline's.
    from arkai.search.topics import iter_topics_json

    with open(dst / "index" / "topics.json", "wb") as fh:
        fh.writelines(iter_topics_json(topics))
    (dst / "index" / "catalog.json").write_text(json.dumps(dict(catalog, items=out_catalog)))
    return len(ids) * copies


def change_transcript(repo: Path, n: int) -> None:
    """Append a line to the ``n``-th item's transcript, as the daily loop's benchmark does
    (the index files are left as they were)."""
    folder = sorted((repo / "library").rglob("metadata.json"))[n].parent
    with (folder / "transcript.md").open("a", encoding="utf-8") as fh:
        fh.write(f"A closing line appended to item {n}.\n")


def run_grown(src: Path, repo: Path, copies: int, changes: int) -> dict[str, Any]:
    items = grow(src, repo, copies)
    full, rss = peak_rss_mb(repo, "auto")
    out: dict[str, Any] = {"items": items, "copies": copies, "pages": full["pages"],
                           "full_build_cpu_s": full["cpu_s"], "peak_rss_mb": rss,
                           "changed": []}  # fmt: skip
    for k in range(changes):
        change_transcript(repo, (k * 997 + 500) % items)
        one, one_rss = peak_rss_mb(repo, "auto")
        out["changed"].append({"cpu_s": one["cpu_s"], "wall_s": one["wall_s"],
                               "peak_rss_mb": one_rss,
                               "pages_written": one["pages_written"]})  # fmt: skip
    cpus = sorted(c["cpu_s"] for c in out["changed"])
    out["one_changed_median_cpu_s"] = cpus[len(cpus) // 2] if cpus else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--keep", type=Path, help="Keep the knowledge repo here.")
    ap.add_argument("--grow", type=Path, metavar="REPO",
                    help="Instead: a repo built by bench/scale.py --keep (with its index), "
                         "grown --copies times over (see grow()); full build, then one "
                         "transcript changed --changes times.")  # fmt: skip
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--changes", type=int, default=3)
    args = ap.parse_args()
    if args.grow is not None:
        tmp = Path(tempfile.mkdtemp(prefix="arkai-site-grow-"))
        try:
            grown = [run_grown(args.grow, (args.keep or tmp) / f"x{c}", c, args.changes)
                     for c in args.copies]  # fmt: skip
        finally:
            if args.keep is None:
                shutil.rmtree(tmp, ignore_errors=True)
        print(json.dumps({"bench": "site-grown", "source": str(args.grow), "cpus": os.cpu_count(),
                          "load_avg_1m": round(os.getloadavg()[0], 1), "results": grown},
                         indent=2))  # fmt: skip
        return
    tmp = Path(tempfile.mkdtemp(prefix="arkai-site-bench-"))
    repo = args.keep or tmp / "kr"
    try:
        started = time.perf_counter()
        if not (repo / ".bench-bases").exists():
            bases(repo)
        setup_s = round(time.perf_counter() - started, 1)
        results = [run(repo, n) for n in args.items]
        # Growth of the full build's peak memory with the library (first to last size): what
        # a 100,000-item build would add, projected linearly.
        growth = None
        if len(results) > 1 and results[-1]["items"] != results[0]["items"]:
            lo, hi = results[0], results[-1]
            per_item = (hi["peak_rss_mb"] - lo["peak_rss_mb"]) / (hi["items"] - lo["items"])
            growth = {
                "kb_per_item": round(per_item * 1024, 2),
                "projected_100k_mb": round(hi["peak_rss_mb"] + per_item * (100_000 - hi["items"])),
            }
        print(json.dumps({
            "bench": "site", "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 1),
            "base_setup_s": setup_s, "targets": {"1000_items_s": 30, "1000_items_mb": 150,
                                                 "one_item_ratio": 0.25},
            "results": results, "peak_rss_growth": growth,
        }, indent=2))  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
