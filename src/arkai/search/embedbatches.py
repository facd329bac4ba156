"""Embedding batches, computed in this process or as Ray tasks (docs/team.md, "Embeddings on
Ray").

The index stage hands :func:`encoded` the keys of the chunks its vector store lacks; they are
cut into batches of ``index.batch_size`` exactly as a local run cuts them, and each batch's rows
come back in submission order, so the driver fills and writes the store in the same order —
the same bytes — whichever executor computed them. ``extract.executor`` (and its ``ray``
settings) decide where: the one switch that moves a library's model work onto a cluster.

On Ray a worker loads the embedder once per worker process (:func:`arkai.search.embed.get_embedder`
keeps one instance per name and process) and sends rows back; it writes nothing. A worker that
dies mid-batch has the batch re-run by Ray (``extract.ray.max_retries``); any other failure
ends the run before the store is saved, so it never holds part of a run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters import raytasks
from arkai.errors import PipelineError

F32 = npt.NDArray[np.float32]
#: Batches in flight per CPU the cluster offers: one computing, one waiting to start.
PER_SLOT = 2


@dataclass(frozen=True)
class Batch:
    """One batch for a worker: the driver's embedder (name and width) and the texts."""

    embedder: str
    dim: int
    texts: tuple[str, ...]
    batch_size: int
    recipe: str = ""


def encode_batch(batch: Batch) -> F32:
    """The rows of one batch (a Ray task, or a call in this process): the same call, with the
    same batch, that a local run makes."""
    from arkai.search.embed import get_embedder, recipe_of

    emb = get_embedder(batch.embedder)
    ours = (emb.name, int(emb.dim), recipe_of(emb))
    if ours != (batch.embedder, batch.dim, batch.recipe):
        raise PipelineError(
            f"the worker's embedder is {_said(*ours)}, the driver's "
            f"{_said(batch.embedder, batch.dim, batch.recipe)}: install the same arkai and "
            "model on every node"
        )
    rows = emb.encode(list(batch.texts), batch_size=batch.batch_size, kind="passage")
    return np.asarray(rows, dtype=np.float32)


def encoded(
    embedder: Any,
    keys: Sequence[str],
    texts: Mapping[str, str],
    batch_size: int,
    extract: Mapping[str, Any] | None = None,
    *,
    encode_size: int | None = None,
) -> Iterator[tuple[list[str], F32]]:
    """Each batch of ``keys`` (at most ``batch_size`` each, in order) with its rows, in order;
    computed by ``embedder`` here, or by Ray tasks when ``extract.executor`` is ``ray``.
    ``encode_size`` is the model's own batch size within a batch (default ``batch_size``)."""
    step = max(1, int(batch_size))
    size = max(1, int(encode_size or step))
    parts = [list(keys[i : i + step]) for i in range(0, len(keys), step)]
    section = extract or {}
    if not parts or raytasks.executor_of(section) == "local":
        for part in parts:
            rows = embedder.encode([texts[k] for k in part], batch_size=size, kind="passage")
            yield part, np.asarray(rows, dtype=np.float32)
        return
    cfg = raytasks.RayConfig.from_params(section.get("ray"))
    from arkai.search.embed import recipe_of

    name, dim, recipe = str(embedder.name), int(embedder.dim), recipe_of(embedder)
    jobs = [
        (n, Batch(name, dim, tuple(texts[k] for k in part), size, recipe))
        for n, part in enumerate(parts)
    ]
    with raytasks.session(cfg):
        in_flight = PER_SLOT * raytasks.slots(cfg)
        done: dict[int, F32] = {}
        following = 0
        for (n, _), fut in raytasks.completed(
            jobs, _encode_job, in_flight=in_flight, cfg=cfg, name="arkai-embed"
        ):
            done[n] = fut.result()  # a task's error ends the run here: nothing is saved
            while following in done:  # hand them on in order (at most in_flight wait here)
                yield parts[following], done.pop(following)
                following += 1


def _said(name: str, dim: int, recipe: str) -> str:
    """An embedder as an error names it."""
    return f"{name} ({dim} dimensions{', ' + recipe if recipe else ''})"


def _encode_job(job: tuple[int, Batch]) -> F32:
    """:func:`encode_batch` for a numbered job (the number stays with the driver)."""
    return encode_batch(job[1])
