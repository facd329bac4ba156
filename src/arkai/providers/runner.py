"""One runner for every provider call (DESIGN §5): a content-addressed response store, chunking
of long inputs, bounded retries with exponential backoff, a circuit breaker, and output repair
plus schema validation.

Keys are ``sha256`` of (provider, model, pattern digest, input digest, options), so re-running
with nothing changed makes zero provider calls, and each raw response is kept with the request
metadata that produced it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import interrupt
from arkai.adapters.fs import read_repo_file, write_if_changed
from arkai.adapters.params import positive_number
from arkai.adapters.store import read_json, write_json
from arkai.core import canonjson
from arkai.core.hashing import sha256_hex, text_digest
from arkai.errors import LibraryError, PipelineError
from arkai.formats.cue import fix_surrogates_in
from arkai.model.record import AsDict
from arkai.patterns import (
    OutputError,
    Pattern,
    data_notice,
    input_frame,
    parse_output,
    render_system,
)
from arkai.providers.base import Provider, ProviderError, Request, Response
from arkai.providers.registry import get_provider

#: The response store: a local, content-addressed cache (not in git, not a DVC output, so a
#: fresh clone's `dvc repro` is a no-op; extraction results themselves are in git).
RESPONSES = Path(".arkai") / "responses"


@dataclass
class RunnerConfig:
    """Knobs from ``params.yaml`` (``extract`` section)."""

    timeout_s: float = 120.0
    retries: int = 3
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 60.0
    """The longest server-requested wait (``Retry-After``) obeyed; a longer one fails the call
    at once instead of sleeping through it."""
    breaker_threshold: int = 5
    """Consecutive failed calls (after retries) that stop the run."""
    chunk_overlap_lines: int = 3

    @classmethod
    def from_params(cls, xp: dict[str, Any]) -> RunnerConfig:
        """The knobs from ``params.yaml``'s ``extract`` section; a bad value is an
        InvalidInputError naming the key."""
        return cls(
            timeout_s=positive_number(xp, "extract.timeout_s", 120.0),
            retries=int(positive_number(xp, "extract.retries", 3, zero=True)),
            backoff_base_s=positive_number(xp, "extract.backoff_s", 1.0, zero=True),
            retry_after_max_s=positive_number(xp, "extract.retry_after_max_s", 60.0, zero=True),
            breaker_threshold=int(positive_number(xp, "extract.circuit_breaker", 5)),
        )


@dataclass
class Stats(AsDict):
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0

    def add(self, other: Stats) -> None:
        """Count ``other``'s figures in (a remote worker's runner, on the driver)."""
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.retries += other.retries
        self.failures += other.failures


class CircuitOpen(PipelineError):
    """Too many consecutive failures: the run stops cleanly and can be resumed."""


@dataclass
class CallResult:
    """A pattern's parsed output for one input (chunks merged), and where it came from."""

    value: Any
    keys: list[str]
    cached: bool
    model: str | None = None
    chunks: int = 1


def response_key(request: dict[str, Any]) -> str:
    """The store key of a response: ``sha256:`` of the canonical JSON of the request fields
    that decide the answer (provider, model, pattern name and digest, input digest, options).

    Every stored record carries these fields under ``request``, so a record read from
    elsewhere (a teammate's remote) can be checked against the key it is filed under.
    """
    blob = canonjson.dumps(
        {
            "provider": request.get("provider"),
            "model": request.get("model"),
            "pattern": request.get("pattern"),
            "pattern_digest": request.get("pattern_digest"),
            "input": request.get("input_digest"),
            "options": request.get("options"),
        }
    )
    return "sha256:" + sha256_hex(blob.encode("utf-8"))


_KEY = re.compile(r"sha256:[0-9a-f]{64}")


def response_problem(key: str, raw: bytes) -> str | None:
    """Why ``raw`` is not a usable record for ``key`` (None when it is): not UTF-8 JSON, not
    an object, filed under another key, a request that does not hash to its key (edited or
    foreign), or no response text. A torn transfer fails here too (truncated JSON)."""
    if not _KEY.fullmatch(key):
        return f"{key!r} is not a response key"
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return f"not valid JSON ({exc})"
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("key") != key:
        return f"filed under {key} but its key is {record.get('key')!r}"
    request, response = record.get("request"), record.get("response")
    if not isinstance(request, dict) or response_key(request) != key:
        return "its request does not hash to its key"
    if not isinstance(response, dict) or not isinstance(response.get("text"), str):
        return "no response text"
    return None


#: The store's first layout filed every key under ``sh/`` (its folder was the first two
#: characters of ``sha256:…``); :meth:`ResponseStore.migrate` moves such entries out.
_OLD_FOLDER = "sh"
_SHA = "sha256:"


def _listed(folder: str | Path) -> list[os.DirEntry[str]]:
    """The entries of ``folder``; none when it is gone (or not a folder) by the time it is
    read — a migration in another process removes ``sh/`` once it is empty."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


class ResponseStore:
    """Raw responses on disk, one canonical JSON file per key, fanned out by the key's hex
    digest like the remote (``<root>/ab/cdef….json`` for ``sha256:abcdef…``). A store in the
    first layout (``<root>/sh/sha256:….json``) is migrated when it is opened."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)  # DVC expects the output to exist
        self.migrate()

    def path(self, key: str) -> Path:
        digest = key.removeprefix(_SHA)
        return self.root / digest[:2] / f"{digest[2:]}.json"

    def list_keys(self) -> list[str]:
        """Every key with a file in the store, sorted (temporary and foreign names left out).
        A folder removed while it is listed (``sh/``, emptied by a migration in another process)
        is listed as empty."""
        found = (
            _SHA + folder.name + entry.name.removesuffix(".json")
            for folder in _listed(self.root)
            if folder.is_dir()
            for entry in _listed(folder.path)
            if entry.name.endswith(".json")
        )
        return sorted(k for k in found if _KEY.fullmatch(k) and self.path(k).is_file())

    def migrate(self) -> int:
        """Move the entries of the first layout to their place; returns how many moved.

        Each entry is hard-linked to its new name (which never replaces a file there) and
        only then unlinked from the old one, so at every moment it exists in one place at
        least: a migration interrupted, or run by two processes at once, loses nothing and
        the next one finishes it. An entry already at its new name wins; the old copy is
        removed when it is the same bytes and otherwise left where it is. Symlinks and names
        that are not keys are left alone. ``sh/`` goes once it is empty."""
        old = self.root / _OLD_FOLDER
        if old.is_symlink() or not old.is_dir():
            return 0
        moved = 0
        names = sorted(e.name for e in _listed(old) if e.name.startswith(_SHA))
        for path in (old / name for name in names if name.endswith(".json")):
            key = path.name.removesuffix(".json")
            if not _KEY.fullmatch(key) or path.is_symlink() or not path.is_file():
                continue
            new = self.path(key)
            new.parent.mkdir(exist_ok=True)
            try:
                os.link(path, new)
            except FileExistsError:
                try:  # the same entry at both names (an interrupted or concurrent migration)?
                    same = read_repo_file(new, self.root, missing_ok=True) == path.read_bytes()
                except FileNotFoundError:  # another process moved it meanwhile
                    continue
                if not same:
                    continue
            except FileNotFoundError:  # another process moved it meanwhile
                continue
            except OSError:  # a file system without hard links: a rename, never over a file
                if new.exists():
                    continue
                with contextlib.suppress(FileNotFoundError):  # moved meanwhile
                    os.replace(path, new)
                    moved += 1
                continue
            else:
                moved += 1
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # not empty: what was left stays
            old.rmdir()
        return moved

    def read_raw(self, key: str) -> bytes | None:
        """The file's bytes as stored, or None when there is none."""
        return read_repo_file(self.path(key), self.root, missing_ok=True)

    def put_raw(self, key: str, raw: bytes) -> None:
        """File ``raw`` under ``key`` atomically; it must be a usable record for that key
        (:func:`response_problem`), or LibraryError says why not and nothing is written."""
        problem = response_problem(key, raw)
        if problem is not None:
            raise LibraryError(f"response {key}: {problem}")
        write_if_changed(self.path(key), raw)

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return read_json(self.path(key))
        except Exception:  # a torn or foreign file is a cache miss, never a failure
            return None

    def put(self, key: str, record: dict[str, Any]) -> None:
        write_json(self.path(key), record)


class ShippingStore(ResponseStore):
    """A remote worker's view of the response store: it reads the shared store when this
    machine sees its folder, and keeps the responses it gets in :attr:`new` instead of
    writing them, so the driver stores them (one writer, the same bytes as a local run)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.new: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.new.get(key) or super().get(key)

    def put(self, key: str, record: dict[str, Any]) -> None:
        self.new[key] = record


def _parsed(pattern: Pattern, text: str) -> Any:
    """The pattern's output parsed, every string made encodable: JSON may carry lone
    surrogates (``"\\udc00"``), which no UTF-8 file or span can hold; they become U+FFFD."""
    return fix_surrogates_in(parse_output(pattern, text))


def chunk_lines(text: str, max_chars: int, overlap_lines: int) -> list[str]:
    """Split at line boundaries into pieces of at most ``max_chars`` (a single longer line is
    split at sentence ends, then hard), consecutive pieces sharing ``overlap_lines`` lines."""
    if len(text) <= max_chars:
        return [text]
    lines: list[str] = []
    for line in text.split("\n"):
        while len(line) > max_chars:
            cut = max(line.rfind(". ", 0, max_chars), line.rfind(" ", 0, max_chars))
            cut = cut + 1 if cut > max_chars // 2 else max_chars
            lines.append(line[:cut])
            line = line[cut:]
        lines.append(line)
    chunks: list[str] = []
    start = 0
    while start < len(lines):
        size, end = 0, start
        while end < len(lines) and size + len(lines[end]) + 1 <= max_chars:
            size += len(lines[end]) + 1
            end += 1
        end = max(end, start + 1)
        chunks.append("\n".join(lines[start:end]))
        if end >= len(lines):
            break
        start = max(end - overlap_lines, start + 1)
    return chunks


def merge_outputs(values: list[Any]) -> Any:
    """Combine per-chunk outputs: arrays concatenate; objects merge key by key (arrays
    concatenated, strings joined with a space, first non-empty scalar kept)."""
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, list) for v in values):
        return [x for v in values for x in v]
    if all(isinstance(v, dict) for v in values):
        out: dict[str, Any] = {}
        for v in values:
            for k, x in v.items():
                if k not in out:
                    out[k] = x
                elif isinstance(out[k], list) and isinstance(x, list):
                    out[k] = out[k] + x
                elif isinstance(out[k], str) and isinstance(x, str) and x and x not in out[k]:
                    out[k] = f"{out[k]} {x}".strip()
        return out
    return values[0]


@dataclass
class Runner:
    """Calls patterns through one provider with caching, retries and a circuit breaker."""

    provider: Provider
    store: ResponseStore
    config: RunnerConfig = field(default_factory=RunnerConfig)
    model: str | None = None
    refresh: bool = False
    """Ignore cached responses (they are still written), for ``arkai reprocess``."""
    sleep: Callable[[float], None] = interrupt.sleep
    """Waits between retries; the default ends at once on a stop request (SIGTERM/SIGINT)."""
    now: Callable[[], str] = lambda: ""
    stats: Stats = field(default_factory=Stats)
    _consecutive: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def key(self, pattern: Pattern, input_text: str, options: dict[str, Any]) -> str:
        return response_key(
            {
                "provider": self.provider.name,
                "model": self.model,
                "pattern": pattern.name,
                "pattern_digest": pattern.digest,
                "input_digest": text_digest(input_text),
                "options": options,
            }
        )

    def run(self, pattern: Pattern, input_text: str, options: dict[str, Any]) -> CallResult:
        """Apply ``pattern`` to ``input_text`` (chunked when too long), parsed and validated.

        Raises ProviderError / OutputError when a chunk fails after retries, CircuitOpen when
        the breaker trips.
        """
        limit = max(1000, int(self.provider.context_chars(self.model)))
        chunks = chunk_lines(input_text, limit, self.config.chunk_overlap_lines)
        values, keys, cached_all, model = [], [], True, None
        for chunk in chunks:
            value, key, cached, used_model = self._one(pattern, chunk, options)
            values.append(value)
            keys.append(key)
            cached_all = cached_all and cached
            model = model or used_model
        return CallResult(merge_outputs(values), keys, cached_all, model, len(chunks))

    def _one(
        self, pattern: Pattern, text: str, options: dict[str, Any]
    ) -> tuple[Any, str, bool, str | None]:
        key = self.key(pattern, text, options)
        record = None if self.refresh else self.store.get(key)
        if record is not None:
            with self._lock:
                self.stats.cache_hits += 1
            return (
                _parsed(pattern, str(record["response"]["text"])),
                key,
                True,
                record["response"].get("model"),
            )
        # The input goes in the user message (as fabric sends it), not into the system prompt.
        system, _ = render_system(pattern, dict(options.get("variables", {})), None)
        # Transcript text is data: it goes between the pattern's delimiters, and the system
        # prompt says so, so "ignore previous instructions…" inside it is not obeyed.
        frame = input_frame(pattern, text)
        if frame is not None:
            system += data_notice(frame)
        request = Request(
            pattern=pattern.name,
            system=system,
            input=text,
            model=self.model,
            schema=pattern.schema,
            options=options,
            input_delimiters=frame,
        )
        try:
            response = self._call_with_retries(request)
            value = _parsed(pattern, response.text)
        except (ProviderError, OutputError):
            self._failed()
            raise
        self.store.put(
            key,
            {
                "key": key,
                "created_at": self.now(),
                "request": {
                    "provider": self.provider.name,
                    "model": self.model,
                    "pattern": pattern.name,
                    "pattern_version": pattern.version,
                    "pattern_digest": pattern.digest,
                    "input_digest": text_digest(text),
                    "options": options,
                },
                "response": {
                    "text": response.text,
                    "model": response.model,
                    "usage": response.usage,
                    "meta": response.meta,
                },
            },
        )
        with self._lock:
            self._consecutive = 0
        return value, key, False, response.model

    def _failed(self) -> None:
        with self._lock:
            self.stats.failures += 1
        self.remote_outcome(failed=True)

    def remote_outcome(self, *, failed: bool) -> None:
        """Feed the circuit breaker with the outcome of work whose calls another runner made (a
        Ray worker's, which counts them in its own stats): a failure counts as a failed call in
        a row, a success starts the count again. Raises CircuitOpen when the breaker trips."""
        with self._lock:
            self._consecutive = self._consecutive + 1 if failed else 0
            tripped = self._consecutive >= self.config.breaker_threshold
        if tripped:
            raise CircuitOpen(
                f"{self._consecutive} provider calls failed in a row; stopping the run",
                hint="check the provider (extract.provider, its URL and key), then re-run",
            )

    def _call_with_retries(self, request: Request) -> Response:
        attempt = 0
        while True:
            interrupt.check(f"{self.provider.name}: {request.pattern}")
            with self._lock:
                self.stats.calls += 1
            try:
                return self.provider.complete(request, timeout=self.config.timeout_s)
            except ProviderError as exc:
                if not exc.retryable or attempt >= self.config.retries:
                    raise
                delay = self._delay(exc, attempt)
                with self._lock:
                    self.stats.retries += 1
                self.sleep(delay)
                attempt += 1

    def _delay(self, exc: ProviderError, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1``: the server's ``Retry-After`` when it
        sent one (over ``retry_after_max_s`` the call fails now), else exponential backoff."""
        asked = getattr(exc, "retry_after", None)
        if asked is None:
            return float(min(self.config.backoff_max_s, self.config.backoff_base_s * 2**attempt))
        asked = float(asked)
        cap = self.config.retry_after_max_s
        if math.isnan(asked) or asked > cap:
            raise ProviderError(
                f"{exc.message}; the server asked to wait {asked:g}s before retrying, longer "
                f"than extract.retry_after_max_s ({cap:g}s)",
                retryable=False,
                status=exc.status,
                hint="re-run later (finished items are kept) or raise extract.retry_after_max_s",
            ) from None
        return max(0.0, asked)


def provider_of(params: dict[str, Any]) -> Provider:
    """The provider ``extract.provider`` names, with its ``providers.NAME`` settings."""
    name = str(params["extract"]["provider"])
    return get_provider(name, dict((params.get("providers") or {}).get(name) or {}))


def make_runner(
    root: Path,
    params: dict[str, Any],
    *,
    refresh: bool,
    now: str,
    store: ResponseStore | None = None,
) -> Runner:
    """The runner of ``extract.provider``; responses go to ``store`` (default: the repo's
    response store)."""
    xp = params["extract"]
    name = str(xp["provider"])
    config = dict((params.get("providers") or {}).get(name) or {})
    model = xp.get("model") or config.get("model")
    provider = provider_of(params)
    cfg = RunnerConfig.from_params(xp)
    return Runner(
        provider=provider,
        store=store if store is not None else ResponseStore(root / RESPONSES),
        config=cfg,
        model=str(model) if model else None,
        refresh=refresh,
        now=lambda: now,
    )
