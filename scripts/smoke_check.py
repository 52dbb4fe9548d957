"""Set-up smoke check: the embedded model must generate a token and the embedding model must load.

A llama-cpp-python built with the wrong CPU flags imports fine and then dies with SIGSEGV
on the first token, so we generate one in a child process and report a crash clearly.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import sys
sys.path.insert(0, %r)
from config import load_settings
from llm_handler import LlamaCppBackend
backend = LlamaCppBackend(load_settings(environ={}))
text = backend.complete([{"role": "user", "content": "Say hi."}], max_tokens=1)
print("llama.cpp ok:", backend.name, repr(text))
from embeddings import make_embedder
settings = load_settings()
if settings.embedding_backend != "ollama":  # Ollama is a service, not something set-up installs
    embedder = make_embedder(settings)
    print("embeddings ok:", embedder.name, len(embedder.embed_query("ready")), "dimensions")
""" % str(ROOT)


def main() -> int:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        crashed = proc.returncode < 0
        print(proc.stdout + proc.stderr, file=sys.stderr)
        if crashed:
            print(
                f"Smoke check: the embedded model crashed (signal {-proc.returncode}) on its first token. "
                "llama-cpp-python was built for vector units this CPU cannot run: build it for any x86-64 CPU "
                "with `make setup LLAMA_CPU=portable`.",
                file=sys.stderr,
            )
        else:
            print("Smoke check failed (see above).", file=sys.stderr)
        return 1
    print(proc.stdout.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
