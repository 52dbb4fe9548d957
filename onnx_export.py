"""Exporting a sentence-transformers model to ONNX once, for the `onnx` embedding backend.

sentence-transformers' own ONNX export needs `optimum`, which pins transformers below the
version docqa uses, so the export here is torch's own: the bare transformer with dynamic
batch and sequence axes, plus per-channel int8 weights, both checked against torch's
output on a padded batch before they are kept. Pooling and normalisation stay in numpy
(`pool_and_normalize`, here), exactly as sentence-transformers does them.

The transformer is exported with eager attention, whose graph ONNX Runtime's BERT optimizer
recognises: it fuses each layer's attention and bias + GELU into single kernels (`_fuse`). The
same vectors (cosine > 0.9999, checked), 1.2-1.4x faster to embed on 2 cores
(docs/embedding-results.md). Residual + LayerNorm stay two standard ops: ONNX Runtime's fused
SkipLayerNormalization kernel took 20% of an int8 embedding, against 4% for Add + LayerNorm, so
the session also keeps it from fusing them again (`open_session`). The int8 model quantises the fused
attention's projections too (QAttention). A model the optimizer cannot fuse, or whose fused
graph does not match torch, keeps the plain export.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from errors import EmbeddingError

log = logging.getLogger(__name__)

# ONNX Runtime's session-time fusions to leave out: its SkipLayerNormalization kernel is the slow one (above).
_UNFUSED = ["SkipLayerNormFusion"]


def open_session(path: Path, options: Any = None) -> Any:
    """An ONNX Runtime CPU session of an exported model, which does not fuse residual + LayerNorm again."""
    import onnxruntime as ort

    return ort.InferenceSession(str(path), options or ort.SessionOptions(), providers=["CPUExecutionProvider"],
                                disabled_optimizers=_UNFUSED)


def export_onnx(model_folder: Path, target: Path, max_length: int, label: str = "") -> None:
    """Export the transformer to ONNX (fp32 and per-channel int8) once, checked against torch.

    Written to a temporary folder and renamed, so an interrupted export leaves nothing half-made;
    a lock keeps two processes from exporting at once.
    """
    import fcntl
    import shutil
    import tempfile
    import warnings

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "model.onnx").is_file() and (target / "model-int8.onnx").is_file():
            return
        log.info("Exporting %s to ONNX (once; cached in %s)", label or model_folder.name, target)
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reference = _torch_export(model_folder, work / "plain.onnx", max_length)
                fused = _fuse(work / "plain.onnx", work / "model.onnx", model_folder, reference)
                _quantize(work / "model.onnx", work / "model-int8.onnx")
            _check_export(work, reference, fp32_checked=fused)
            if target.exists():
                shutil.rmtree(target)
            os.replace(work, target)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"Could not export {model_folder} to ONNX: {exc} — set EMBEDDING_BACKEND=sentence-transformers."
            ) from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log.info("Exported the ONNX model in %.1fs", time.perf_counter() - started)


_CHECK_TEXTS = ["How do I open a file?", "A much longer sentence, so that the batch needs padding to line up."]


def _torch_export(model_folder: Path, path: Path, max_length: int) -> tuple[Any, Any, Any]:
    """torch.onnx.export of the bare transformer; returns a padded check batch and torch's output for it."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    # Eager attention: the graph ONNX Runtime's optimizer fuses (sdpa's is left as a dozen small ops).
    model = AutoModel.from_pretrained(str(model_folder), attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_folder))
    batch = tokenizer(_CHECK_TEXTS, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in batch]

    class Hidden(torch.nn.Module):  # keyword arguments: transformers 5 reordered forward()'s parameters
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args, strict=False))).last_hidden_state

    wrapped = Hidden(model)
    args = tuple(batch[n] for n in names)
    with torch.no_grad():
        expected = wrapped(*args).numpy()
        torch.onnx.export(
            wrapped, args, str(path), input_names=names, output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]},
            opset_version=17, dynamo=False,
        )
    return {n: batch[n].numpy() for n in names}, batch["attention_mask"].numpy(), expected


def _fuse(source: Path, path: Path, model_folder: Path, reference: tuple[Any, Any, Any]) -> bool:
    """ONNX Runtime's BERT fusions (attention, bias + GELU) when they keep torch's
    vectors; whether the fused model was kept (it is then already checked against torch).

    Falls back to the plain export, with a log line, for a model the optimizer does not know.
    Either way `source` is gone afterwards: moved to `path`, or deleted once the fused model is kept.
    """
    try:
        config = json.loads((model_folder / "config.json").read_text())
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        options = FusionOptions("bert")
        options.enable_skip_layer_norm = False  # see the module docstring: the fused kernel is the slow one
        fused = optimize_model(str(source), model_type="bert", num_heads=int(config["num_attention_heads"]),
                               hidden_size=int(config["hidden_size"]), opt_level=1, optimization_options=options)
        if not fused.get_fused_operator_statistics().get("Attention"):
            raise ValueError("no attention was fused")
        fused.save_model_to_file(str(path))
        _check_model(path, reference, 0.9999)
        source.unlink()
        return True
    except Exception as exc:  # any failure here only costs speed: keep the plain export
        log.info("Keeping the plain ONNX export of %s (not fused: %s)", model_folder.name, exc)
    os.replace(source, path)
    return False


def _quantize(source: Path, path: Path) -> None:
    """Per-channel dynamic int8 weights of the MatMuls and the fused attention's projections (QAttention):
    per-tensor int8 costs too much accuracy. With the attention's projections in fp32 they took 45% of an
    int8 embedding; quantised (and LayerNorm unfused), the int8 model embeds 1.41x faster (docs/embedding-results.md)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic warns about optional pre-processing on the root logger
    try:
        quantize_dynamic(str(source), str(path), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fused ops have no type inference
    finally:
        root.setLevel(level)


def _check_export(folder: Path, reference: tuple[Any, Any, Any], fp32_checked: bool = False) -> None:
    """Both exported models against torch's output on the padded check batch (fp32 once: `_fuse` may have)."""
    for name, floor in (("model.onnx", 0.9999), ("model-int8.onnx", 0.97)):
        if not (fp32_checked and name == "model.onnx"):
            _check_model(folder / name, reference, floor)


def _check_model(path: Path, reference: tuple[Any, Any, Any], floor: float) -> None:
    """One exported model's sentence vectors against torch's on the padded check batch."""
    import numpy as np

    feeds, mask, expected = reference
    got = open_session(path).run(None, feeds)[0]
    cosine = float(np.min((pool_and_normalize(got, mask) * pool_and_normalize(expected, mask)).sum(axis=1)))
    if cosine < floor:
        raise EmbeddingError(
            f"The ONNX export {path.name} of this model does not match torch (cosine {cosine:.4f}) — "
            "set EMBEDDING_BACKEND=sentence-transformers."
        )


def pool_and_normalize(hidden: Any, mask: Any, mode: str = "mean") -> Any:
    """Sentence vectors from token vectors, as sentence-transformers' Pooling + Normalize do."""
    import numpy as np

    if mode == "cls":
        vectors = hidden[:, 0]
    else:
        weights = mask[..., None].astype(hidden.dtype)
        vectors = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
