"""Running DVC: the one place arkai starts ``dvc repro`` (a subprocess of this interpreter)
and opens a DVC remote's file system (:func:`remote_objects`)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arkai.errors import InvalidInputError, LibraryError

__all__ = [
    "LOCKFILE",
    "RWLOCK",
    "TORN_LOCKFILE",
    "RemoteObjects",
    "clear_torn",
    "dvc_message",
    "remote_objects",
    "repro",
    "run_dvc",
    "stage_names",
    "torn_lockfile",
    "torn_rwlock",
]

#: DVC's record of which running command reads or writes which path (JSON), relative to the
#: repo; ``rwlock.lock`` beside it is the guard DVC takes (``flock``) while it edits it.
RWLOCK = ".dvc/tmp/rwlock"
#: The pipeline's lock file, and where :func:`clear_torn` moves a torn one.
LOCKFILE = "dvc.lock"
TORN_LOCKFILE = ".dvc/tmp/dvc.lock.torn"


def stage_names(root: Path) -> list[str]:
    """The stages of the repo's ``dvc.yaml``, in file order."""
    return [str(s) for s in stages(root)]


def stages(root: Path) -> dict[Any, Any]:
    """The ``stages`` mapping of the repo's ``dvc.yaml`` (each stage's definition as written)."""
    path = root / "dvc.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise LibraryError(f"no dvc.yaml in {root}", hint="`arkai init` scaffolds one") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({exc})") from None
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, dict):
        raise LibraryError(f"{path}: no `stages` mapping")
    return stages


def repro(root: Path, stages: Sequence[str] = (), *, force: bool = False) -> int:
    """``dvc repro [STAGE…]`` in ``root`` with this interpreter's DVC; its output goes to the
    terminal; returns its exit code. Unknown stage names are refused before DVC starts."""
    known = stage_names(root)
    unknown = [s for s in stages if s not in known]
    if unknown:
        raise InvalidInputError(
            f"unknown stage(s): {', '.join(unknown)}", hint=f"the stages are {', '.join(known)}"
        )
    cmd = [sys.executable, "-m", "dvc", "repro", *(["--force"] if force else []), *stages]
    return subprocess.run(cmd, cwd=root, check=False).returncode


def torn_rwlock(root: Path) -> bool:
    """Whether DVC's ``rwlock`` file is there and not a JSON object: DVC rewrites it in place
    (truncated, then written), so a DVC killed at that moment leaves it empty or cut short,
    and every later ``dvc`` command then stops with "Unable to read RWLock-file … JSON
    structure is corrupted" until it is removed (treeverse/dvc#7615)."""
    try:
        data = (root / RWLOCK).read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # (not a file DVC can read either)
    try:
        return not isinstance(json.loads(data), dict)
    except ValueError:  # not JSON, not UTF-8
        return True


def torn_lockfile(root: Path) -> bool:
    """Whether ``dvc.lock`` is there and DVC cannot load it (not YAML, or not its lock file's
    schema, an empty file among them): DVC rewrites it in place after every stage, so a DVC
    killed then leaves it empty or cut, and every later ``dvc`` command stops at it ("dvc.lock
    validation failed"). Read with DVC's own parser and schema. A file cut where it still
    loads is not torn to DVC: it runs again the stages it no longer records rightly."""
    path = root / LOCKFILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return True
    from dvc.schema import COMPILED_LOCKFILE_SCHEMA
    from dvc.utils.serialize import parse_yaml

    try:
        COMPILED_LOCKFILE_SCHEMA(parse_yaml(text, str(path)) or {})
    except Exception:  # YAMLFileCorruptedError, voluptuous.Invalid: what DVC stops at
        return True
    return False


def clear_torn(root: Path) -> list[str]:
    """Set aside the files a DVC killed while writing them left torn, each of which stops every
    later ``dvc`` command (:func:`torn_rwlock`, :func:`torn_lockfile`); what was done, one
    line each.

    Each is looked at again and set aside while holding the lock DVC itself holds while it
    writes that file (an exclusive ``flock``, the lock ``zc.lockfile`` takes for DVC): the
    guard ``rwlock.lock`` for ``rwlock``, the repo's ``.dvc/tmp/lock`` for ``dvc.lock``. So a
    DVC writing one now is never cut into: when the lock is held elsewhere, or the repo's DVC
    config asks for ``hardlink_lock`` (another kind of lock, which ``flock`` does not
    exclude), nothing is done. ``rwlock`` is removed (no running DVC is listed in a torn one:
    its entries were lost with it; DVC's own advice); ``dvc.lock`` is moved to
    :data:`TORN_LOCKFILE` (git has the last committed one), and DVC, finding none, runs every
    stage again — each skips the items already done and keeps its outputs (``persist``). A
    file DVC can load is never touched. DVC's own temp files in its outputs' folders
    (:func:`dvc_temps`: one a DVC killed while putting an output in place left in
    ``index/manifests/``) are removed under the repository's lock."""
    done: list[str] = []
    if os.name != "posix" or _hardlink_lock(root):
        return done
    tmp = root / RWLOCK
    if torn_rwlock(root) and _under_lock(tmp.parent / "rwlock.lock", lambda: torn_rwlock(root)):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        done.append(f"removed {RWLOCK}: a DVC killed while writing it left it torn")

    def aside() -> bool:
        if not torn_lockfile(root):
            return False
        os.replace(root / LOCKFILE, root / TORN_LOCKFILE)
        return True

    if torn_lockfile(root) and _under_lock(tmp.parent / "lock", aside):
        done.append(
            f"moved {LOCKFILE} to {TORN_LOCKFILE}: a DVC killed while writing it left it torn "
            "(DVC runs every stage again; each skips what is done)"
        )
    removed: list[str] = []

    def sweep() -> bool:
        for path in dvc_temps(root):  # (looked for again under the lock)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path.relative_to(root).as_posix())
        return bool(removed)

    if dvc_temps(root) and _under_lock(tmp.parent / "lock", sweep):
        done.append(f"removed {len(removed)} temp file(s) a killed DVC left: "
                    + ", ".join(removed[:3]) + (", …" if len(removed) > 3 else ""))  # fmt: skip
    return done


#: The temp file DVC writes beside a workspace file it is about to put in place (a stage's
#: output linked or copied from its cache: dvc-objects' ``tmp_fname``, a dot, 16 random bytes
#: in URL-safe base64, ``.tmp``), which a DVC killed at that moment leaves for good.
_DVC_TEMP = re.compile(r"\.[A-Za-z0-9_-]{22}\.tmp")


def dvc_temps(root: Path) -> list[Path]:
    """DVC's temp files (:data:`_DVC_TEMP`) in the folders of the outputs and metrics
    ``dvc.yaml`` names: beside a file output, anywhere under a folder output (links are not
    followed, nor outputs outside the repository). Only :func:`clear_torn` removes them, while
    holding the repository lock every DVC command that writes outputs holds."""
    try:
        defined = stages(root)
    except LibraryError:
        return []
    folders: dict[Path, bool] = {}  # folder → walked recursively
    for stage in defined.values():
        if not isinstance(stage, dict):
            continue
        for kind in ("outs", "metrics"):
            for out in stage.get(kind) or []:
                name = next(iter(out), None) if isinstance(out, dict) else out
                if not isinstance(name, str) or "${" in name or name.startswith(("/", "..")):
                    continue
                path = root / name
                if path.is_dir() and not path.is_symlink():
                    folders[path] = True
                else:
                    folders.setdefault(path.parent, False)
    found: list[Path] = []
    for folder, deep in folders.items():
        todo = [folder]
        while todo:
            try:
                entries = list(os.scandir(todo.pop()))
            except OSError:
                continue
            for entry in entries:
                if deep and entry.is_dir(follow_symlinks=False):
                    todo.append(Path(entry.path))
                elif _DVC_TEMP.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
    return sorted(set(found))


def _under_lock(lock: Path, work: Callable[[], bool]) -> bool:
    """``work()`` while holding an exclusive ``flock`` on ``lock`` (made when missing), taken
    without waiting: False, with nothing done, when another process holds it."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a DVC holds it: it may be writing the file now
        return work()
    finally:
        os.close(fd)  # (releases the flock)


def _hardlink_lock(root: Path) -> bool:
    """Whether the repo's DVC config (``.dvc/config``, ``.dvc/config.local``) turns on
    ``core.hardlink_lock``, or cannot be read to tell."""
    import configparser

    for name in ("config", "config.local"):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            text = (root / ".dvc" / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            return True
        try:
            parser.read_string(text)
        except configparser.Error:
            return True
        value = parser.get("core", "hardlink_lock", fallback="false")
        if value.strip().lower() in ("true", "1", "yes", "on"):
            return True
    return False


def run_dvc(
    root: Path, *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """``dvc ARGS…`` in ``root`` with this interpreter's DVC, output captured (not raised on a
    non-zero exit: the caller decides what a failure means). Past ``timeout`` seconds DVC is
    killed and ``subprocess.TimeoutExpired`` raised."""
    cmd = [sys.executable, "-m", "dvc", *args]
    return subprocess.run(
        cmd, cwd=root, capture_output=True, text=True, check=False, timeout=timeout
    )


def dvc_message(proc: subprocess.CompletedProcess[str]) -> str:
    """DVC's own error line(s) of a failed call, without its log prefixes."""
    lines = [ln.removeprefix("ERROR: ").strip() for ln in (proc.stderr or proc.stdout).splitlines()]
    return " ".join(ln for ln in lines if ln) or f"dvc exited with {proc.returncode}"


_OID = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class RemoteObjects:
    """Content-addressed objects under ``prefix`` of a DVC remote, through the file system
    object DVC itself builds for that remote (dvc-objects over fsspec: a local folder, SFTP
    through dvc-ssh, S3 through dvc-s3), so the remote's URL, credentials and key files are
    the ones ``dvc push`` uses. Objects are named by 64 hex digits, stored as
    ``<prefix>/ab/cdef…`` like DVC's own cache."""

    name: str
    url: str
    """As shown (:func:`arkai.core.redact.without_credentials`): for messages, never to
    connect with."""
    _odb: Any

    def oids(self) -> set[str]:
        """The names of every object there (an upload's temporary name is not one)."""
        try:
            found = {str(oid) for oid in self._odb.all()}
        except FileNotFoundError:  # nothing was ever pushed under the prefix
            return set()
        return {oid for oid in found if _OID.fullmatch(oid)}

    def read(self, oid: str) -> bytes:
        data = self._odb.fs.cat_file(self._odb.oid_to_path(oid))
        return bytes(data)

    def prepare(self, oids: list[str]) -> None:
        """Make the folders that ``oids`` go to, one at a time, before writing them from
        several threads (what DVC's own ``ObjectDB.add`` does before a transfer)."""
        for prefix in sorted({oid[:2] for oid in oids}):
            self._odb._init(prefix)

    def write(self, oid: str, data: bytes) -> None:
        """Upload ``data`` as ``oid``. The file system makes it appear whole or not at all:
        a temporary name renamed into place on a folder or SFTP, one PUT on S3."""
        self._odb.add_bytes(oid, data)


@contextmanager
def remote_objects(root: Path, name: str | None, prefix: str) -> Iterator[RemoteObjects]:
    """The objects under ``prefix`` of remote ``name`` (the default remote when None) of the
    DVC repo at ``root``. A missing, unknown or misconfigured remote is an InvalidInputError."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo as DvcRepo
    from dvc_objects.db import ObjectDB

    try:
        dvc = DvcRepo(str(root))
    except Exception as exc:  # NotDvcRepoError, a config DVC cannot read
        raise LibraryError(f"{root}: DVC cannot open the repo ({exc})") from None
    with dvc:
        try:
            remote = dvc.cloud.get_remote(name, "push")
        except DvcException as exc:  # no default, an unknown name, a plugin not installed
            raise InvalidInputError(
                f"remote {name or '(default)'}: {exc}",
                hint="`arkai remote list` shows the remotes; `arkai remote add` adds one",
            ) from None
        odb = ObjectDB(remote.fs, remote.fs.join(remote.path, prefix))
        from arkai.core.redact import without_credentials  # (its rules load detect-secrets)

        url = without_credentials(str(dvc.config["remote"][remote.name]["url"]))
        yield RemoteObjects(remote.name, url, odb)
