"""``arkai remote``: the DVC remote through which a team shares a library's caches.

The index and beliefs stages keep embeddings (``index/vectors``, ``index/beliefs``) and the
built indexes as cached DVC outputs (``dvc.yaml``), so ``dvc push`` sends them to a remote and
``dvc pull`` in another clone brings them back. Provider responses (``.arkai/responses``) are
no stage's output; :func:`push` and :func:`pull` run ``dvc push|pull`` and then exchange the
response store through the same remote (:mod:`arkai.providers.sync`), so a rebuild in the
other clone calls no provider and embeds nothing (docs/team.md). :func:`add_remote` wraps
``dvc remote add`` with the settings each kind of remote needs; credentials and key files go
to the clone's own ``.dvc/config.local``, never into the committed ``.dvc/config``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.dvc import dvc_message, remote_objects, run_dvc
from arkai.adapters.params import positive_number
from arkai.adapters.repo import Repo
from arkai.core.redact import SECRET_KINDS, redact, without_credentials
from arkai.errors import InvalidInputError, LibraryError
from arkai.model.record import AsDict
from arkai.providers.runner import RESPONSES, ResponseStore
from arkai.providers.sync import (
    PREFIX,
    TIMEOUT_S,
    Progress,
    SyncResult,
    pull_responses,
    push_responses,
)

__all__ = ["Remote", "Transfer", "add_remote", "list_remotes", "pull", "push"]

#: URL scheme → (the DVC plugin module that serves it, its pip package).
PLUGINS: dict[str, tuple[str, str]] = {
    "s3": ("dvc_s3", "dvc-s3"),
    "ssh": ("dvc_ssh", "dvc-ssh"),
    "gs": ("dvc_gs", "dvc-gs"),
    "azure": ("dvc_azure", "dvc-azure"),
    "http": ("dvc_http", "dvc-http"),
    "https": ("dvc_http", "dvc-http"),
    "webdav": ("dvc_webdav", "dvc-webdav"),
    "webdavs": ("dvc_webdav", "dvc-webdav"),
}
#: The longest ``dvc push|pull`` may run (params.yaml ``remote.dvc_timeout_s``): DVC reports no
#: progress to watch when not on a terminal, so its bound is overall, generous for a large cache.
DVC_TIMEOUT_S = 3600.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class Remote(AsDict):
    """One configured DVC remote."""

    name: str
    url: str
    default: bool


def _scheme(url: str) -> str:
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else ""


def _check_plugin(scheme: str) -> None:
    if scheme not in PLUGINS:
        return
    module, package = PLUGINS[scheme]
    if importlib.util.find_spec(module) is None:
        raise InvalidInputError(
            f"{scheme}:// remotes need DVC's {package} plugin, which is not installed",
            hint=f"pip install {package}",
        )


def add_remote(
    repo: Repo,
    name: str,
    url: str,
    *,
    default: bool = False,
    endpoint_url: str | None = None,
    keyfile: str | None = None,
    force: bool = False,
    cwd: Path | None = None,
) -> Remote:
    """Configure remote ``name`` at ``url`` (``dvc remote add``) in ``repo``.

    A URL without a scheme is a local folder, stored as an absolute path (resolved against
    ``cwd``, default the current folder). ``endpoint_url`` (S3-compatible servers: MinIO,
    Ceph…) is committed with the remote; ``keyfile`` (SSH) is this machine's, so it goes to
    ``.dvc/config.local``. An existing ``name`` is refused unless ``force``; when a setting is
    refused after the remote was added, the remote is removed again (nothing half-configured).
    """
    if not _NAME.fullmatch(name):
        raise InvalidInputError(
            f"remote name {name!r}: use letters, digits, '_', '-' or '.'", hint="e.g. `team`"
        )
    if not url.strip():
        raise InvalidInputError("remote URL is empty")
    _refuse_credentials(name, url, "remote URL")
    if endpoint_url is not None:
        _refuse_credentials(name, endpoint_url, "--endpoint-url")
    scheme = _scheme(url)
    if not scheme:
        url = str((cwd or Path.cwd()).joinpath(Path(url).expanduser()).resolve())
    _check_plugin(scheme)
    if endpoint_url is not None and scheme != "s3":
        raise InvalidInputError(f"--endpoint-url is for s3:// remotes, not {url!r}")
    if keyfile is not None:
        if scheme != "ssh":
            raise InvalidInputError(f"--keyfile is for ssh:// remotes, not {url!r}")
        key = (cwd or Path.cwd()).joinpath(Path(keyfile).expanduser()).resolve()
        if not key.is_file():
            raise InvalidInputError(f"{key}: no such key file")
        keyfile = str(key)

    root = repo.root
    if not (root / ".dvc").is_dir():
        raise LibraryError(f"{root} is not a DVC repo (no .dvc/)", hint="`arkai init` makes one")
    args = ["remote", "add", *(["--default"] if default else []), *(["--force"] if force else [])]
    proc = run_dvc(root, *args, name, url)
    if proc.returncode != 0:
        raise InvalidInputError(f"dvc remote add {name}: {dvc_message(proc)}")
    settings = []
    if endpoint_url is not None:
        settings.append(["remote", "modify", name, "endpointurl", endpoint_url])
    if keyfile is not None:
        settings.append(["remote", "modify", "--local", name, "keyfile", keyfile])
    for setting in settings:
        proc = run_dvc(root, *setting)
        if proc.returncode != 0:
            if not force:
                run_dvc(root, "remote", "remove", name)
            raise InvalidInputError(f"dvc {' '.join(setting[:3])}: {dvc_message(proc)}")
    return Remote(name, url, default)


def _refuse_credentials(name: str, url: str, what: str) -> None:
    """A URL that holds a credential (``ssh://me:PASSWORD@host/…``, ``…?token=…``) is refused:
    ``dvc remote add`` writes the URL to ``.dvc/config``, which git commits and pushes. The
    error shows the URL with the credential replaced."""
    shown, found = redact(url, SECRET_KINDS)  # (as without_credentials shows it)
    if not found:
        return
    kinds = sorted(found)
    raise InvalidInputError(
        f"{what} {shown} holds a credential ({', '.join(kinds)}): `dvc remote add` would "
        "write it to .dvc/config, which git commits",
        hint=(
            "give the URL without it, and keep the credential in this clone's .dvc/config.local "
            f"(not committed): `dvc remote modify --local {name} password …` for ssh:// or "
            f"webdav://, `--keyfile` for ssh://, `dvc remote modify --local {name} "
            "access_key_id …` / `secret_access_key …` for s3:// (or the AWS_* variables)"
        ),
    )


def list_remotes(repo: Repo) -> list[Remote]:
    """The remotes DVC sees in ``repo`` (every config level), the default one flagged."""
    # `dvc config --list` merges every level as KEY=VALUE lines (`dvc remote list` pads with
    # spaces, which a URL may hold). Only URLs and the default are read: credentials stay.
    proc = run_dvc(repo.root, "config", "--list")
    if proc.returncode != 0:
        raise LibraryError(f"dvc config --list: {dvc_message(proc)}")
    urls: dict[str, str] = {}
    default = ""
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "core.remote":
            default = value
        elif key.startswith("remote.") and key.endswith(".url"):
            urls[key[len("remote.") : -len(".url")]] = value
    # A URL given to DVC by hand may hold a password: shown without it.
    return [Remote(name, without_credentials(url), name == default) for name, url in urls.items()]


@dataclass(frozen=True)
class Transfer:
    """What ``arkai remote push`` or ``pull`` did: DVC's summary and the response exchange."""

    direction: str
    remote: str
    url: str
    dvc: str
    """DVC's last line of output (``3 files pushed``, ``Everything is up to date.``)."""
    responses: SyncResult
    dvc_error: str | None = None
    """Why ``dvc push|pull`` failed (the responses were exchanged all the same)."""

    @property
    def ok(self) -> bool:
        return self.dvc_error is None and not self.responses.damaged

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "remote": {"name": self.remote, "url": self.url},
            "dvc": self.dvc,
            "dvc_error": self.dvc_error,
            "responses": self.responses.to_dict(),
            "ok": self.ok,
        }


def _transfer(repo: Repo, direction: str, name: str | None, progress: Progress | None) -> Transfer:
    """``dvc push|pull``, then the response exchange, which runs even when DVC failed (a
    clone whose index was never pushed still gets the responses); DVC's failure is reported
    in the result. A remote that fails the exchange itself, or stops answering for
    ``remote.timeout_s``, raises PipelineError; DVC is stopped after ``remote.dvc_timeout_s``."""
    root = repo.root
    if not (root / ".dvc").is_dir():
        raise LibraryError(f"{root} is not a DVC repo (no .dvc/)", hint="`arkai init` makes one")
    section = repo.param("remote")
    timeout = positive_number(section, "remote.timeout_s", TIMEOUT_S)
    dvc_timeout = positive_number(section, "remote.dvc_timeout_s", DVC_TIMEOUT_S)
    with remote_objects(root, name, PREFIX) as objects:
        if progress:
            progress(0, 0, f"dvc {direction}")
        error: str | None
        lines: list[str] = []
        try:
            proc = run_dvc(root, direction, "--remote", objects.name, timeout=dvc_timeout)
        except subprocess.TimeoutExpired:
            error = (
                f"dvc {direction} did not finish within {dvc_timeout:g} s and was stopped "
                "(remote.dvc_timeout_s); what it moved is whole, run it again for the rest"
            )
        else:
            # (DVC's message may name the remote's URL as configured, a password and all.)
            error = None if proc.returncode == 0 else without_credentials(dvc_message(proc))
            lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
        store = ResponseStore(root / RESPONSES)
        sync = push_responses if direction == "push" else pull_responses
        result = sync(store, objects, progress, timeout=timeout)
        summary = lines[-1] if lines and error is None else ""
        return Transfer(direction, objects.name, objects.url, summary, result, error)


def push(repo: Repo, name: str | None = None, progress: Progress | None = None) -> Transfer:
    """``dvc push`` to remote ``name`` (the default one when None), then send the response
    entries the remote lacks. Damaged local entries are reported in the result, not sent;
    ``Transfer.ok`` is False when DVC failed or an entry was damaged."""
    return _transfer(repo, "push", name, progress)


def pull(repo: Repo, name: str | None = None, progress: Progress | None = None) -> Transfer:
    """``dvc pull`` from remote ``name`` (the default one when None), then file the response
    entries this clone lacks. Damaged remote entries are reported in the result, not used;
    ``Transfer.ok`` is False when DVC failed or an entry was damaged."""
    return _transfer(repo, "pull", name, progress)
