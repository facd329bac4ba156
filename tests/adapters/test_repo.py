"""The Repo object: one place that knows the root, params, items and git of a library."""

from __future__ import annotations

from pathlib import Path

import pytest

from arkai.adapters.repo import Repo
from arkai.errors import LibraryError


def test_open_finds_root_from_subfolder(tmp_path: Path) -> None:
    (tmp_path / "library" / "notes").mkdir(parents=True)
    (tmp_path / "params.yaml").write_text("extract:\n  variables:\n    max_claims: 7\n")
    repo = Repo.open(tmp_path / "library" / "notes")
    assert repo.root == tmp_path.resolve()
    assert repo.param("extract.variables.max_claims") == 7
    assert repo.param("no.such.key", "d") == "d"
    assert list(repo.items()) == []


def test_open_outside_a_library_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="not inside an arkai knowledge repo"):
        Repo.open(tmp_path)


def test_params_read_once(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "params.yaml").write_text("extract:\n  variables:\n    max_claims: 7\n")
    repo = Repo.at(tmp_path)
    assert repo.param("extract.variables.max_claims") == 7
    (tmp_path / "params.yaml").write_text("extract:\n  variables:\n    max_claims: 9\n")
    assert repo.param("extract.variables.max_claims") == 7
    assert Repo.at(tmp_path).param("extract.variables.max_claims") == 9
