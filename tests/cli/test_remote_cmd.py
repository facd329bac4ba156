"""``arkai remote add|list``: the settings each kind of remote gets, and refusals that name
the problem and leave the configuration as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Runner, load_json


@pytest.fixture
def dvc_repo(kr: Path) -> Path:
    """``kr`` as a DVC repo without git: what ``dvc init --no-scm`` writes that DVC reads."""
    (kr / ".dvc").mkdir()
    (kr / ".dvc" / "config").write_text("[core]\n    no_scm = True\n")
    return kr


def config(repo: Path, name: str = "config") -> str:
    path = repo / ".dvc" / name
    return path.read_text() if path.is_file() else ""


def test_add_and_list(
    dvc_repo: Path, arkai: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    key = tmp_path / "id_test"
    key.write_text("not really a key\n")
    # A relative local folder is stored absolute (DVC would read it relative to .dvc/).
    code, out, err = arkai("--repo", dvc_repo, "remote", "add", "team", "store", "-d", "--json")
    assert code == 0, err
    assert load_json(out)["remote"] == {
        "name": "team", "url": str(tmp_path / "store"), "default": True,
    }  # fmt: skip
    code, _, err = arkai(
        "--repo", dvc_repo, "remote", "add", "s3", "s3://bucket/lib",
        "--endpoint-url", "http://127.0.0.1:9000",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = arkai(
        "--repo", dvc_repo, "remote", "add", "box", "ssh://me@host/srv/lib", "--keyfile", "id_test"
    )
    assert code == 0, err
    assert "endpointurl = http://127.0.0.1:9000" in config(dvc_repo)
    # The key file is this machine's: config.local, never the committed config.
    assert "keyfile" not in config(dvc_repo)
    assert f"keyfile = {key}" in config(dvc_repo, "config.local")

    code, out, _ = arkai("--repo", dvc_repo, "remote", "list", "--json")
    assert code == 0
    assert load_json(out)["remotes"] == [
        {"name": "team", "url": str(tmp_path / "store"), "default": True},
        {"name": "s3", "url": "s3://bucket/lib", "default": False},
        {"name": "box", "url": "ssh://me@host/srv/lib", "default": False},
    ]
    code, out, _ = arkai("--repo", dvc_repo, "remote", "list")
    assert out.splitlines()[0] == f"team\t{tmp_path / 'store'}\t(default)"


def test_refusals_leave_the_config_alone(dvc_repo: Path, arkai: Runner, tmp_path: Path) -> None:
    code, _, err = arkai("--repo", dvc_repo, "remote", "add", "team", str(tmp_path / "a"))
    assert code == 0, err
    before = config(dvc_repo)
    cases = [
        (["team", str(tmp_path / "b")], "already exists"),
        (["bad name", str(tmp_path / "b")], "remote name 'bad name'"),
        (["x", str(tmp_path / "b"), "--endpoint-url", "http://h"], "--endpoint-url is for s3"),
        (["x", "s3://b/p", "--keyfile", "k"], "--keyfile is for ssh"),
        (["x", "ssh://h/p", "--keyfile", str(tmp_path / "nokey")], "nokey: no such key file"),
    ]
    for args, message in cases:
        code, _, err = arkai("--repo", dvc_repo, "remote", "add", *args)
        assert code == 2 and message in err, (args, err)
    assert config(dvc_repo) == before and not config(dvc_repo, "config.local")
    # --force replaces the remote of the same name.
    code, _, err = arkai("--repo", dvc_repo, "remote", "add", "team", str(tmp_path / "c"), "-f")
    assert code == 0, err
    assert str(tmp_path / "c") in config(dvc_repo)


def test_missing_plugin_is_named(
    dvc_repo: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arkai.ops import remote

    monkeypatch.setitem(remote.PLUGINS, "s3", ("arkai_no_such_plugin", "dvc-s3"))
    code, _, err = arkai("--repo", dvc_repo, "remote", "add", "s3", "s3://b/p")
    assert code == 2 and "dvc-s3" in err and "pip install dvc-s3" in err
    assert "s3://" not in config(dvc_repo)


def test_not_a_dvc_repo(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "remote", "add", "team", "/tmp/x")
    assert code == 1 and "not a DVC repo" in err


SECRET = "hunter2Secret"


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (["ssh://me:" + SECRET + "@host/srv/lib"], "url_password"),
        (["https://me:" + SECRET + "@dav.example.org/lib"], "url_password"),
        (["s3://bucket/lib?token=" + SECRET + "0123456789"], "url_secret"),
        (["s3://bucket/lib", "--endpoint-url", "http://key:" + SECRET + "@127.0.0.1:9000"],
         "url_password"),
    ],
)  # fmt: skip
def test_a_credential_in_a_url_is_refused_not_committed(
    dvc_repo: Path, arkai: Runner, args: list[str], kind: str
) -> None:
    """`dvc remote add` writes the URL (and the endpoint) to .dvc/config, which git commits:
    a password or token in it is refused, and the error shows it replaced, never in clear."""
    before = config(dvc_repo)
    code, out, err = arkai("--repo", dvc_repo, "remote", "add", "team", *args)
    assert code == 2, (out, err)
    assert f"[REDACTED:{kind}]" in err and "holds a credential" in err
    assert "dvc remote modify --local team" in err
    assert SECRET not in out + err
    assert config(dvc_repo) == before and not config(dvc_repo, "config.local")


def test_a_user_name_in_a_url_is_not_a_credential(dvc_repo: Path, arkai: Runner) -> None:
    code, _, err = arkai(
        "--repo", dvc_repo, "remote", "add", "box", "ssh://git@example.com/srv/dvc"
    )
    assert code == 0, err
    assert "url = ssh://git@example.com/srv/dvc" in config(dvc_repo)


def test_a_password_configured_by_hand_is_never_shown(dvc_repo: Path, arkai: Runner) -> None:
    """A URL given to DVC directly may hold a password: `remote list` and the push/pull
    results (the remote's objects, whose URL their messages name) show it replaced."""
    from arkai.adapters.dvc import remote_objects, run_dvc

    url = f"ssh://me:{SECRET}@127.0.0.1:1/srv/lib"
    assert run_dvc(dvc_repo, "remote", "add", "-d", "box", url).returncode == 0
    assert SECRET in config(dvc_repo)  # (DVC itself keeps what it was given)
    for args in (("remote", "list"), ("remote", "list", "--json")):
        code, out, err = arkai("--repo", dvc_repo, *args)
        assert code == 0, err
        assert SECRET not in out and "ssh://me:[REDACTED:url_password]@127.0.0.1:1/srv/lib" in out
    with remote_objects(dvc_repo, None, "arkai") as objects:  # (nothing connects yet)
        assert objects.url == "ssh://me:[REDACTED:url_password]@127.0.0.1:1/srv/lib"


def test_dvc_errors_are_shown_without_the_remotes_credentials(
    dvc_repo: Path, arkai: Runner, tmp_path: Path
) -> None:
    """DVC's own error names the remote's path as configured: a token in it is replaced."""
    from arkai.adapters.dvc import run_dvc

    token = "abcdefgh12345678"
    remote = tmp_path / f"remote?token={token}"
    remote.write_text("a file where DVC wants a folder\n")
    (dvc_repo / "a.txt").write_text("hi\n")
    assert run_dvc(dvc_repo, "add", "a.txt").returncode == 0
    assert run_dvc(dvc_repo, "remote", "add", "-d", "box", str(remote)).returncode == 0
    for args in (("remote", "push"), ("remote", "push", "--json")):
        code, out, err = arkai("--repo", dvc_repo, *args)
        assert code != 0, (out, err)
        assert token not in out + err, (out, err)
        assert "?token=[REDACTED:url_secret]" in out + err, (out, err)
