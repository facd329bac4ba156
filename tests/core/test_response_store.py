"""The response store's layout: keys fanned out by their hex digest (``ab/cdef….json``, as on
the remote), and a store in the first layout (every key under ``sh/``) migrated when it is
opened, atomically, nothing lost."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from arkai.patterns import get_pattern
from arkai.providers.runner import ResponseStore, Runner, RunnerConfig
from tests.conftest import in_thread
from tests.core.test_runner import TEXT, FlakyProvider


def respond(store: ResponseStore, *lines: int) -> list[str]:
    runner = Runner(provider=FlakyProvider([]), store=store, config=RunnerConfig())
    pattern = get_pattern("extract_claims", None)
    return [runner.run(pattern, TEXT.split("\n")[n], {}).keys[0] for n in lines]


def old_place(root: Path, key: str) -> Path:
    """Where the first layout filed ``key``: the folder was ``key[:2]``, i.e. ``sh``."""
    return root / "sh" / f"{key}.json"


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_keys_fan_out_by_their_digest(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses")
    keys = respond(store, 0, 1)
    for key in keys:
        digest = key.removeprefix("sha256:")
        assert store.path(key) == store.root / digest[:2] / f"{digest[2:]}.json"
        assert store.path(key).is_file()
    assert store.list_keys() == sorted(keys)
    assert not (store.root / "sh").exists()


def old_store(tmp_path: Path, lines: tuple[int, ...]) -> tuple[Path, dict[str, bytes]]:
    """A store written in the first layout: key → bytes."""
    made = ResponseStore(tmp_path / "made")
    keys = respond(made, *lines)
    root = tmp_path / "responses"
    (root / "sh").mkdir(parents=True)
    entries = {}
    for key in keys:
        entries[key] = made.path(key).read_bytes()
        old_place(root, key).write_bytes(entries[key])
    return root, entries


def test_a_store_in_the_first_layout_is_migrated(tmp_path: Path) -> None:
    root, entries = old_store(tmp_path, (0, 1, 2))
    store = ResponseStore(root)
    assert store.list_keys() == sorted(entries)
    for key, raw in entries.items():
        assert store.path(key).read_bytes() == raw
    assert not (root / "sh").exists()
    # What a migrated entry is for: the runner answers from it without calling the provider.
    provider = FlakyProvider([])
    runner = Runner(provider=provider, store=store, config=RunnerConfig())
    result = runner.run(get_pattern("extract_claims", None), TEXT.split("\n")[0], {})
    assert result.cached and provider.requests == []
    assert ResponseStore(root).migrate() == 0


def test_migration_loses_nothing(tmp_path: Path) -> None:
    """An interrupted migration (an entry at both names) is finished; an entry already at its
    new name with other bytes wins and the old copy stays; foreign files and symlinks stay."""
    root, entries = old_store(tmp_path, (0, 1, 2))
    halfway, clash, plain = sorted(entries)
    new = ResponseStore(tmp_path / "probe").path  # the new place, relative to any root
    for key in (halfway, clash):
        target = root / new(key).relative_to(tmp_path / "probe")
        target.parent.mkdir(parents=True, exist_ok=True)
        if key == halfway:
            os.link(old_place(root, halfway), target)
        else:
            target.write_bytes(entries[clash].replace(b'"created_at":', b'"created_at" :'))
    (root / "sh" / "notes.txt").write_text("mine")
    (root / "sh" / "sha256:0.json").write_text("not a key")
    before = files(root)

    store = ResponseStore(root)
    assert store.list_keys() == sorted(entries)
    assert store.path(halfway).read_bytes() == entries[halfway]
    assert store.path(plain).read_bytes() == entries[plain]
    assert store.path(clash).read_bytes() == before[str(store.path(clash).relative_to(root))]
    left = {p.name for p in (root / "sh").iterdir()}
    assert left == {f"{clash}.json", "notes.txt", "sha256:0.json"}
    assert old_place(root, clash).read_bytes() == entries[clash]
    # Every byte that was there is still there, under one name or the other.
    assert set(before.values()) <= set(files(root).values())


def test_concurrent_migrations_lose_nothing(tmp_path: Path) -> None:
    """Several processes (here threads) opening one old store at once: whatever the
    interleaving, none fails and every entry ends at its new place with its bytes."""
    root, entries = old_store(tmp_path, (0, 1, 2, 3))
    outcomes = [in_thread(lambda: ResponseStore(root).list_keys()) for _ in range(6)]
    for thread, box in outcomes:
        thread.join(60)
        assert not thread.is_alive() and "error" not in box, box
    store = ResponseStore(root)
    assert {key: store.path(key).read_bytes() for key in store.list_keys()} == entries
    assert not (root / "sh").exists()


class _Listing:
    """What ``os.scandir`` gives, from a list made before the folder changed."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self.entries = entries

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.entries)


def test_a_folder_removed_while_listed_is_listed_as_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's migration empties and removes ``sh/`` between this process listing
    the store's folders and reading ``sh/`` (or between seeing ``sh/`` and listing it to
    migrate): the keys are listed and the migration ends, no FileNotFoundError (CI hit it
    once with six threads opening one old store: ≈ 1 round in 10 of a stress run before)."""
    import shutil

    import arkai.providers.runner as runner

    root, entries = old_store(tmp_path, (0, 1))
    ResponseStore(root)  # migrated: every entry at its new place, sh/ gone
    real = os.scandir

    def racing(path: str | Path | int) -> Any:
        if isinstance(path, int):  # shutil.rmtree's own listings (os is one module)
            return real(path)
        with real(path) as it:
            listing = list(it)
        if Path(path) == root and (root / "sh").is_dir():
            shutil.rmtree(root / "sh")  # the other process's migration, done meanwhile
        elif Path(path) == root / "sh":
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return _Listing(listing)

    (root / "sh").mkdir()
    store = ResponseStore.__new__(ResponseStore)
    store.root = root
    monkeypatch.setattr(runner.os, "scandir", racing)
    assert store.list_keys() == sorted(entries)  # sh/ listed, then gone before it was read
    (root / "sh").mkdir()
    assert store.migrate() == 0  # sh/ seen, then gone before it was listed
    monkeypatch.undo()
    assert ResponseStore(root).list_keys() == sorted(entries)
