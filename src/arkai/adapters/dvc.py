"""Running DVC: the one place arkai starts ``dvc repro`` (a subprocess of this interpreter)
and opens a DVC remote's file system (:func:`remote_objects`)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arkai.errors import InvalidInputError, LibraryError

__all__ = ["RemoteObjects", "dvc_message", "remote_objects", "repro", "run_dvc", "stage_names"]


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
