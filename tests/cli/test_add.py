"""``arkai add``: items, identity, duplicates, hostile titles and bad input."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401
from tests.conftest import SAMPLES, TRANSCRIPTS, Runner

ARTICLES = Path(__file__).resolve().parents[1] / "fixtures" / "articles"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``library/`` with its bytes — to prove nothing changed."""
    lib = root / "library"
    return {str(p.relative_to(lib)): p.read_bytes() for p in sorted(lib.rglob("*")) if p.is_file()}


def only_item(root: Path, ctype: str) -> Path:
    items = [p.parent for p in (root / "library" / ctype).rglob("metadata.json")]
    assert len(items) == 1, items
    return items[0]


def test_add_vtt_writes_item(kr: Path, arkai: Runner) -> None:
    src = SAMPLES / "beekeeping-talk.vtt"
    code, out, err = arkai("--repo", kr, "add", src, "--tags", "Bees, data", "--json")
    assert code == 0, err
    res = json.loads(out)["results"][0]
    assert res["status"] == "added"
    item = kr / res["path"]
    meta = json.loads((item / "metadata.json").read_text())
    assert meta["schema_version"] == 2
    assert meta["id"] == res["id"] and len(meta["id"]) == 16
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    assert meta["canonical_ref"] == f"file:sha256:{sha}"
    assert meta["id"] == hashlib.sha256(meta["canonical_ref"].encode()).hexdigest()[:16]
    assert meta["tags"] == ["bees", "data"]
    assert meta["content_type"] == "transcripts"
    assert item.name.endswith(f"({sha[:8]})")
    assert (item / "source.vtt").read_bytes() == src.read_bytes()
    transcript = (item / "transcript.md").read_bytes()
    assert (
        meta["artifact_digests"]["transcript.md"]
        == "sha256:" + hashlib.sha256(transcript).hexdigest()
    )
    assert meta["artifact_digests"]["source.vtt"] == f"sha256:{sha}"
    lines = transcript.decode().splitlines()
    assert lines[0].startswith("[00:00:0")
    assert all(line.startswith("[") for line in lines if line)
    # Canonical JSON: sorted keys, trailing newline.
    raw = (item / "metadata.json").read_text()
    assert raw.endswith("}\n") and list(json.loads(raw)) == sorted(json.loads(raw))


def test_same_file_twice_is_one_item(kr: Path, arkai: Runner) -> None:
    src = SAMPLES / "compilers-podcast.srt"
    assert arkai("--repo", kr, "add", src)[0] == 0
    before = tree(kr)
    code, out, _ = arkai("--repo", kr, "add", src)
    assert code == 0
    assert "exists" in out and "nothing written" in out
    assert tree(kr) == before


@pytest.mark.parametrize(
    ("name", "ctype"),
    [
        ("field-notes-on-reproducibility.txt", "transcripts"),
        ("note-2026-11-20.md", "notes"),
    ],
)
def test_untimed_sources(kr: Path, arkai: Runner, name: str, ctype: str) -> None:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / name)
    assert code == 0, err
    item = only_item(kr, ctype)
    text = (item / "transcript.md").read_text()
    assert "[00:" not in text
    assert json.loads((item / "metadata.json").read_text())["timed"] is False


@pytest.mark.shared_data
def test_real_shared_transcripts(kr: Path, arkai: Runner) -> None:
    paths = [
        TRANSCRIPTS / "virtual_coffee_srt" / "episode_1_1.srt",
        TRANSCRIPTS / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt",
        TRANSCRIPTS / "youtube_transcript_api_json" / "zEyEC34MY1A_transcript.json",
    ]
    code, out, err = arkai("--repo", kr, "add", *paths, "--type", "youtube", "--json")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert [r["status"] for r in results] == ["added"] * 3
    for r in results:
        text = (kr / r["path"] / "transcript.md").read_text()
        lines = [ln for ln in text.splitlines() if ln]
        assert len(lines) > 20
        assert len(set(lines)) == len(lines), "transcript repeats lines"


@pytest.mark.parametrize(
    "title",
    [
        "../../etc/passwd",
        'a/b\\c:d*e?f"g<h>i|j',
        "CON",
        "bell\x07 and\nnewline\ttab",
        "x" * 500,
        "   ...   ",
        "<script>alert(1)</script>",
    ],
)
def test_hostile_titles_stay_inside_library(kr: Path, arkai: Runner, title: str) -> None:
    code, out, err = arkai(
        "--repo", kr, "add", SAMPLES / "note-2026-11-20.md", "--title", title, "--json"
    )
    assert code == 0, err
    item = (kr / json.loads(out)["results"][0]["path"]).resolve()
    assert item.parent == (kr / "library" / "notes").resolve()
    name = item.name
    assert "/" not in name and "\\" not in name and ".." not in name
    assert all(ord(c) >= 32 for c in name)
    assert len(name) <= 140
    assert name.split(" (")[0].lower() not in {"con", "nul", "prn", "aux"}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_INPUTS = {
    "truncated.vtt": (b"WEBVTT\n\n00:00:01.000 --> 00:0", 2),
    "garbage.srt": (b"\x00\x01\x02 not subtitles at all \xff\xfe", 2),
    "latin1.vtt": ("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\ncaf\xe9\n".encode("latin-1"), 2),
    "empty.txt": (b"", 2),
    "blank.md": (b"   \n\n  \n", 2),
    "wrong.json": (b'{"not": "a transcript"}', 2),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_errors_and_changes_nothing(
    kr: Path, arkai: Runner, tmp_path: Path, name: str
) -> None:
    assert arkai("--repo", kr, "add", SAMPLES / "note-2026-11-20.md")[0] == 0
    before = tree(kr)
    data, expected = BAD_INPUTS[name]
    bad = _write(tmp_path / name, data)
    code, _, err = arkai("--repo", kr, "add", bad)
    assert code == expected
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert name in lines[0]
    assert tree(kr) == before


def test_huge_file_is_refused_before_reading(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    big = tmp_path / "huge.vtt"
    with open(big, "wb") as fh:
        fh.truncate(500 * 1024 * 1024)  # sparse: 500 MB without writing them
    before = tree(kr)
    code, _, err = arkai("--repo", kr, "add", big)
    assert code == 4
    assert "huge.vtt" in err and "limit" in err
    assert tree(kr) == before


def test_directory_and_symlink_are_refused(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    folder = tmp_path / "adir.vtt"
    folder.mkdir()
    link = tmp_path / "link.srt"
    os.symlink(SAMPLES / "compilers-podcast.srt", link)
    before = tree(kr)
    for path, word in ((folder, "directory"), (link, "symbolic link")):
        code, _, err = arkai("--repo", kr, "add", path)
        assert code == 2
        assert path.name in err and word in err
    assert tree(kr) == before


def test_one_bad_source_does_not_stop_the_others(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.vtt", b"WEBVTT\n\n00:00:01.000 --> nonsense\nhello\n")
    code, out, _ = arkai(
        "--repo", kr, "add", bad, SAMPLES / "beekeeping-talk.vtt", "--json", "--quiet"
    )
    assert code == 2
    statuses = [r["status"] for r in json.loads(out)["results"]]
    assert statuses == ["failed", "added"]


def test_invalid_type_is_a_usage_error(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "note-2026-11-20.md", "--type", "../x")
    assert code == 2
    assert "--type" in err


def test_a_file_name_that_is_not_utf8_fails_that_input_naming_it(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    """A Latin-1 file name (bytes that are not UTF-8): that input fails with one line naming
    it, its bytes escaped — it was an `unexpected error: UnicodeEncodeError` from the run log
    — and the other inputs are added; the run log stays JSON."""
    bad = os.path.join(os.fsencode(tmp_path), b"caf\xe9 talk.md")
    with open(bad, "wb") as fh:
        fh.write(b"A talk about bees and the wax they build combs from.\n")
    code, out, err = arkai("--repo", kr, "add", os.fsdecode(bad), SAMPLES / "note-2026-11-20.md")
    assert code == 2, err
    assert "caf\\xe9 talk.md: a file name that is not UTF-8" in err and "unexpected" not in err
    assert "added" in out
    assert len(list((kr / "library").rglob("metadata.json"))) == 1
    for log in (kr / ".arkai" / "runs").rglob("events.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            json.loads(line)


_SIGNATURE = "4f1c8b9e2a7d3f5e6c0b1a2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"


@pytest.mark.parametrize(
    ("query", "tokens", "shown_query"),
    [
        ("token=tok3nTok3nTok3n99", ["tok3nTok3nTok3n99"], "token=[REDACTED:url_secret]"),
        # A presigned S3 link: its session token and signature (the date and expiry stay).
        (
            "X-Amz-Date=20261201T000000Z&X-Amz-Expires=3600"
            "&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr8xyz99&X-Amz-Signature=" + _SIGNATURE,
            ["IQoJb3JpZ2luX2VjEJr8xyz99", _SIGNATURE],
            "X-Amz-Date=20261201T000000Z&X-Amz-Expires=3600"
            "&X-Amz-Security-Token=[REDACTED:url_secret]&X-Amz-Signature=[REDACTED:url_secret]",
        ),
    ],
    ids=["token", "presigned-s3"],
)
def test_no_credential_in_a_source_url_reaches_the_library(
    kr: Path,
    arkai: Runner,
    http_server: LocalHTTPServer,
    query: str,
    tokens: list[str],
    shown_query: str,
) -> None:
    """A page fetched by a URL that carries a token (a signed link) is stored with the token
    replaced wherever the URL is kept (`url`, `ref`, `canonical_ref`, `fetched_url`, the
    source's input): metadata.json is committed and its URL published on the site. The fetch
    itself used the whole URL."""
    page = (ARTICLES / "winter_beehives.cp1252.html").read_bytes()
    http_server.route("/2021/winter", body=page, content_type="text/html")
    code, _, err = arkai("--repo", kr, "add", "-q", http_server.url(f"/2021/winter?{query}"))
    assert code == 0, err
    assert [r.path for r in http_server.requests] == [f"/2021/winter?{query}"]
    files = tree(kr)
    for token in tokens:
        assert not [name for name, data in files.items() if token.encode() in data]
    (meta,) = [json.loads(data) for name, data in files.items() if name.endswith("metadata.json")]
    shown = http_server.url(f"/2021/winter?{shown_query}")
    assert meta["url"] == meta["fetched_url"] == meta["source"]["input"] == shown
    assert meta["canonical_ref"] == f"url:{shown}"
