"""Set-up step: join and verify the configured embedded model now, so the first question never waits.

Run by `make setup`; `python scripts/prepare_model.py qwen2.5-coder-1.5b` prepares another one.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config import load_settings  # noqa: E402
from errors import DocqaError  # noqa: E402
from gguf_models import model_file, model_named  # noqa: E402


def main(argv: list[str]) -> int:
    settings = load_settings()
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
