"""Ray as an executor (``extract.executor: ray``, docs/team.md "Extraction on a Ray cluster").

:func:`completed` runs one module-level function over many jobs as Ray tasks — on an existing
cluster (``extract.ray.address``; ``$ARKAI_RAY_ADDRESS`` overrides) or on a local one started
for the run — with at most ``in_flight`` tasks submitted at a time, so the number of calls in
flight toward a provider is bounded across the whole cluster, whatever its size. It yields each
job with its finished :class:`~concurrent.futures.Future` in the order they finish: the shape of
the local executor, so a caller handles results (and writes them) in one code path for both.
Extraction (ops/extract.py) and the embedding batches (arkai.search.embedbatches) run on it.

A task whose worker process or node dies is re-run by Ray (``max_retries``); an exception the
function raised is not retried here (the provider runner has its own retries) and comes back
as that exception. Leaving early (an error, a stop request) cancels what is still in flight.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from arkai.adapters import interrupt
from arkai.errors import ArkaiError, InvalidInputError, PipelineError

#: Overrides ``extract.ray.address`` (a cluster address for this shell or CI job).
ENV_ADDRESS = "ARKAI_RAY_ADDRESS"
EXECUTORS = ("local", "ray")
INSTALL_HINT = "pip install 'arkai[ray]' (a ray:// address also needs 'ray[client]')"
#: How long one wait for a finished task lasts before the stop flag is looked at again.
POLL_S = 0.2

J = TypeVar("J")
T = TypeVar("T")


@dataclass(frozen=True)
class RayConfig:
    """Where the tasks run and how failures of the cluster are handled."""

    address: str | None = None
    """``auto``, ``host:port`` (the head's GCS port) or ``ray://host:10001``; None starts a
    local cluster for the run."""
    max_retries: int = 3
    """Times a task is re-run when its worker process or node dies."""
    num_cpus: float = 1.0
    """CPUs one task reserves on its node (a fraction packs more waiting calls per node)."""

    @classmethod
    def from_params(
        cls, section: Mapping[str, Any] | None, where: str = "extract.ray"
    ) -> RayConfig:
        """The ``ray`` section of params (``$ARKAI_RAY_ADDRESS`` overrides its address); a bad
        value is an InvalidInputError naming the key."""
        raw = dict(section or {})
        address = os.environ.get(ENV_ADDRESS) or raw.get("address")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise InvalidInputError(
                f"params.yaml: {where}.address must be a cluster address (auto, host:port, "
                f"ray://host:port) or null, got {address!r}"
            )
        retries = raw.get("max_retries", 3)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidInputError(
                f"params.yaml: {where}.max_retries must be a whole number ≥ 0, got {retries!r}"
            )
        cpus = raw.get("num_cpus", 1)
        if (isinstance(cpus, bool) or not isinstance(cpus, int | float)
                or not math.isfinite(cpus) or cpus < 0):  # fmt: skip
            raise InvalidInputError(
                f"params.yaml: {where}.num_cpus must be a number ≥ 0, got {cpus!r}"
            )
        return cls(address.strip() if address else None, retries, float(cpus))


def executor_of(
    section: Mapping[str, Any], override: str | None = None, where: str = "extract"
) -> str:
    """``local`` or ``ray``: ``override`` (a per-run option) or the section's ``executor``."""
    value = override if override is not None else section.get("executor", "local")
    if value not in EXECUTORS:
        raise InvalidInputError(
            f"{where}.executor must be one of {', '.join(EXECUTORS)}, got {value!r}"
        )
    return str(value)


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ArkaiError(f"the ray executor needs Ray, which is not importable: {exc}",
                         hint=INSTALL_HINT) from exc  # fmt: skip
    return ray


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail at once when nothing listens at a ``host:port`` (or ``ray://host:port``) address:
    ``ray.init`` would keep retrying for minutes. Other forms (``auto``) are left to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise PipelineError(
            f"cannot reach the Ray cluster at {address}: {exc}",
            hint=f"check extract.ray.address / ${ENV_ADDRESS} (`ray status` on the head "
            "node), or set extract.executor: local",
        ) from None


@contextmanager
def session(cfg: RayConfig) -> Iterator[None]:
    """Connected to the cluster for the block (a local one started when there is no address),
    disconnected after; a connection this process already holds is used as it is."""
    ray = _ray()
    if ray.is_initialized():
        yield
        return
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if cfg.address is None:
        options["include_dashboard"] = False
    else:
        check_reachable(cfg.address)
    try:
        # "local": a new cluster, never one ray.init would otherwise find on this machine.
        ray.init(address=cfg.address or "local", **options)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError …
        where = cfg.address or "a local cluster"
        raise PipelineError(
            f"cannot start or reach the Ray cluster ({where}): {exc}",
            hint=f"check extract.ray.address / ${ENV_ADDRESS} (`ray status` on the head "
            "node), or set extract.executor: local",
        ) from None
    try:
        yield
    finally:
        ray.shutdown()


def slots(cfg: RayConfig) -> int:
    """How many tasks of ``cfg.num_cpus`` CPUs the connected cluster runs at once (at least 1).
    Call inside :func:`session`."""
    cpus = float(_ray().cluster_resources().get("CPU", 1.0))
    return max(1, int(cpus / cfg.num_cpus) if cfg.num_cpus > 0 else int(cpus))


def _failure(ray: Any, name: str, exc: BaseException) -> BaseException:
    """What a failed task's future holds: the function's own exception when Ray brought it
    back, else a PipelineError saying what happened to the task."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            return cause
    return PipelineError(f"{name}: the Ray task failed: {str(exc).strip().splitlines()[0]}")


def completed(
    jobs: Sequence[J],
    fn: Callable[[J], T],
    *,
    in_flight: int,
    cfg: RayConfig,
    name: str,
) -> Iterator[tuple[J, Future[T]]]:
    """Run ``fn`` (a module-level function, importable on the workers) on every job as Ray
    tasks, at most ``in_flight`` submitted at a time; yield each job with its finished future,
    in the order they finish. Call inside :func:`session`."""
    ray = _ray()
    task = ray.remote(fn).options(name=name, max_retries=cfg.max_retries,
                                  retry_exceptions=False, num_cpus=cfg.num_cpus)  # fmt: skip
    queue = list(reversed(jobs))
    pending: dict[Any, J] = {}
    try:
        while queue or pending:
            while queue and len(pending) < max(1, in_flight):
                job = queue.pop()
                pending[task.remote(job)] = job
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            interrupt.check(name)
            for ref in ready:
                job = pending.pop(ref)
                fut: Future[T] = Future()
                try:
                    fut.set_result(ray.get(ref))
                except ray.exceptions.RayError as exc:
                    fut.set_exception(_failure(ray, name, exc))
                yield job, fut
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):  # never hide why the loop ended
                ray.cancel(ref, force=True)


def completed_locally(
    plans: list[J], work: Callable[[J], T], workers: int
) -> Iterator[tuple[J, Future[T]]]:
    """Run ``work`` on every plan; yield each plan with its finished future, in the order they
    finish. One worker runs the items inline, in the calling (main) thread, so SIGTERM or
    Ctrl-C interrupts a CPU-bound item (the builtin provider) at once instead of waiting for a
    pool thread to finish it; more workers share a thread pool (their waits watch the stop
    flag). Leaving early cancels what has not started."""
    if workers <= 1:
        for plan in plans:
            fut: Future[T] = Future()
            try:
                fut.set_result(work(plan))
            except Exception as exc:  # KeyboardInterrupt (a signal) propagates at once
                fut.set_exception(exc)
            yield plan, fut
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(work, p): p for p in plans}
        try:
            for done in as_completed(futures):
                yield futures[done], done
        finally:
            for other in futures:
                other.cancel()
