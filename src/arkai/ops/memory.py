"""The belief memory's operations: the ``beliefs`` step, recall, listing, history, context
packs, people's decisions (forget, pin, prune), reflection, stats, export and import.

Beliefs are a replay of files (:mod:`arkai.memory.replay`), so every operation here either
rebuilds ``beliefs/`` from the library and ``memory/`` or reads it; people's decisions are
written to ``memory/decisions.yaml`` and take effect at the next replay (``dvc repro`` or
``arkai memory build``). Effective confidence is computed at read time from the clock passed in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai import __version__
from arkai.adapters import manifest
from arkai.adapters import memory as files
from arkai.adapters.events import RunLog
from arkai.adapters.fs import atomic_write_text, read_repo_file
from arkai.adapters.itemcache import CACHE_DIR
from arkai.adapters.layout import load_items
from arkai.adapters.repo import Repo
from arkai.core.hashing import text_digest
from arkai.core.tokens import count_tokens
from arkai.errors import (
    AmbiguousIdError,
    ArkaiError,
    InvalidInputError,
    LibraryError,
    NotFoundError,
    PipelineError,
)
from arkai.memory import contradict
from arkai.memory.contradict import Conflict
from arkai.memory.episodes import (
    EPISODES_VERSION,
    Keyed,
    episode_table,
    item_episodes,
    library_episodes,
    ordered,
    planned_episodes,
    planned_keys,
)
from arkai.memory.replay import (
    CANDIDATES,
    Checker,
    Decisions,
    ReplayParams,
    effective_confidence,
    fingerprints,
    replay,
)
from arkai.memory.resume import SavedLog, load_log, load_saved, save_log
from arkai.model.belief import ACTIVE, BELIEF_STATUSES, TYPES, Belief, Change, Episode
from arkai.model.record import AsDict

MIN_PREFIX = 8
RECALL_THRESHOLD = 0.3
EXPORT_FORMAT = "arkai-memory/1"
Progress = Callable[[int, int, str], None]


def replay_params(repo: Repo) -> ReplayParams:
    try:
        return ReplayParams.from_params(dict(repo.param("memory", {}) or {}))
    except (TypeError, ValueError) as exc:
        raise LibraryError(f"{repo.root / 'params.yaml'}: {exc}") from None


# -- the beliefs step ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BuildResult(AsDict):
    episodes: int
    beliefs: int
    by_status: dict[str, int]
    embedded: int
    changed: bool
    resumed_at: int = 0
    """Episodes before the first changed one (their recorded outcome reused)."""
    decided: int = 0
    """Episodes decided afresh; every other one took its recorded outcome."""


def collect_episodes(repo: Repo, *, cached: bool = False) -> list[Episode]:
    """Every episode in time order; ``cached`` (the ``beliefs`` step): an unchanged item's
    episodes come from the episode table (:func:`arkai.memory.episodes.library_episodes`),
    without their quotes (the replay reads none) — as the DVC stage, only the items whose
    manifest lines changed are looked at (:func:`_stage_episodes`)."""
    if cached and repo.stage == STAGE:
        return _stage_episodes(repo).load()
    eps: list[Episode] = []
    if cached:
        eps = library_episodes(repo.root, repo.items(), quotes=False)
    else:
        for item in repo.items():
            eps.extend(item_episodes(item))
    eps.extend(files.read_imported(repo.root))
    return ordered(eps)


#: The DVC stage :func:`build` runs as (``stages/beliefs.py``), and the name its episodes' last
#: complete read is sealed under (:func:`arkai.adapters.manifest.seal`).
STAGE = "beliefs"
EPISODES_SEAL = "beliefs-episodes"
#: The manifests the stage depends on (written by the extract stage before it).
STAGE_FOLDERS = ("library", "extracted")
#: Bump when what the sealed result (:func:`_stage_episodes`) holds changes.
SEALED_VERSION = 2


@dataclass(frozen=True, slots=True)
class _Read:
    """The episodes, planned: ``source`` is the digest of them as the replay reads them
    (:func:`_source`), or None when that is not known; ``load`` reads them (in time order)."""

    source: str | None
    load: Callable[[], list[Episode]]


def _source(keys: list[Keyed], imported: list[Episode]) -> str | None:
    """The digest of the episodes as the replay reads them, from each item's episodes' digest
    and the imported episodes (None when an item's is not known). The items are sorted:
    :func:`~arkai.memory.episodes.ordered` sorts the episodes, and an episode's ID names its
    item, so the library's order makes no other episodes."""
    made = sorted((cid, digest) for _, cid, _, _, digest in keys)
    if any(digest is None for _, digest in made):
        return None
    doc = {"episodes": EPISODES_VERSION, "arkai": __version__, "items": made,
           "imported": [[e.id, e.statement, e.date, e.kind] for e in imported]}  # fmt: skip
    return text_digest(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))


def _episodes_read(repo: Repo) -> _Read:
    """The episodes the replay is given: as the DVC stage :func:`_stage_episodes`; else every
    item's, from the episode table when its files are unchanged, read now."""
    if repo.stage == STAGE:
        return _stage_episodes(repo)
    keys: list[Keyed] = []
    eps = library_episodes(repo.root, repo.items(), quotes=False, keys=keys)
    imported = files.read_imported(repo.root)
    return _Read(_source(keys, imported), lambda: ordered([*eps, *imported]))


def _stage_episodes(repo: Repo) -> _Read:
    """The episodes as the ``beliefs`` stage reads them (without quotes): like the extract
    stage after a complete run (:func:`arkai.adapters.manifest.changes`), only the items whose
    lines in the manifests of library/ and extracted/ — the stage's DVC dependencies, written
    by the extract stage in the same ``dvc repro`` — differ from the last complete read's are
    looked at; the others' episodes come from the episode table under the key their files
    had then, not looking at their files (the items' folders, IDs, dates and keys are sealed
    with the manifests), and are read only when :meth:`_Read.load` is called: a build whose
    replay stands needs only their keys (:func:`_kept`). Without such a read, when a changed
    line belongs to no item, when an item folder cannot be read, or when the table does not
    hold a kept item under its key, every item is looked at
    (:func:`arkai.memory.episodes.library_episodes`). A file changed after the manifests were
    written is seen by the next ``dvc repro``; ``arkai memory build`` looks at every item's
    files."""
    root = repo.root
    inputs = {"stage": EPISODES_SEAL, "episodes": EPISODES_VERSION, "sealed": SEALED_VERSION,
              "arkai": __version__}  # fmt: skip
    imported = files.read_imported(root)
    plan = manifest.planned(root, EPISODES_SEAL, STAGE_FOLDERS, inputs)
    if plan is None:
        whole = library_episodes(root, repo.items(), quotes=False)
        return _Read(None, lambda: ordered([*whole, *imported]))
    sealed, changes = plan.sealed, plan.changes
    last = _sealed_keys(sealed.result) if sealed is not None and changes is not None else None
    keys: list[Keyed] = []
    eps = None
    planned = False
    table = None
    if changes is not None and last is not None:
        items, problems = load_items(root, changes.folders)
        if not problems:
            kept = [row for row in last if row[0] not in changes.folders]
            table = episode_table(root)  # (loaded once: read again by load() below)
            planned = planned_keys(root, items, kept, keys, table)
    if not planned:
        keys.clear()
        items, problems = repo.scan()
        eps = library_episodes(root, items, quotes=False, keys=keys)
        del items
    source = None
    if problems or any(key is None for _, _, _, key, _ in keys):
        manifest.unseal(root, EPISODES_SEAL)  # (looked at whole next time)
    else:
        result = {"version": SEALED_VERSION, "items": keys}
        data = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        manifest.seal(root, EPISODES_SEAL, plan.now, len(keys), data)
        source = _source(keys, imported)  # (read whole or planned: the same digest)
    if eps is not None:
        got = eps
        return _Read(source, lambda: ordered([*got, *imported]))

    def load() -> list[Episode]:
        nonlocal table
        # Every item from the table under the key just sealed; a row lost meanwhile: whole.
        found = planned_episodes(root, (), keys, [], table)
        table = None  # (where its rows are: not held through the replay)
        if found is None:
            found = library_episodes(root, repo.items(), quotes=False)
        return ordered([*found, *imported])

    return _Read(source, load)


def _sealed_keys(data: bytes | None) -> list[Keyed] | None:
    """The items a sealed read of the episodes kept (:func:`_stage_episodes`); None when it
    is not that."""
    try:
        doc = json.loads(data or b"")
        if doc["version"] != SEALED_VERSION:
            return None
        return [(str(f), str(c), str(d), None if k is None else str(k),
                 None if m is None else str(m))
                for f, c, d, k, m in doc["items"]]  # fmt: skip
    except (ValueError, KeyError, TypeError):
        return None


def _embedder(repo: Repo) -> Any:
    """The index's embedder (one instance per process: a warm recall embeds only the query)."""
    from arkai.search import embed

    return embed.get_embedder(str(repo.param("index.embedder", "default")))


def _stored_model(repo: Repo, folder: Path) -> str | None:
    """The model of the statement store on disk when the embedder ``index.embedder`` names
    wrote it (for ``default``: either model it resolves to), read without loading a model or
    the store; None otherwise."""
    import os

    from arkai.search import embed
    from arkai.search.vectors import META_FILE

    name = str(repo.param("index.embedder", "default"))
    held = embed.held_model(name)
    if held is not None:  # resolved in this process already
        wanted = {held}
    elif name == "default":
        forced = os.environ.get("ARKAI_EMBEDDER")
        choices = (embed.OnnxMiniLMEmbedder.name, embed.MiniLMEmbedder.name)
        wanted = {forced} if forced and forced != "default" else set(choices)
    else:
        wanted = {name}
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    model = meta.get("model") if isinstance(meta, dict) else None
    if model not in wanted or not isinstance(meta.get("dim"), int):
        return None
    return str(model)


#: The statement store's segments last found intact (:func:`arkai.search.vectors.drop_damaged`),
#: beside the index stage's caches.
STORE_CHECKS = "belief-store-segments.json"


def _stored_vectors(repo: Repo, folder: Path) -> Any:
    """The statement store on disk when the embedder ``index.embedder`` names wrote it
    (:func:`_stored_model`), read without loading a model; None otherwise."""
    from arkai.search.vectors import VectorStore

    model = _stored_model(repo, folder)
    return None if model is None else VectorStore.load(folder, model)


def embed_statements(
    repo: Repo, texts: list[str], progress: Progress | None = None
) -> tuple[Any, int, str]:
    """Vectors for ``texts`` (rows in order), reusing the statement store; (rows, embedded,
    model). The embedder is loaded only when a statement is not in the store, and let go
    (``embed.release_embedders``) before the rows are gathered: the replay after this never
    embeds."""
    from arkai.search import embed, embedbatches
    from arkai.search.vectors import (
        VectorStore,
        drop_damaged,
        key_ids,
        record_intact,
        stored_rows,
    )

    keys = [text_digest(t) for t in texts]
    ids = key_ids(keys)  # (made once: ≈ 2 µs a key, and the store is asked three times)
    folder = files.cache_dir(repo.root) / files.STORE
    checks = repo.root / CACHE_DIR / STORE_CHECKS
    store = _stored_vectors(repo, folder)  # under the recipe it records
    if store is not None:
        drop_damaged(store, folder, checks)
    todo: list[str] = []
    # A store made by another recipe of the model is embedded again, whole. With statements
    # to embed, the embedder says its recipe below; without, its factory does (no model).
    if (
        store is None
        or store.missing(keys, ids)
        or store.recipe != embed.recipe_of(store.model_name)
    ):
        held = embed.held_embedders()
        embedder = _embedder(repo)
        recipe = embed.recipe_of(embedder)
        if store is None or store.model_name != embedder.name or store.recipe != recipe:
            store = VectorStore.load(folder, embedder.name, dim=int(embedder.dim), recipe=recipe)
            drop_damaged(store, folder, checks)
        todo = store.missing(keys, ids)
        by_key = dict(zip(keys, texts, strict=True))
        # Here or as Ray tasks (extract.executor): the same batches, in the same order.
        extract = repo.params.get("extract")
        batches = embedbatches.encoded(embedder, todo, by_key, 256, extract, encode_size=64)
        for n, (part, rows) in enumerate(batches, 1):
            store.add(part, rows)
            if progress:
                progress(min(n * 256, len(todo)), len(todo), "embedding beliefs")
        del embedder, batches
        # A model is ≈ 110 MB, and the stage's peak comes after its last use.
        embed.release_embedders(keep=held)
    if store.prune(ids) or todo or store.unsaved:
        store.save(folder)
    record_intact(store, folder, checks)
    # In episode order, read by row from the store's files as the replay asks (≈ 1.2 GB of
    # rows at 100,000 items: never held, nor copied).
    ordered = stored_rows(store, store.rows_of(ids))
    return ordered, len(todo), store.model_name


def checker(repo: Repo) -> tuple[Checker, str]:
    """The contradiction check ``memory.provider`` names, and a label for the output."""
    name = str(repo.param("memory.provider") or "builtin")
    if name == "builtin":
        return contradict.check, "builtin"
    from arkai.adapters.events import utc_now
    from arkai.patterns import OutputError, get_pattern
    from arkai.providers.runner import make_runner

    params = dict(repo.params)
    model = repo.param("memory.model") or params["extract"].get("model")
    params["extract"] = dict(params["extract"], provider=name, model=model)
    runner = make_runner(repo.root, params, refresh=False, now=utc_now())
    pattern = get_pattern("check_contradiction", repo.root)

    def ask(old: str, new: str) -> Conflict | None:
        # Only pairs the documented rules or the similarity band put in question reach here.
        try:
            out = runner.run(pattern, f"OLDER: {old}\nNEWER: {new}", {}).value
        except (ArkaiError, OutputError) as exc:
            raise PipelineError(f"check_contradiction via {name}: {exc}") from None
        if not isinstance(out, dict) or not isinstance(out.get("contradicts"), bool):
            raise PipelineError(f"check_contradiction: {name} returned {str(out)[:200]!r}")
        if not out["contradicts"]:
            return None
        return Conflict("provider", str(out.get("reason") or "")[:300], 0.0)

    return ask, f"{name}:{runner.model or 'default'}"


def build(
    repo: Repo, *, progress: Progress | None = None, started: RunLog | None = None
) -> BuildResult:
    """Replay every episode into ``beliefs/`` (the ``beliefs`` DVC stage), logged as a run
    (``started``: one the caller started, :func:`arkai.adapters.events.start`)."""
    with repo.run("beliefs", started=started) as log:
        return _build(repo, progress, log)


#: Bump when the replay's rules change: a persisted replay log of an older version is unused.
REPLAY_VERSION = 2


def _build(repo: Repo, progress: Progress | None, log: RunLog) -> BuildResult:
    """The build in the run's steps (episodes, vectors, replay, write): each step's event
    records the process's peak memory when it ended. When nothing the replay reads changed
    since the last one — the same episodes, parameters, decisions, check and embedder — and
    what it wrote is still there byte for byte, that write stands (step ``kept``): no
    statement is looked up, nothing replayed or written. As the DVC stage, episodes made from
    the same files as the last replay's (their :attr:`_Read.source`) are not even read."""
    params = replay_params(repo)
    check, check_label = checker(repo)
    raw = files.read_decisions(repo.root)
    decisions = Decisions(forget=raw["forget"], pin=raw["pin"], prune=raw["prune"])
    replayed = {k: getattr(params, k) for k in ReplayParams.__slots__}
    folder = files.cache_dir(repo.root)
    # The store's model is the one embed_statements gives when it holds every statement
    # (else some statement is new, and the episodes are not the last replay's).
    model = _stored_model(repo, folder / files.STORE)
    first = None if model is None else _replay_key(replayed, check_label, raw, model)
    saved = None if first is None else load_saved(folder, first)
    kept = None
    with log.step("episodes") as info:
        read = _episodes_read(repo)
        # The last replay's episodes by their source: only its outputs are checked.
        sourced = (saved is not None and read.source is not None
                   and isinstance(saved.written, dict)
                   and saved.written.get("source") == read.source)  # fmt: skip
        episodes = None
        if sourced and saved is not None:
            kept = _kept(repo, saved, None)
        if kept is None:
            episodes = read.load()
        info["episodes"] = kept.episodes if kept is not None else len(episodes or ())
        if kept is not None:
            info["read"] = False  # (the last replay's sources: not read)
    # The episodes' fingerprints, made once (≈ 2.4 µs an episode) for the check and the replay.
    prints = fingerprints(episodes) if episodes is not None else None
    if not sourced and saved is not None and prints is not None:
        kept = _kept(repo, saved, prints)
        if kept is not None and first is not None and read.source is not None:
            # The same episodes from other files (or a log from before sources were kept):
            # the source recorded, so that the next run need not read them.
            save_log(folder, first, saved.log, {**(saved.written or {}), "source": read.source})
    if kept is not None:
        with log.step("kept") as info:
            info["beliefs"] = kept.beliefs
        return kept
    assert episodes is not None
    # Not held through the embedding (≈ 160 bytes an episode): read again for the replay.
    del saved
    header = {
        "format": 1,
        "as_of": None,
        "episodes": len(episodes),
        "params": replayed,
        "contradiction_check": check_label,
    }
    with log.step("vectors") as info:
        statements = [e.statement for e in episodes]
        vectors, embedded, model = embed_statements(repo, statements, progress)
        del statements
        info["embedded"] = embedded
    key = _replay_key(replayed, check_label, raw, model)
    with log.step("replay") as info:
        # The log is passed, not kept: the replay lets it go once the episodes are replayed.
        result = replay(episodes, vectors, params=params, decisions=decisions, check=check,
                        resume=load_log(folder, key), prints=prints)  # fmt: skip
        info.update(beliefs=len(result.beliefs), decided=result.decided)
    counts = {s: sum(b.status == s for b in result.beliefs) for s in BELIEF_STATUSES}
    with log.step("write"):
        header["as_of"] = result.as_of
        changed = files.write_state(
            repo.root, header, result.beliefs, result.changes, result.vectors
        )
        if result.log is not None:
            written = {"files": files.written_digests(repo.root),
                       "beliefs": len(result.beliefs), "by_status": counts,
                       "source": read.source}  # fmt: skip
            save_log(folder, key, result.log, written)
    return BuildResult(
        len(episodes), len(result.beliefs), counts, embedded, changed, result.resumed_at,
        result.decided,
    )  # fmt: skip


def _replay_key(params: dict[str, Any], check: str, decisions: dict[str, Any], model: str) -> str:
    """Everything but the episodes that a replay's outcome depends on (the replay log is kept
    under it): a change re-replays everything."""
    same = {"version": REPLAY_VERSION, "params": params, "check": check,
            "decisions": decisions, "model": model, "candidates": CANDIDATES}  # fmt: skip
    return text_digest(json.dumps(same, sort_keys=True, ensure_ascii=False))


def _kept(repo: Repo, saved: SavedLog, prints: npt.NDArray[Any] | None) -> BuildResult | None:
    """The last build's result when ``saved`` (its log, under this build's key) was replayed
    from exactly the episodes of these fingerprints (None: the caller found them the same by
    the source the log records) and every file it wrote still holds what it wrote; else
    None."""
    w, logged = saved.written, saved.log.fingerprints
    if not isinstance(w, dict):
        return None
    if prints is not None and not np.array_equal(logged, prints):
        return None
    beliefs, by_status, digests = w.get("beliefs"), w.get("by_status"), w.get("files")
    if not (
        type(beliefs) is int
        and isinstance(by_status, dict)
        and set(by_status) == set(BELIEF_STATUSES)
        and all(type(v) is int for v in by_status.values())
        and isinstance(digests, dict)
        and None not in digests.values()
        and files.written_digests(repo.root) == digests
    ):
        return None
    # The statement store is no file the replay writes, but a DVC output all the same: one
    # damaged since (a byte of a row) is mended by a build that is not kept.
    from arkai.search.vectors import saved_intact

    store = files.cache_dir(repo.root) / files.STORE
    model = _stored_model(repo, store)
    if model is not None and not saved_intact(store, model, repo.root / CACHE_DIR / STORE_CHECKS):
        return None
    count = len(logged)
    return BuildResult(count, beliefs, dict(by_status), 0, False, count, 0)


# -- reading --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class State:
    header: dict[str, Any]
    beliefs: list[Belief]
    params: ReplayParams

    def effective(self, b: Belief, as_of: date) -> float:
        return round(effective_confidence(b, as_of, self.params.half_life_days), 6)


_STATES: dict[Path, tuple[tuple[int, int], State, Any]] = {}


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


def load(repo: Repo) -> State:
    """``beliefs/`` as last replayed (kept in memory while the file is unchanged, so a warm
    process — the MCP server, an agent loop — does not parse it per call)."""
    path = files.beliefs_dir(repo.root) / files.BELIEFS
    stamp = _stamp(path)
    hit = _STATES.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    got = files.read_state(repo.root)
    if got is None:
        raise NotFoundError(
            "no beliefs yet", hint="run `dvc repro` (or `arkai memory build`) to replay them"
        )
    header, beliefs = got
    state = State(header, beliefs, replay_params(repo))
    _STATES[path] = (stamp, state, None)
    return state


def _vectors(repo: Repo, state: State) -> Any:
    """The beliefs' vectors, cached with the state they belong to."""
    path = files.beliefs_dir(repo.root) / files.BELIEFS
    hit = _STATES.get(path)
    if hit is not None and hit[1] is state and hit[2] is not None:
        return hit[2]
    vectors = files.read_vectors(repo.root)
    if hit is not None and hit[1] is state:
        _STATES[path] = (hit[0], state, vectors)
    return vectors


def find(state: State, ident: str) -> Belief:
    ident = ident.strip().lower()
    if len(ident) < MIN_PREFIX:
        raise InvalidInputError(f"belief ID {ident!r} is too short: give at least {MIN_PREFIX}")
    found = [b for b in state.beliefs if b.id.startswith(ident)]
    if len(found) == 1:
        return found[0]
    if found:
        raise AmbiguousIdError(f"belief ID prefix {ident!r} matches {len(found)} beliefs")
    raise NotFoundError(f"no belief with ID {ident!r}", hint="list them with `arkai beliefs`")


@dataclass(frozen=True, slots=True)
class Scored:
    belief: Belief
    effective: float
    score: float | None = None
    method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = self.belief.to_dict() | {"effective_confidence": self.effective}
        if self.score is not None:
            d["score"] = self.score
            d["method"] = self.method
        return d


def list_beliefs(
    repo: Repo, *, as_of: date, status: str | None = ACTIVE, kind: str | None = None
) -> list[Scored]:
    """Beliefs by effective confidence (highest first), filtered by status and type."""
    if status not in (None, "all", *BELIEF_STATUSES):
        raise InvalidInputError(f"unknown status {status!r}")
    if kind not in (None, *TYPES):
        raise InvalidInputError(f"unknown type {kind!r}")
    st = load(repo)
    out = [
        Scored(b, st.effective(b, as_of))
        for b in st.beliefs
        if status in (None, "all", b.status) and kind in (None, b.type)
    ]
    return sorted(out, key=lambda s: (-s.effective, s.belief.id))


def _lexical(query: str, beliefs: list[Belief]) -> list[tuple[int, float]]:
    """Share of the query's content words (stemmed) a statement holds; a substring test on the
    stems picks the candidates first, so a fallback over 100,000 beliefs stays fast."""
    q = contradict.content(contradict.tokens(query))
    if not q:
        return []
    heads = {stem[:4] for stem in q}  # a stem's first letters are in the word it came from
    out = []
    for i, b in enumerate(beliefs):
        low = b.statement.lower()
        if not any(h in low for h in heads):
            continue
        hit = len(q & contradict.content(contradict.tokens(b.statement)))
        if hit:
            out.append((i, round(hit / len(q), 6)))
    return out


def recall(
    repo: Repo,
    query: str,
    *,
    as_of: date,
    k: int = 10,
    threshold: float = RECALL_THRESHOLD,
    include_all: bool = False,
) -> list[Scored]:
    """Beliefs for ``query``: semantic (cosine ≥ ``threshold``), else a lexical fallback."""
    if not query.strip():
        raise InvalidInputError("the query is empty")
    path = files.beliefs_dir(repo.root) / files.BELIEFS
    if path not in _STATES:  # a cold process: answer from the recall index if it can
        fast = _recall_from_index(repo, query, as_of, k, threshold, include_all)
        if fast:
            return fast
    st = load(repo)

    def wanted(i: int) -> bool:
        return include_all or st.beliefs[i].status == ACTIVE

    hits: list[tuple[int, float]] = []
    method = "semantic"
    vectors = _vectors(repo, st)
    if vectors is not None and len(vectors) == len(st.beliefs) and len(vectors):
        qv = _embedder(repo).encode([query], kind="query")[0]
        sims = vectors @ qv
        hits = [(int(i), round(float(sims[i]), 6)) for i in np.nonzero(sims >= threshold)[0]]
        hits = [h for h in hits if wanted(h[0])]
    if not hits:
        method = "lexical"
        pool = [i for i in range(len(st.beliefs)) if wanted(i)]
        sub = [st.beliefs[i] for i in pool]
        hits = [(pool[i], s) for i, s in _lexical(query, sub)]
    ranked = sorted(hits, key=lambda h: (-h[1], st.beliefs[h[0]].id))[:k]
    b = st.beliefs
    return [Scored(b[i], st.effective(b[i], as_of), s, method) for i, s in ranked]


def _recall_from_index(
    repo: Repo, query: str, as_of: date, k: int, threshold: float, include_all: bool
) -> list[Scored]:
    """Semantic recall from ``index/beliefs/`` without parsing ``beliefs.json`` (the same
    ranking as :func:`recall`); empty when the index is missing or stale, or nothing passes
    the threshold (then :func:`recall` takes the full path, lexical fallback included)."""
    idx = files.read_recall_index(repo.root)
    vectors = files.read_vectors(repo.root)
    if idx is None or vectors is None or len(vectors) != len(idx.statuses) or not len(vectors):
        return []
    qv = _embedder(repo).encode([query], kind="query")[0]
    sims = vectors @ qv
    rows = [int(i) for i in np.nonzero(sims >= threshold)[0]
            if include_all or idx.statuses[int(i)] == ACTIVE]  # fmt: skip
    if not rows:
        return []
    rows.sort(key=lambda i: -float(sims[i]))
    # Ties at the k-th score are broken by belief ID, as the full path does: read them all.
    cut = round(float(sims[rows[min(k, len(rows)) - 1]]), 6)
    wanted = [i for i in rows if round(float(sims[i]), 6) >= cut]
    half_life = replay_params(repo).half_life_days
    scored = [
        Scored(b, round(effective_confidence(b, as_of, half_life), 6),
               round(float(sims[i]), 6), "semantic")
        for i, b in zip(wanted, idx.beliefs(wanted), strict=True)
    ]  # fmt: skip
    return sorted(scored, key=lambda s: (-(s.score or 0.0), s.belief.id))[:k]


@dataclass(frozen=True, slots=True)
class History:
    belief: Belief
    effective: float
    changes: list[Change]
    quotes: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "belief": self.belief.to_dict() | {"effective_confidence": self.effective},
            "changes": [c.to_dict() for c in self.changes],
            "quotes": self.quotes,
        }


def _quotes_for(repo: Repo, episode_ids: list[str], limit: int = 20) -> list[dict[str, Any]]:
    """Each episode's quote with its receipt (file, line, valid), from ``evidence show``."""
    from arkai.ops.evidence import describe, find_evidence

    out = []
    for eid in episode_ids[:limit]:
        if eid.startswith("import:"):
            out.append({"id": eid, "imported": True})
            continue
        try:
            info = describe(find_evidence(repo, eid)).to_dict()
        except (NotFoundError, InvalidInputError):
            out.append({"id": eid, "missing": True})
            continue
        out.append({k: info.get(k) for k in (
            "id", "content_id", "title", "quote", "file", "line", "column", "video_timestamp",
            "valid")})  # fmt: skip
    return out


def history(repo: Repo, ident: str, *, as_of: date) -> History:
    st = load(repo)
    b = find(st, ident)
    changes = [c for c in files.read_changes(repo.root) if b.id in (c.belief, c.other)]
    quotes = _quotes_for(repo, list(b.episodes) + list(b.contradicted_by))
    return History(b, st.effective(b, as_of), changes, quotes)


# -- context packs ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryContext:
    query: str
    as_of: str
    beliefs: list[Scored]
    episodes: list[dict[str, Any]]
    markdown: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query, "as_of": self.as_of,
            "beliefs": [s.to_dict() for s in self.beliefs], "episodes": self.episodes,
            "markdown": self.markdown, "tokens": count_tokens(self.markdown),
        }  # fmt: skip


def memory_context(
    repo: Repo, query: str, *, as_of: date, k: int = 8, recent: int = 5
) -> MemoryContext:
    """Beliefs for the query sorted by effective confidence, plus the most recent episodes."""
    found = recall(repo, query, as_of=as_of, k=k)
    found = sorted(found, key=lambda s: (-s.effective, s.belief.id))
    lines = [f"# Memory for: {query}", "", f"As of {as_of.isoformat()}.", "", "## Beliefs", ""]
    for s in found:
        cites = ", ".join(e[:8] for e in s.belief.episodes[:3])
        lines.append(
            f"- [{s.belief.type}, confidence {s.effective:.2f}] {s.belief.statement} "
            f"(belief {s.belief.id[:8]}; evidence {cites})"
        )
    if not found:
        lines.append("- (no belief matches)")
    eps = collect_episodes(repo)[-recent:][::-1] if recent else []  # already in time order
    lines += ["", "## Recent episodes", ""]
    recent_out = []
    for e in eps:
        lines.append(f"- {e.date}: {e.statement} (evidence {e.id[:8]})")
        recent_out.append(e.to_dict())
    md = "\n".join(lines) + "\n"
    return MemoryContext(query, as_of.isoformat(), found, recent_out, md)


# -- people's decisions --------------------------------------------------------------------


def decide(repo: Repo, kind: str, ident: str, note: str = "", *, undo: bool = False) -> Belief:
    """Record ``forget`` / ``pin`` / ``prune`` for a belief in ``memory/decisions.yaml``."""
    st = load(repo)
    b = find(st, ident)
    decisions = files.read_decisions(repo.root)
    if undo:
        decisions[kind].pop(b.id, None)
    else:
        decisions[kind][b.id] = note
    files.write_decisions(repo.root, decisions)
    return b


def prune_candidates(repo: Repo, *, as_of: date, threshold: float | None = None) -> list[Scored]:
    """Active, unpinned beliefs whose effective confidence is below the threshold."""
    st = load(repo)
    floor = st.params.prune_floor if threshold is None else threshold
    out = [
        Scored(b, st.effective(b, as_of))
        for b in st.beliefs
        if b.status == ACTIVE and not b.pinned and st.effective(b, as_of) < floor
    ]
    return sorted(out, key=lambda s: (s.effective, s.belief.id))


def apply_prune(repo: Repo, beliefs: list[Scored], note: str) -> None:
    decisions = files.read_decisions(repo.root)
    for s in beliefs:
        decisions["prune"].setdefault(s.belief.id, note)
    files.write_decisions(repo.root, decisions)


@dataclass(frozen=True, slots=True)
class Reflection:
    clusters: list[list[Scored]]
    stale: list[Scored]

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusters": [[s.to_dict() for s in c] for c in self.clusters],
            "stale": [s.to_dict() for s in self.stale],
        }


def reflect(repo: Repo, *, as_of: date, similarity: float = 0.8, stale: float = 0.2) -> Reflection:
    """Near-duplicate groups of active beliefs (cosine ≥ ``similarity``) and stale ones."""
    st = load(repo)
    vectors = files.read_vectors(repo.root)
    active = [i for i, b in enumerate(st.beliefs) if b.status == ACTIVE]
    clusters: list[list[Scored]] = []
    if vectors is not None and len(vectors) == len(st.beliefs) and active:
        sub = vectors[active]
        seen: set[int] = set()
        for n in range(len(active)):
            if n in seen:
                continue
            sims = sub[n + 1 :] @ sub[n]
            near = [n + 1 + int(m) for m in np.nonzero(sims >= similarity)[0]]
            near = [m for m in near if m not in seen]
            if near:
                group = [n, *near]
                seen.update(group)
                clusters.append(
                    [
                        Scored(st.beliefs[active[g]], st.effective(st.beliefs[active[g]], as_of))
                        for g in group
                    ]
                )
    stale_list = [
        Scored(b, st.effective(b, as_of))
        for b in st.beliefs
        if b.status == ACTIVE and st.effective(b, as_of) < stale
    ]
    return Reflection(clusters, sorted(stale_list, key=lambda s: (s.effective, s.belief.id)))


@dataclass(frozen=True)
class MemoryStats(AsDict):
    """``arkai memory stats``: belief counts by status and type, episodes, decisions."""

    as_of: str
    episodes: int
    beliefs: int
    by_status: dict[str, int]
    by_type: dict[str, int]
    average_effective_confidence: float | None
    decisions: dict[str, int]


def stats(repo: Repo, *, as_of: date) -> MemoryStats:
    st = load(repo)
    active = [b for b in st.beliefs if b.status == ACTIVE]
    eff = [st.effective(b, as_of) for b in active]
    return MemoryStats(
        as_of.isoformat(),
        st.header.get("episodes", 0),
        len(st.beliefs),
        {s: sum(b.status == s for b in st.beliefs) for s in BELIEF_STATUSES},
        {t: sum(b.type == t for b in active) for t in TYPES},
        round(sum(eff) / len(eff), 4) if eff else None,
        {k: len(v) for k, v in files.read_decisions(repo.root).items()},
    )


# -- export / import -----------------------------------------------------------------------


@dataclass(frozen=True)
class Exported(AsDict):
    """``arkai memory export``: how many beliefs and changes were written."""

    beliefs: int
    changes: int


@dataclass(frozen=True)
class Imported(AsDict):
    """``arkai memory import``: beliefs added, skipped (known or inactive), decisions added."""

    beliefs_added: int
    skipped: int
    decisions_added: int


def export(repo: Repo, path: Path) -> Exported:
    st = load(repo)
    changes = [c.to_dict() for c in files.read_changes(repo.root)]
    doc = {
        "format": EXPORT_FORMAT,
        "as_of": st.header.get("as_of"),
        "beliefs": [b.to_dict() for b in st.beliefs],
        "changes": changes,
        "decisions": files.read_decisions(repo.root),
    }
    atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return Exported(len(st.beliefs), len(changes))


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def import_(repo: Repo, path: Path) -> Imported:
    """Add an export's active beliefs as imported episodes (deduplicated by statement) and its
    decisions where this library has none for that belief; never overwrites a decision."""
    data = read_repo_file(path, path.parent)
    assert data is not None
    try:
        doc = json.loads(data.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
            raise ValueError(f"expected an object with format {EXPORT_FORMAT!r}")
        beliefs = [Belief.from_dict(b) for b in doc["beliefs"]]
        decisions = doc.get("decisions") or {}
        if not isinstance(decisions, dict):
            raise ValueError("'decisions' must be an object")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInputError(f"{path}: not an arkai memory export ({exc})") from None
    known = {_norm(b.statement) for b in (files.read_state(repo.root) or ({}, []))[1]}
    rows = [e.to_dict() | {"type": e.kind} for e in files.read_imported(repo.root)]
    rows = [{k: v for k, v in r.items() if k != "kind"} for r in rows]
    known |= {_norm(str(r["statement"])) for r in rows}
    added = 0
    for b in beliefs:
        if b.status != ACTIVE or _norm(b.statement) in known:
            continue
        known.add(_norm(b.statement))
        rows.append({"id": "import:" + text_digest(b.statement)[7:23], "statement": b.statement,
                     "date": b.created, "type": b.type})  # fmt: skip
        added += 1
    if added:
        files.write_imported(repo.root, rows)
    mine = files.read_decisions(repo.root)
    merged = 0
    for kind in files.DECISION_KINDS:
        theirs = decisions.get(kind) or {}
        if not isinstance(theirs, dict):
            raise InvalidInputError(f"{path}: 'decisions.{kind}' must be an object")
        for bid, note in theirs.items():
            if bid not in mine[kind] and isinstance(bid, str):
                mine[kind][bid] = str(note or "")
                merged += 1
    if merged:
        files.write_decisions(repo.root, mine)
    return Imported(added, len(beliefs) - added, merged)
