"""all-MiniLM-L6-v2 on onnxruntime, with the graph built here from the weights.

No ONNX file is downloaded: the graph is assembled with the ``onnx`` helper
API from the bundled safetensors weights, using onnxruntime's fused CPU
kernels (``Attention``, ``SkipLayerNormalization``, ``BiasGelu``: exact erf
GELU) and mean pooling inside the graph. The serialized model is cached under
the user cache directory, keyed by the SHA-256 of the weights and the builder
version, so later loads skip the ``onnx`` import and the build.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import NotInstalled
from memrouter.embed.bert import BertEmbedderBase
from memrouter.embed.weights import file_sha256, read_safetensors

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["INT8_MODEL_ID", "OnnxEmbedder", "build_onnx_model", "cached_onnx_model", "quantized_onnx_model"]

BUILDER_VERSION = 3  # 3: the last hidden states are an output too (token vectors)
# The int8 copy's vectors differ from fp32's (cosine about 0.997): they carry their own model id
# (``-v2``: since the first three feed-forward outputs stay fp32; the first copy's vectors differ again).
INT8_MODEL_ID = "all-MiniLM-L6-v2-int8-v2"
# MatMuls the int8 copy keeps in fp32: the output projections of the first three layers' feed-forward
# blocks, whose inputs (GELU outputs, quantised at run time) lose the most. Measured on 1,200 chunks of
# ai-agents-1026 (``benchmarks/bench_int8.py``): cosine to fp32 0.9968 at 1.8x fp32's speed, against
# 0.9936 at 2.1x with every MatMul quantised and 0.9972 at 1.5x with all six kept.
FP32_NODES = ("l0_ffn", "l1_ffn", "l2_ffn")
LAYERS = 6
HEADS = 12
HIDDEN = 384
EPS = 1e-12
_MS = "com.microsoft"


def build_onnx_model(weights_path: Path) -> bytes:
    """Build the serialized ONNX model: outputs ``pooled`` (shape [batch, 384]) and ``hidden``, the last
    hidden states (shape [batch, sequence, 384]; computed for pooling anyway, copied out only when asked).

    The fused ``Attention`` kernel measured faster here than both
    ``MultiHeadAttention`` after one projection GEMM and plain
    MatMul/Softmax attention.
    """
    try:
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise NotInstalled("minilm-onnx", "pip install onnx onnxruntime") from exc

    w = read_safetensors(weights_path)
    initializers: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, array: NDArray[Any]) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    word = const("word", w["embeddings.word_embeddings.weight"])
    position = const(
        "position",
        w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0],
    )
    node("Gather", [word, "input_ids"], "tok_emb")
    node("Shape", ["input_ids"], "ids_shape")
    const("one_i64", np.array([1], dtype=np.int64))
    const("two_i64", np.array([2], dtype=np.int64))
    const("zero_i64", np.array([0], dtype=np.int64))
    node("Slice", ["ids_shape", "one_i64", "two_i64"], "seq_len")
    node("Slice", [position, "zero_i64", "seq_len", "zero_i64"], "pos_emb")
    node("Add", ["tok_emb", "pos_emb"], "emb_sum")
    x = node(
        "LayerNormalization",
        [
            "emb_sum",
            const("emb_ln_w", w["embeddings.LayerNorm.weight"]),
            const("emb_ln_b", w["embeddings.LayerNorm.bias"]),
        ],
        "emb_out",
        axis=-1,
        epsilon=EPS,
    )
    # Padding is always on the right, so the attention mask is passed to the
    # Attention kernel as one length per sequence (its cheapest mask form).
    node("ReduceSum", ["attention_mask", "one_i64"], "mask_len64", keepdims=0)
    node("Cast", ["mask_len64"], "mask_lengths", to=TensorProto.INT32)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate(
            [
                w[p + "attention.self.query.weight"],
                w[p + "attention.self.key.weight"],
                w[p + "attention.self.value.weight"],
            ]
        ).T
        qkv_b = np.concatenate(
            [w[p + "attention.self.query.bias"], w[p + "attention.self.key.bias"], w[p + "attention.self.value.bias"]]
        )
        attn = node(
            "Attention",
            [x, const(f"l{i}_qkv_w", qkv_w), const(f"l{i}_qkv_b", qkv_b), "mask_lengths"],
            f"l{i}_attn",
            domain=_MS,
            num_heads=HEADS,
        )
        proj = node("MatMul", [attn, const(f"l{i}_o_w", w[p + "attention.output.dense.weight"].T)], f"l{i}_proj")
        x = node(
            "SkipLayerNormalization",
            [
                proj,
                x,
                const(f"l{i}_ln1_w", w[p + "attention.output.LayerNorm.weight"]),
                const(f"l{i}_ln1_b", w[p + "attention.output.LayerNorm.bias"]),
                const(f"l{i}_o_b", w[p + "attention.output.dense.bias"]),
            ],
            f"l{i}_ln1",
            domain=_MS,
            epsilon=EPS,
        )
        inner = node("MatMul", [x, const(f"l{i}_i_w", w[p + "intermediate.dense.weight"].T)], f"l{i}_inner")
        act = node("BiasGelu", [inner, const(f"l{i}_i_b", w[p + "intermediate.dense.bias"])], f"l{i}_gelu", domain=_MS)
        out = node("MatMul", [act, const(f"l{i}_f_w", w[p + "output.dense.weight"].T)], f"l{i}_ffn")
        x = node(
            "SkipLayerNormalization",
            [
                out,
                x,
                const(f"l{i}_ln2_w", w[p + "output.LayerNorm.weight"]),
                const(f"l{i}_ln2_b", w[p + "output.LayerNorm.bias"]),
                const(f"l{i}_f_b", w[p + "output.dense.bias"]),
            ],
            f"l{i}_ln2",
            domain=_MS,
            epsilon=EPS,
        )
    # Mean pooling over the attention mask.
    node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f", const("axis_last", np.array([-1], dtype=np.int64))], "mask_3d")
    node("Mul", [x, "mask_3d"], "masked")
    node("ReduceSum", ["masked", "one_i64"], "summed", keepdims=0)
    node("ReduceSum", ["mask_f", "one_i64"], "counts", keepdims=1)
    node("Max", ["counts", const("tiny", np.array([1e-9], dtype=np.float32))], "counts_safe")
    node("Div", ["summed", "counts_safe"], "pooled")

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [
            helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", HIDDEN]),
            helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "sequence", HIDDEN]),
        ],
        initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)],
        producer_name="memrouter",
    )
    model.ir_version = 8
    serialized: bytes = model.SerializeToString()
    return serialized


def cached_onnx_model(weights_path: Path, cache_dir: Path | None = None) -> Path:
    """Return the path of the built model, building and caching it on first use.

    The file name carries the weights' SHA-256 and the builder version, so new
    weights or a changed builder never reuse a stale graph. The write is atomic.
    """
    if cache_dir is None:
        from platformdirs import user_cache_dir

        cache_dir = Path(user_cache_dir("memrouter")) / "onnx"
    key = _weights_key(weights_path, cache_dir)
    target = cache_dir / f"minilm-l6-v2-{key}-b{BUILDER_VERSION}.onnx"
    if target.is_file():
        return target
    data = build_onnx_model(weights_path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=cache_dir, prefix=".building-", suffix=".onnx")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def quantized_onnx_model(fp32_path: Path) -> Path:
    """The int8 copy of the built model beside it, made on first use (atomic write).

    Dynamic quantisation with one scale per output channel of each weight
    (``per_channel``), for the MatMuls and the fused attention projections
    but ``FP32_NODES``; activations are quantised at run time. Per-tensor
    scales, onnxruntime's default, drift too far (cosine to fp32 0.93 on the
    corpora); per-channel ones keep about 0.997 (``FP32_NODES``).
    """
    target = fp32_path.with_name(fp32_path.stem + "-int8v2.onnx")
    if target.is_file():
        return target
    try:
        import onnx
        from onnx import TensorProto
        from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise NotInstalled("minilm-int8", "pip install onnx onnxruntime") from exc
    names = {node.name for node in onnx.load(str(fp32_path), load_external_data=False).graph.node}
    if not set(FP32_NODES) <= names:  # a renamed node would be quantised silently
        raise RuntimeError(f"the ONNX graph lacks the nodes kept in fp32: {sorted(set(FP32_NODES) - names)}")
    handle, temporary = tempfile.mkstemp(dir=fp32_path.parent, prefix=".quantizing-", suffix=".onnx")
    os.close(handle)
    import logging

    root = logging.getLogger()
    advice = _DropAdvice()  # the quantiser advises "pre-processing" on the root logger: not for our users
    root.addFilter(advice)
    try:
        quantize_dynamic(
            str(fp32_path), temporary, weight_type=QuantType.QInt8, per_channel=True,
            op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=list(FP32_NODES),
            extra_options={"DefaultTensorType": TensorProto.FLOAT},  # the fused ops' outputs are float
        )  # fmt: skip
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    finally:
        root.removeFilter(advice)
    return target


class _DropAdvice:
    """A logging filter dropping onnxruntime's advice to pre-process a model before quantising it."""

    def filter(self, record: Any) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _weights_key(weights_path: Path, cache_dir: Path) -> str:
    """SHA-256 (32 hex digits) of the weights, remembered per (path, size, mtime).

    Hashing 90 MB costs up to a second; the memo in ``hashes.json`` makes
    later loads free while any change of the file still changes the key.
    """
    stat = weights_path.stat()
    stamp = f"{weights_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo_path = cache_dir / "hashes.json"
    memo: dict[str, str] = {}
    try:
        loaded = json.loads(memo_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            memo = {str(k): str(v) for k, v in loaded.items()}
    except (OSError, ValueError):
        memo = {}  # no memo yet, or a damaged one: it is only a cache
    if stamp in memo:
        return memo[stamp]
    key = file_sha256(weights_path)[:32]
    memo[stamp] = key
    cache_dir.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=cache_dir, prefix=".hashes-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(memo, stream)
    os.replace(temporary, memo_path)
    return key


class OnnxEmbedder(BertEmbedderBase):
    """all-MiniLM-L6-v2 on onnxruntime (CPU), graph built from the bundled weights.

    Options: ``threads`` (intra-op threads; 0, the default, means one per
    CPU the process may use: measured on 2 cores, onnxruntime's own choice
    made a one-query embedding take 21 ms p50 against 6 ms with the count
    given, at the same batch throughput; the threads do not spin when idle),
    ``cache_dir`` (where the built graph is kept), ``quantized`` (the int8
    copy, ``quantized_onnx_model``, with its own model id), plus the batching
    options of ``BertEmbedderBase``.
    """

    runtime = "onnxruntime"

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int = 0,
        cache_dir: Path | None = None,
        quantized: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(model_path, **options)
        try:
            import onnxruntime  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError as exc:
            raise NotInstalled("minilm-onnx", "pip install onnxruntime onnx") from exc
        onnx_path = cached_onnx_model(model_path / "model.safetensors", cache_dir)
        if quantized:
            onnx_path = quantized_onnx_model(onnx_path)
            self.model_id = INT8_MODEL_ID
        session_options = onnxruntime.SessionOptions()
        session_options.intra_op_num_threads = threads or _usable_cpus()
        session_options.inter_op_num_threads = 1
        session_options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session_options.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: on 2 cores the spinning threads took
        # the CPU from the rest of a hybrid search (p50 24 -> 14 ms, p95 37 -> 18 ms) while
        # batch throughput stayed the same.
        session_options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(onnx_path), sess_options=session_options, providers=["CPUExecutionProvider"]
        )
        self._hidden = self._session.get_outputs()[1].name  # the last layer's output

    def _forward(self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]) -> NDArray[np.float32]:
        (pooled,) = self._session.run(["pooled"], {"input_ids": input_ids, "attention_mask": attention_mask})
        result: NDArray[np.float32] = pooled
        return result

    def _forward_hidden(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        pooled, hidden = self._session.run(
            ["pooled", self._hidden], {"input_ids": input_ids, "attention_mask": attention_mask}
        )
        return pooled, hidden


def _usable_cpus() -> int:
    """CPUs this process may run on (affinity-aware where the platform tells)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on this platform (macOS, Windows): all CPUs
        return max(1, os.cpu_count() or 1)
