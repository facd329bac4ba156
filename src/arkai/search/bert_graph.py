"""The ONNX graph of a BERT sentence encoder, written from its weights (no PyTorch).

:func:`build_bert_graph` reads a Hugging Face BERT checkpoint (``config.json`` +
``model.safetensors``) and writes the network as an ONNX graph with the ``onnx`` helper API:

- embeddings: word + position + token type, then LayerNorm;
- ``num_hidden_layers`` encoder layers: multi-head self-attention (scaled dot product, the
  padding masked out), output projection + residual + LayerNorm, feed-forward with exact (erf)
  GELU + residual + LayerNorm;
- mean pooling over the tokens the attention mask keeps, then L2 normalisation.

Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, ``[batch, sequence]``);
output ``sentence_embedding`` (float32, ``[batch, hidden]``). The nodes are laid out as the
PyTorch exporter lays out Hugging Face's BERT, so onnxruntime's BERT optimiser fuses them the
same way (Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization), and named as
the exporter names them (``/encoder/layer.0/output/dense/MatMul``).

Imports ``onnx`` and ``safetensors`` only when called.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from arkai.errors import ArkaiError

__all__ = ["INPUTS", "OUTPUT", "build_bert_graph", "read_bert_config"]

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
_NEEDED = (
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "intermediate_size",
    "max_position_embeddings",
)


def read_bert_config(model_dir: Path) -> dict[str, Any]:
    """``config.json`` of a BERT checkpoint, checked for what the graph needs."""
    path = model_dir / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArkaiError(f"{path}: unreadable model config: {exc}") from exc
    if not isinstance(cfg, dict) or cfg.get("model_type") != "bert":
        raise ArkaiError(f"{path}: not a BERT model config (model_type must be 'bert')")
    missing = [k for k in _NEEDED if not isinstance(cfg.get(k), int)]
    if missing:
        raise ArkaiError(f"{path}: missing integer fields {', '.join(missing)}")
    if cfg.get("hidden_act", "gelu") != "gelu":
        raise ArkaiError(f"{path}: hidden_act {cfg['hidden_act']!r} is not supported (gelu only)")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ArkaiError(f"{path}: only absolute position embeddings are supported")
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise ArkaiError(f"{path}: hidden_size is not a multiple of num_attention_heads")
    return cfg


class _Graph:
    """A small builder: nodes named like the PyTorch exporter's, initialisers by name."""

    def __init__(self, helper: Any, numpy_helper: Any) -> None:
        self.h = helper
        self.nh = numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._consts: dict[tuple[str, bytes], str] = {}

    def init(self, name: str, value: np.ndarray[Any, Any]) -> str:
        self.inits.append(self.nh.from_array(np.asarray(value, order="C"), name))
        return name

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        arr = np.asarray(value, dtype=dtype)
        key = (str(arr.dtype) + str(arr.shape), arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(f"onnx::Constant_{len(self._consts)}", arr)
        return self._consts[key]

    def op(self, kind: str, inputs: list[str], name: str, **attrs: Any) -> str:
        out = f"{name}_output_0"
        self.nodes.append(self.h.make_node(kind, inputs, [out], name=name, **attrs))
        return out


def build_bert_graph(model_dir: Path, *, opset: int = 17) -> Any:
    """The ``onnx.ModelProto`` of the checkpoint in ``model_dir`` with pooling and
    normalisation (see the module docstring). Raises :class:`ArkaiError` naming the file when
    the config or the weights do not fit."""
    import onnx  # type: ignore[import-untyped,unused-ignore]
    from onnx import helper, numpy_helper
    from safetensors.numpy import load_file  # type: ignore[import-untyped,unused-ignore]

    cfg = read_bert_config(model_dir)
    weights_path = model_dir / "model.safetensors"
    try:
        raw = load_file(str(weights_path))
    except Exception as exc:
        raise ArkaiError(f"{weights_path}: unreadable weights: {exc}") from exc
    # Checkpoints saved from BertModel have no prefix; from a task model, "bert.".
    w = {k.removeprefix("bert."): v for k, v in raw.items()}

    def weight(key: str) -> np.ndarray[Any, Any]:
        if key not in w:
            raise ArkaiError(f"{weights_path}: no tensor {key!r}")
        return np.asarray(w[key], dtype=np.float32)

    hidden = int(cfg["hidden_size"])
    heads = int(cfg["num_attention_heads"])
    head = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    g = _Graph(helper, numpy_helper)

    def linear(x: str, prefix: str) -> str:
        """``x @ W.T + b`` as MatMul + Add, as the exporter writes ``nn.Linear``."""
        name = "/" + prefix.replace(".weight", "").replace(".", "/").replace("/layer/", "/layer.")
        wt = g.init(f"onnx::MatMul_{prefix}", weight(f"{prefix}.weight").T)
        mm = g.op("MatMul", [x, wt], f"{name}/MatMul")
        b = g.init(f"{prefix}.bias", weight(f"{prefix}.bias"))
        return g.op("Add", [b, mm], f"{name}/Add")

    def layer_norm(x: str, prefix: str) -> str:
        scale = g.init(f"{prefix}.weight", weight(f"{prefix}.weight"))
        bias = g.init(f"{prefix}.bias", weight(f"{prefix}.bias"))
        name = "/" + prefix.replace(".", "/").replace("/layer/", "/layer.")
        return g.op(
            "LayerNormalization", [x, scale, bias], f"{name}/LayerNormalization", axis=-1,
            epsilon=eps,
        )  # fmt: skip

    # -- embeddings
    word = g.init("embeddings.word_embeddings.weight", weight("embeddings.word_embeddings.weight"))
    pos = g.init(
        "embeddings.position_embeddings.weight", weight("embeddings.position_embeddings.weight")
    )
    types = g.init(
        "embeddings.token_type_embeddings.weight",
        weight("embeddings.token_type_embeddings.weight"),
    )
    shape = g.op("Shape", ["input_ids"], "/embeddings/Shape")
    seq = g.op("Gather", [shape, g.const(1, np.int64)], "/embeddings/Gather", axis=0)
    seq1 = g.op("Unsqueeze", [seq, g.const([0], np.int64)], "/embeddings/Unsqueeze")
    pos_ids_all = g.init(
        "embeddings.position_ids",
        np.arange(int(cfg["max_position_embeddings"]), dtype=np.int64)[None, :],
    )
    pos_ids = g.op(
        "Slice",
        [pos_ids_all, g.const([0], np.int64), seq1, g.const([1], np.int64)],
        "/embeddings/Slice",
    )
    e_word = g.op("Gather", [word, "input_ids"], "/embeddings/word_embeddings/Gather")
    e_type = g.op("Gather", [types, "token_type_ids"], "/embeddings/token_type_embeddings/Gather")
    e_sum = g.op("Add", [e_word, e_type], "/embeddings/Add")
    e_pos = g.op("Gather", [pos, pos_ids], "/embeddings/position_embeddings/Gather")
    e_all = g.op("Add", [e_sum, e_pos], "/embeddings/Add_1")
    x = layer_norm(e_all, "embeddings.LayerNorm")

    # -- the additive attention mask: 0 where kept, the float minimum where padded
    m2 = g.op("Unsqueeze", ["attention_mask", g.const([1], np.int64)], "/Unsqueeze")
    m3 = g.op("Unsqueeze", [m2, g.const([2], np.int64)], "/Unsqueeze_1")
    m4 = g.op("Cast", [m3], "/Cast", to=onnx.TensorProto.FLOAT)
    inv = g.op("Sub", [g.const(1.0), m4], "/Sub")
    bias_mask = g.op("Mul", [inv, g.const(np.finfo(np.float32).min)], "/Mul")

    split_shape = g.const([0, 0, heads, head], np.int64)
    merge_shape = g.const([0, 0, hidden], np.int64)
    scale = g.const(math.sqrt(head))
    for i in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        n = f"/encoder/layer.{i}/attention/self"
        q = linear(x, f"{p}.attention.self.query")
        k = linear(x, f"{p}.attention.self.key")
        v = linear(x, f"{p}.attention.self.value")
        qh = g.op("Reshape", [q, split_shape], f"{n}/Reshape_2")
        qt = g.op("Transpose", [qh], f"{n}/Transpose_1", perm=[0, 2, 1, 3])
        kh = g.op("Reshape", [k, split_shape], f"{n}/Reshape")
        kt = g.op("Transpose", [kh], f"{n}/Transpose_2", perm=[0, 2, 3, 1])
        vh = g.op("Reshape", [v, split_shape], f"{n}/Reshape_1")
        vt = g.op("Transpose", [vh], f"{n}/Transpose", perm=[0, 2, 1, 3])
        scores = g.op("MatMul", [qt, kt], f"{n}/MatMul")
        scaled = g.op("Div", [scores, scale], f"{n}/Div")
        masked = g.op("Add", [scaled, bias_mask], f"{n}/Add")
        probs = g.op("Softmax", [masked], f"{n}/Softmax", axis=-1)
        ctx = g.op("MatMul", [probs, vt], f"{n}/MatMul_1")
        ctx_t = g.op("Transpose", [ctx], f"{n}/Transpose_3", perm=[0, 2, 1, 3])
        ctx_m = g.op("Reshape", [ctx_t, merge_shape], f"{n}/Reshape_3")
        att = linear(ctx_m, f"{p}.attention.output.dense")
        att_res = g.op("Add", [att, x], f"/encoder/layer.{i}/attention/output/Add")
        x_att = layer_norm(att_res, f"{p}.attention.output.LayerNorm")
        inter = linear(x_att, f"{p}.intermediate.dense")
        gn = f"/encoder/layer.{i}/intermediate/intermediate_act_fn"
        half = g.op("Div", [inter, g.const(math.sqrt(2.0))], f"{gn}/Div")
        erf = g.op("Erf", [half], f"{gn}/Erf")
        one = g.op("Add", [erf, g.const(1.0)], f"{gn}/Add")
        prod = g.op("Mul", [inter, one], f"{gn}/Mul")
        gelu = g.op("Mul", [prod, g.const(0.5)], f"{gn}/Mul_1")
        out = linear(gelu, f"{p}.output.dense")
        out_res = g.op("Add", [out, x_att], f"/encoder/layer.{i}/output/Add")
        x = layer_norm(out_res, f"{p}.output.LayerNorm")

    # -- mean pooling over the kept tokens, then L2 normalisation
    m_float = g.op("Cast", ["attention_mask"], "/pool/Cast", to=onnx.TensorProto.FLOAT)
    m_tok = g.op("Unsqueeze", [m_float, g.const([-1], np.int64)], "/pool/Unsqueeze")
    kept = g.op("Mul", [x, m_tok], "/pool/Mul")
    total = g.op("ReduceSum", [kept, g.const([1], np.int64)], "/pool/ReduceSum", keepdims=0)
    count = g.op("ReduceSum", [m_tok, g.const([1], np.int64)], "/pool/ReduceSum_1", keepdims=0)
    count_c = g.op("Max", [count, g.const(1e-9)], "/pool/Max")
    mean = g.op("Div", [total, count_c], "/pool/Div")
    norm = g.op("ReduceL2", [mean], "/norm/ReduceL2", axes=[1], keepdims=1)
    norm_c = g.op("Max", [norm, g.const(1e-12)], "/norm/Max")
    g.nodes.append(helper.make_node("Div", [mean, norm_c], [OUTPUT], name="/norm/Div"))

    batch_seq = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "bert_sentence_encoder",
        [helper.make_tensor_value_info(n, onnx.TensorProto.INT64, batch_seq) for n in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, onnx.TensorProto.FLOAT, ["batch", hidden])],
        initializer=g.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="arkai"
    )
    model.ir_version = min(model.ir_version, 8)  # opset 17's IR: older onnxruntimes load it
    onnx.checker.check_model(model)
    return model
