"""The beliefs stage's statement embeddings as Ray tasks (``extract.executor: ray``) on the
run's real local Ray cluster (tests/raycluster.py): the same files as a local build, with no
embedding computed by the driver."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.adapters.repo import Repo
from arkai.ops import memory as op
from arkai.search import embed
from tests.memory.test_beliefs_incremental import built, outputs  # noqa: F401
from tests.raycluster import Cluster

pytestmark = pytest.mark.slow


def test_beliefs_on_ray_write_the_files_of_a_local_build(
    built: Path,  # noqa: F811
    tmp_path: Path,
    on_cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The model named, not resolved: a build lets go of the embedder it loaded, and resolving
    # "default" again in the second build runs the model once (refused below) to check it.
    monkeypatch.setenv("ARKAI_EMBEDDER", "minilm-onnx")
    local, remote = tmp_path / "local", tmp_path / "remote"
    for dest in (local, remote):
        shutil.copytree(built, dest, symlinks=True)
    here = op.build(Repo.at(local))
    assert here.embedded >= 6

    params = yaml.safe_load((remote / "params.yaml").read_text())
    params["extract"]["executor"] = "ray"
    (remote / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the driver embedded a statement")

    monkeypatch.setattr(embed.OnnxMiniLMEmbedder, "encode", refuse)
    there = op.build(Repo.at(remote))
    assert there.embedded == here.embedded
    assert outputs(remote) == outputs(local)
