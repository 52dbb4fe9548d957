"""Set-up step: prepare the configured models now, so neither the first `index` nor the first question waits.

The embedded answer model's parts are joined and verified; the embedding model is exported to
ONNX (fp32 and int8, checked against torch), the one time torch runs. Run by `make setup`;
`python scripts/prepare_model.py qwen2.5-coder-1.5b` prepares another answer model.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config import Settings, load_settings  # noqa: E402
from errors import DocqaError  # noqa: E402
from gguf_models import model_file, model_named  # noqa: E402


def prepare_embeddings(settings: Settings) -> int:
    """Load the embedding backend once: the ONNX backend exports the model on its first load."""
    from embeddings import make_embedder

    started = time.perf_counter()
    try:
        embedder = make_embedder(settings)
        embedder.embed_query("ready")
    except DocqaError as exc:
        print(f"Embedding model: {exc}", file=sys.stderr)
        return 1
    where = f", {embedder.onnx_path}" if hasattr(embedder, "onnx_path") else ""
    print(f"Embedding model {embedder.name} ({settings.embedding_backend}{where}): ready in {time.perf_counter() - started:.1f} s")
    return 0


def main(argv: list[str]) -> int:
    settings = load_settings()
    if not argv and settings.embedding_backend != "ollama" and prepare_embeddings(settings):
        return 1
    name = argv[0] if argv else settings.llamacpp_model
    if settings.llamacpp_model_path and not argv:
        print(f"Embedded model: {settings.llamacpp_model_path} (LLAMACPP_MODEL_PATH)")
        return 0
    started = time.perf_counter()
    try:
        path = model_file(model_named(name), Path(settings.model_cache_dir))
    except DocqaError as exc:
        print(f"Embedded model {name}: {exc}", file=sys.stderr)
        return 1
    print(f"Embedded model {name}: {path} ({path.stat().st_size / 1e6:.0f} MB, verified, {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
