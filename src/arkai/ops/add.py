"""``arkai add``: route each input to its source kind, acquire it, and write library items.

Writes are all-or-nothing per item (built beside the final folder, then renamed), one bad
input never stops or undoes the others, and nothing a person wrote is overwritten: an item
whose source changed is refreshed only when its ``transcript.md`` is still exactly what arkai
wrote, and a refresh replaces only the files arkai wrote (``metadata.json`` and the artifacts
it lists) — ``review.yaml``, notes and anything else a person put in the folder stay.

Scratch folders are named ``.adding-<pid>-…`` beside the item; one left by a crashed ``add``
(its process gone) is hidden from git, DVC and item listings, and the next ``add`` removes it —
first putting back an item folder a crash left inside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import atomic_write_bytes, atomic_write_text, printable_path
from arkai.adapters.layout import LIBRARY, METADATA, TRANSCRIPT, Item, iter_items, load_metadata
from arkai.adapters.repo import Repo
from arkai.adapters.store import write_json
from arkai.core.hashing import content_id, digest
from arkai.core.redact import ALL_KINDS, SECRET_KINDS, redact, redact_json, scrub
from arkai.core.titles import folder_name, sanitize_title
from arkai.errors import ArkaiError, InvalidInputError
from arkai.sources.base import Acquired, AddOptions
from arkai.sources.chats.common import PLATFORMS, redaction_enabled
from arkai.sources.route import Route, is_url, learn_route, route

METADATA_SCHEMA_VERSION = 2
_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}(?:/[a-z0-9][a-z0-9_-]{0,39}){0,3}$")
_RESERVED = {
    "schema_version", "id", "canonical_ref", "ref", "url", "source_id", "title",
    "content_type", "tags", "created_at", "updated_at", "source", "timed", "artifacts",
    "artifact_digests", "content_hash",
}  # fmt: skip
#: Extensions ``arkai add DIR`` picks up (everything else in the folder is ignored).
DIR_EXTENSIONS = (
    ".vtt", ".srt", ".json", ".txt", ".md", ".markdown", ".html", ".htm", ".pdf",
    ".zip", ".rss", ".atom", ".xml",
)  # fmt: skip


@dataclass
class AddResult:
    """What happened to one input (or one item of a multi-item input)."""

    source: str
    """The input as given (URL or path)."""
    status: str
    """``added`` | ``updated`` | ``exists`` | ``kept`` (changed upstream, but edited here —
    nothing written) | ``failed`` | ``skipped`` (a part of the input that had nothing to add)."""
    id: str | None = None
    title: str | None = None
    path: str | None = None
    """Item folder relative to the repo root."""
    error: str | None = None
    exit_code: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k not in ("exit_code", "details")}
        return out | self.details


def parse_tags(raw: str | Sequence[str] | None) -> list[str]:
    """``"a, b"`` or ``["a", "b,c"]`` → sorted unique lower-case tags."""
    if raw is None:
        return []
    parts = [raw] if isinstance(raw, str) else list(raw)
    tags = {t.strip().lower() for p in parts for t in p.split(",")}
    return sorted(t for t in tags if t)


def check_type(content_type: str) -> str:
    if not _TYPE_RE.match(content_type):
        raise InvalidInputError(
            f"invalid --type {content_type!r}: use lower-case letters, digits, '-' or '_'"
        )
    return content_type


def canonical_ref(canonical: str) -> str:
    return f"url:{canonical}" if is_url(canonical) else canonical


def build_metadata(acq: Acquired, *, tags: list[str], now: str, ref: str) -> dict[str, Any]:
    """``metadata.json`` (schema v2 of the seed) for an acquired item."""
    source_name = next(n for n in sorted(acq.files) if n.startswith("source."))
    meta: dict[str, Any] = {k: v for k, v in acq.meta.items() if k not in _RESERVED}
    meta.update(
        {
            "schema_version": METADATA_SCHEMA_VERSION,
            "id": content_id(acq.canonical),
            "canonical_ref": canonical_ref(acq.canonical),
            "ref": acq.url or canonical_ref(acq.canonical),
            "url": acq.url,
            "source_id": acq.source_id,
            "title": sanitize_title(acq.title),
            "content_type": acq.content_type,
            "tags": tags,
            "created_at": now,
            "source": {
                "input": Path(ref).name if not is_url(ref) else ref,
                "format": acq.source_format,
                "bytes": len(acq.files[source_name]),
            },
            "timed": acq.timed,
            "content_hash": acq.content_hash or digest(acq.files[TRANSCRIPT]),
            "artifacts": {
                "source": f"./{source_name}",
                "transcript": f"./{TRANSCRIPT}",
                **(
                    {"conversation": "./conversation.yaml"}
                    if "conversation.yaml" in acq.files
                    else {}
                ),
            },
            "artifact_digests": {name: digest(blob) for name, blob in sorted(acq.files.items())},
        }
    )
    return meta


SCRATCH_PREFIX = ".adding-"
#: Inside a scratch folder during a swap: the old item folder, and the name to put it back as.
_OLD, _TARGET = "old", "target"


def _scratch(parent: Path) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=parent))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers(root: Path) -> int:
    """Remove scratch folders of ``add`` runs that are gone (crashed or killed), restoring an
    item folder a crash left mid-swap. Scratch folders of running ``add``s are left alone.
    Returns how many were removed."""
    lib = root / LIBRARY
    removed = 0
    if not lib.is_dir():
        return 0
    for top, dirs, names in os.walk(lib):  # never follows links
        parent = Path(top)
        scratch = [d for d in dirs if d.startswith(SCRATCH_PREFIX)]
        # Item folders and hidden folders are not searched further.
        dirs[:] = [] if METADATA in names else sorted(d for d in dirs if not d.startswith("."))
        with contextlib.suppress(OSError):
            for name in scratch:
                child = parent / name
                if child.is_symlink():
                    continue
                pid_text = child.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
                if pid_text.isdigit() and _pid_alive(int(pid_text)):
                    continue
                old, target = child / _OLD, child / _TARGET
                if old.is_dir() and target.is_file():
                    dest = parent / target.read_text(encoding="utf-8")
                    if dest.parent == parent and not dest.exists():
                        old.rename(dest)
                shutil.rmtree(child, ignore_errors=True)
                removed += 1
    return removed


def _build_folder(
    parent: Path, meta: dict[str, Any], files: dict[str, bytes], keep_from: Path | None = None
) -> Path:
    """A complete item folder under a scratch name; with ``keep_from``, every entry of that
    folder arkai did not write is copied in too (links copied as links)."""
    tmp = _scratch(parent)
    try:
        for name, blob in files.items():
            atomic_write_bytes(tmp / name, blob)
        write_json(tmp / METADATA, meta)
        if keep_from is not None:
            for src in people_files(keep_from):
                dest = tmp / src.name
                mode = os.lstat(src).st_mode
                if stat.S_ISDIR(mode):
                    shutil.copytree(src, dest, symlinks=True)
                elif stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                    shutil.copy2(src, dest, follow_symlinks=False)  # a link stays a link
                else:  # a FIFO, socket or device: never opened (a FIFO would block)
                    raise ArkaiError(
                        f"{src}: is not a regular file, folder or link; the item was not updated",
                        hint="move it out of the item folder and add the source again",
                    )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def write_new(root: Path, meta: dict[str, Any], files: dict[str, bytes]) -> Path:
    """Create the item folder atomically: build it beside its final place, then rename."""
    parent = root / LIBRARY / str(meta["content_type"])
    final: Path = parent / folder_name(str(meta["title"]), str(meta["source_id"]))
    if final.exists():
        raise ArkaiError(f"{final}: already exists and belongs to another item; nothing written")
    tmp = _build_folder(parent, meta, files)
    try:
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def transcript_untouched(item: Item) -> bool:
    """True when ``transcript.md`` is byte-for-byte what arkai wrote (no human edits)."""
    recorded = (item.metadata.get("artifact_digests") or {}).get(TRANSCRIPT)
    data = item.read(TRANSCRIPT, missing_ok=True)
    return bool(recorded) and data is not None and digest(data) == recorded


def arkai_files(metadata: dict[str, Any]) -> set[str]:
    """Names of the files arkai wrote into an item folder (``metadata.json`` and the
    artifacts whose digests it records)."""
    return {METADATA, *(metadata.get("artifact_digests") or {})}


def people_files(folder: Path) -> list[Path]:
    """Entries of an item folder that arkai did not write (``review.yaml``, notes, …)."""
    ours = arkai_files(load_metadata(folder))
    return sorted(
        p for p in folder.iterdir() if p.name not in ours and not p.name.startswith(SCRATCH_PREFIX)
    )


def replace_item(item: Item, meta: dict[str, Any], files: dict[str, bytes]) -> Path:
    """Swap in a refreshed item in the same folder: arkai's files are replaced, every other
    entry (``review.yaml``, a person's notes, subfolders) is carried over unchanged."""
    clash = sorted({p.name for p in people_files(item.path)} & (set(files) | {METADATA}))
    if clash:
        raise ArkaiError(
            f"{item.path}: {', '.join(clash)} would replace a file arkai did not write; "
            "nothing changed",
            hint="move that file aside and add the source again",
        )
    meta = {**meta, "created_at": item.metadata.get("created_at", meta["created_at"])}
    tmp = _build_folder(item.path.parent, meta, files, keep_from=item.path)
    swap = _scratch(item.path.parent)
    try:
        atomic_write_text(swap / _TARGET, item.path.name)
        item.path.rename(swap / _OLD)
        tmp.rename(item.path)
    except BaseException:
        if (swap / _OLD).exists() and not item.path.exists():
            (swap / _OLD).rename(item.path)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(swap, ignore_errors=True)
        raise
    shutil.rmtree(swap, ignore_errors=True)
    return item.path


def apply_redaction(acq: Acquired) -> None:
    """Redact secrets and personal data from a text source's files (``--redact``)."""
    counts: dict[str, int] = {}
    for name, blob in list(acq.files.items()):
        if name.endswith((".pdf", ".zip")):
            continue
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError:
            continue
        clean, found = redact(text)
        for kind, n in found.items() if name == TRANSCRIPT else ():  # once, as for chats
            counts[kind] = counts.get(kind, 0) + n
        acq.files[name] = clean.encode("utf-8")
    if counts:
        prior = acq.meta.get("redactions") or {}
        acq.meta["redactions"] = {k: prior.get(k, 0) + counts.get(k, 0) for k in {*prior, *counts}}
        # A binary original (a PDF, an archive) cannot be redacted in place: when its text held
        # something redacted, the original is not written at all, only the redacted transcript.
        for name in [n for n in acq.files if n.endswith((".pdf", ".zip"))]:
            del acq.files[name]
            acq.files["source.withheld.txt"] = (
                f"The original {name} was not stored: its text held values that were redacted "
                "(counted in metadata.json under `redactions`).\n"
            ).encode()
            acq.meta["source_withheld"] = name
    acq.content_hash = digest(acq.files[TRANSCRIPT])


def store(
    root: Path, acq: Acquired, opts: AddOptions, ref: str, known: dict[str, Item]
) -> AddResult:
    """Write one acquired item (new, refreshed, or left alone) and say which."""
    if opts.content_type and not acq.content_type.startswith("chats/"):
        acq.content_type = check_type(opts.content_type)
    if opts.title:
        acq.title = opts.title
    chat = acq.source_format in PLATFORMS
    if opts.redact and not chat:
        apply_redaction(acq)
    meta = build_metadata(acq, tags=opts.tags, now=opts.now, ref=ref)
    # Redacting: every kind, in every field (the title, so the folder name, included). Not:
    # still no credential goes into metadata.json, which git commits and the site publishes —
    # a source URL's password or token (`?token=…`) is replaced.
    full = opts.redact or (chat and redaction_enabled(opts))
    meta = redact_json(meta, ALL_KINDS if full else SECRET_KINDS)
    cid = meta["id"]
    existing = known.get(cid)
    if existing is None:
        final = write_new(root, meta, acq.files)
        known[cid] = Item(root=root, path=final, metadata=meta)
        return AddResult(ref, "added", cid, meta["title"], str(final.relative_to(root)),
                         details={"kind": acq.source_format})  # fmt: skip
    rel = str(existing.path.relative_to(root))
    recorded = existing.metadata.get("artifact_digests") or {}
    if (
        existing.metadata.get("content_hash") == meta["content_hash"]
        and recorded.get(TRANSCRIPT) == meta["artifact_digests"][TRANSCRIPT]
    ):
        return AddResult(ref, "exists", cid, existing.title, rel)
    if not transcript_untouched(existing):
        return AddResult(
            ref, "kept", cid, existing.title, rel,
            details={"reason": "changed at the source, but transcript.md was edited here"},
        )  # fmt: skip
    meta["tags"] = sorted({*existing.metadata.get("tags", []), *opts.tags})
    meta["updated_at"] = opts.now
    replace_item(existing, meta, acq.files)
    known[cid] = Item(root=root, path=existing.path, metadata=meta)
    return AddResult(ref, "updated", cid, meta["title"], rel)


def expand_inputs(refs: Iterable[str]) -> list[str]:
    """Directories become the source files inside them (sorted, hidden files skipped)."""
    out: list[str] = []
    for ref in refs:
        path = Path(ref)
        if not is_url(ref) and path.is_dir() and not path.is_symlink():
            found = [
                str(child)
                for child in sorted(path.rglob("*"))
                if not any(p.startswith(".") for p in child.relative_to(path).parts)
                and child.is_file()
                and not child.is_symlink()
                and child.suffix.lower() in DIR_EXTENSIONS
            ]
            # An empty folder stays as itself, so it is reported rather than silently dropped.
            out.extend(found or [ref])
        else:
            out.append(ref)
    return out


def read_source_list(path: Path) -> list[tuple[str, list[str]]]:
    """``--from FILE``: one input per line, then optional tags (``a,b`` or ``tag:a``);
    ``#`` starts a comment; relative paths are relative to the list file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot read the source list ({exc})") from None
    entries: list[tuple[str, list[str]]] = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError as exc:
            raise InvalidInputError(f"{path}:{n}: {exc}") from None
        if not tokens:
            continue
        ref, rest = tokens[0], tokens[1:]
        if not is_url(ref) and not Path(ref).is_absolute():
            ref = str(path.parent / ref)
        tags = parse_tags([t.removeprefix("tag:").removeprefix("tags:") for t in rest])
        entries.append((ref, tags))
    return entries


def add_inputs(
    root: Path,
    inputs: Sequence[tuple[str, list[str]]],
    opts: AddOptions,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    explain: bool = False,
) -> list[AddResult]:
    """Add each (input, extra tags); failures are reported per input and never stop the rest."""
    clean_leftovers(root)
    known = {item.id: item for item in iter_items(root)}
    results: list[AddResult] = []
    with events.run(root, "add", inputs=len(inputs)) as log:
        for n, (ref, tags) in enumerate(inputs):
            shown = printable_path(ref)
            if progress:
                progress(n, len(inputs), shown)
            with log.step("add", source=shown) as info:
                if shown != ref:  # a name whose bytes are not UTF-8: no file arkai writes holds it
                    error = InvalidInputError(
                        f"{shown}: a file name that is not UTF-8 cannot be added",
                        hint="rename the file",
                    )
                    results.append(AddResult(shown, "failed", error=str(error),
                                             exit_code=error.exit_code))  # fmt: skip
                    info.update(statuses=["failed"])
                    continue
                results.extend(_add_one(root, ref, tags, opts, known, explain, info))
        if progress:
            progress(len(inputs), len(inputs), "")
    return results


def _add_one(
    root: Path,
    ref: str,
    tags: list[str],
    opts: AddOptions,
    known: dict[str, Item],
    explain: bool,
    info: dict[str, Any],
) -> list[AddResult]:
    chosen: Route | None = None
    try:
        chosen = route(root, ref, forced=opts.content_type)
        # --type either picked the source kind (override) or names the library folder.
        folder = None if chosen.layer == "override" else opts.content_type
        one = AddOptions(
            **{**opts.__dict__, "tags": sorted({*opts.tags, *tags}), "content_type": folder}
        )
        acquired, warnings = acquire(chosen, ref, one)
        results = [_store_one(root, acq, one, ref, known) for acq in acquired]
        results += [AddResult(ref, "skipped", error=w) for w in warnings]
        if not acquired and not warnings:
            raise InvalidInputError(f"{ref}: nothing to add")
        learn_route(root, ref, chosen.source.name)
    except ArkaiError as exc:
        results = [AddResult(ref, "failed", error=str(exc), exit_code=exc.exit_code)]
    except OSError as exc:
        # A file-system refusal (a name too long, a full disk) fails this input only.
        where = exc.filename or ref
        results = [AddResult(ref, "failed", error=f"{where}: {exc.strerror or exc}",
                             exit_code=1)]  # fmt: skip
    info.update(
        route=chosen.to_dict() if chosen else None,
        statuses=[r.status for r in results],
        content_ids=[r.id for r in results if r.id],
    )
    if explain and chosen is not None:
        for r in results:
            r.details["route"] = chosen.to_dict()
    for r in results:  # what is printed never echoes a secret (a URL's password)
        r.source, r.error = scrub(r.source), scrub(r.error) if r.error else r.error
    return results


def _store_one(
    root: Path, acq: Acquired, opts: AddOptions, ref: str, known: dict[str, Item]
) -> AddResult:
    """:func:`store`, with a failure reported for this item only (an input holding many
    items, a chat export, goes on with the next)."""
    try:
        return store(root, acq, opts, ref, known)
    except ArkaiError as exc:
        return AddResult(ref, "failed", title=acq.title, error=str(exc), exit_code=exc.exit_code)
    except OSError as exc:
        where = exc.filename2 or exc.filename or ref
        return AddResult(ref, "failed", title=acq.title,
                         error=f"{where}: {exc.strerror or exc}", exit_code=1)  # fmt: skip


def acquire(chosen: Route, ref: str, opts: AddOptions) -> tuple[list[Acquired], list[str]]:
    """Call the source kind, using its warnings channel when it has one."""
    path = None if is_url(ref) else Path(ref)
    with_warnings = getattr(chosen.source, "acquire_with_warnings", None)
    if callable(with_warnings):
        items, warnings = with_warnings(ref, path, opts)
        return list(items), [str(w) for w in warnings]
    return list(chosen.source.acquire(ref, path, opts)), []


@dataclass(frozen=True)
class AddRequest:
    """What ``arkai add`` / ``arkai ingest`` were asked (one field per option)."""

    inputs: tuple[str, ...] = ()
    from_file: Path | None = None
    tags: tuple[str, ...] = ()
    title: str | None = None
    content_type: str | None = None
    transcript: Path | None = None
    episodes: tuple[str, ...] = ()
    all_branches: bool = False
    redact: bool | None = None
    explain: bool = False


def add(
    repo: Repo,
    request: AddRequest,
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[AddResult]:
    """``arkai add``: expand folders and ``--from`` lists, then add every input."""
    if request.content_type is not None:
        check_type(request.content_type)
    entries: list[tuple[str, list[str]]] = [(ref, []) for ref in expand_inputs(request.inputs)]
    if request.from_file is not None:
        entries += read_source_list(request.from_file)
    if request.title is not None and len(entries) > 1:
        raise InvalidInputError("--title applies to one input; give one with it")
    opts = AddOptions(
        params=repo.params,
        now=events.utc_now(),
        tags=parse_tags(list(request.tags)),
        title=request.title,
        content_type=request.content_type,
        transcript=request.transcript.resolve() if request.transcript is not None else None,
        all_branches=request.all_branches,
        redact=request.redact,
        select=list(request.episodes),
    )
    return add_inputs(repo.root, entries, opts, progress=progress, explain=request.explain)


def ingest(
    repo: Repo,
    request: AddRequest,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    added: Callable[[list[AddResult]], None] | None = None,
    notice: Callable[[str], None] | None = None,
) -> list[AddResult]:
    """``arkai ingest``: :func:`add`, tell ``added``, then run the pipeline when anything was
    added or updated (:class:`PipelineError`, exit 3 and resumable, when it fails; ``notice``:
    as :func:`arkai.ops.run.run_pipeline`'s)."""
    from arkai.ops.run import run_pipeline

    results = add(repo, request, progress=progress)
    if added is not None:
        added(results)
    if any(r.status in ("added", "updated") for r in results) or all(
        r.status != "failed" for r in results
    ):
        run_pipeline(repo, notice=notice)
    return results
