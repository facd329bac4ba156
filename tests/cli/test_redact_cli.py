"""Redaction through ``arkai add``: folder names, metadata, chat ids, printed results, logs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Runner

CARD = "4111" + "1111" + "1111" + "1111"
MAIL = "jane.roe" + "@" + "example.org"
PASSWORD = "Sup3r" + "S3cretPw"


def everything(root: Path) -> bytes:
    parts = []
    for path in sorted(root.rglob("*")):
        parts.append(str(path.relative_to(root)).encode())
        if path.is_file():
            parts.append(path.read_bytes())
    return b"\n".join(parts)


def test_a_url_password_is_never_printed_or_logged(kr: Path, arkai: Runner) -> None:
    code, out, err = arkai("--repo", kr, "add", f"mysql://root:{PASSWORD}@db.example/app", "--json")
    assert code != 0
    (result,) = json.loads(out)["results"]
    assert result["source"] == "mysql://root:[REDACTED:url_password]@db.example/app"
    assert PASSWORD not in out + err
    assert PASSWORD.encode() not in everything(kr / ".arkai")


def test_redacted_note_leaves_no_trace_in_names_or_metadata(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    note = tmp_path / f"card-{CARD}.md"
    note.write_text(f"Mail {MAIL} about card {CARD}.\n", encoding="utf-8")
    code, out, err = arkai("--repo", kr, "add", "--redact", note, "--json")
    assert code == 0, err
    (result,) = json.loads(out)["results"]
    assert "[REDACTED credit_card]" in result["path"] or "REDACTED" in result["path"]
    meta = json.loads((kr / result["path"] / "metadata.json").read_text())
    assert meta["redactions"] == {"credit_card": 1, "email": 1}
    disk = everything(kr)
    assert CARD.encode() not in disk and MAIL.encode() not in disk
    assert CARD not in out + err


def test_chat_id_and_attachment_names_are_redacted(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    conv = {
        "id": MAIL,
        "title": f"Card {CARD}",
        "create_time": 1717236000,
        "current_node": "m1",
        "mapping": {
            "m0": {"parent": None, "message": None},
            "m1": {
                "parent": "m0",
                "message": {
                    "author": {"role": "user"},
                    "create_time": 1717236000,
                    "content": {"content_type": "text", "parts": ["See the scan."]},
                    "metadata": {"attachments": [{"name": f"scan_{CARD}.pdf"}]},
                },
            },
        },
    }
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([conv]), encoding="utf-8")
    code, out, err = arkai("--repo", kr, "add", export, "--json")
    assert code == 0, err
    disk = everything(kr)
    assert CARD.encode() not in disk and MAIL.encode() not in disk
    assert b"jane" not in disk  # not even a mangled id in the folder name
    (result,) = json.loads(out)["results"]
    meta = json.loads((kr / result["path"] / "metadata.json").read_text())
    assert meta["conversation_id"] == "[REDACTED:email]"
