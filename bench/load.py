"""Load benchmark: many concurrent chat sessions through the Gradio API against a real server.

    .venv/bin/python bench/load.py [--sessions 20] [--url http://127.0.0.1:7860/]

Without --url it starts `python main.py serve` on loopback over a generated folder of one
document per session, each about a different made-up animal, so every session can check
that its answer cites its own document and nobody else's. Reports p50/p95 latency and
failures; prints a table, then one JSON line. Traffic goes to loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from serving import free_port, running, wait_until_indexed  # noqa: E402  (the same start/wait/stop as the tests)

ANIMALS = [
    "zorbat", "quillfin", "marrowhawk", "glimmerox", "tundrafly", "pebblemole", "ashwing", "brindlecat",
    "cobaltfrog", "duskhare", "emberlynx", "frostgnu", "gladeowl", "hollowbear", "inkmoth", "jadeviper",
    "kelpwolf", "lumenbat", "mossboar", "nettlefox", "opalcrane", "pinewhale", "quartzant", "reedyak",
]


def write_documents(folder: Path, sessions: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(sessions):
        animal = ANIMALS[i % len(ANIMALS)] + ("" if i < len(ANIMALS) else str(i))
        (folder / f"{animal}.md").write_text(
            f"# The {animal}\n\nThe {animal} eats {i + 3} kinds of berries and sleeps in river caves.\n",
            encoding="utf-8",
        )


@contextlib.contextmanager
def docqa_server(docs: Path, data: Path, env_extra: dict[str, str] | None = None, start_s: float = 300) -> Iterator[str]:
    """`python main.py serve` on a free loopback port; stopped on exit."""
    port = free_port()
    env = {**os.environ, "DOCS_DIR": str(docs), "DB_DIR": str(data), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1", "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    url = f"http://127.0.0.1:{port}/"
    with running([sys.executable, str(ROOT / "main.py"), "serve"], url, data.parent / "load-server.log", env, ROOT, start_s):
        wait_until_indexed(url, start_s)
        yield url


def one_session(url: str, animal: str) -> dict:
    """Ask about one animal through the REST /api/ask endpoint; check that its sources are its own.

    The UI's Gradio /ask endpoint returns the chat only; the REST answer lists its sources as data,
    in the order the page shows them."""
    import urllib.request

    started = time.perf_counter()
    try:
        body = json.dumps({"question": f"What does the {animal} eat?"}).encode()
        request = urllib.request.Request(f"{url.rstrip('/')}/api/ask", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as reply:
            result = json.load(reply)
        cited = list(dict.fromkeys(s["source"] for s in result.get("sources", []) if not s.get("weak")))
        own = f"{animal}.md"
        return {
            "animal": animal, "ok": bool(cited) and cited[0] == own,
            "foreign": [c for c in cited if c != own][:3],
            "cited": cited[:3], "seconds": time.perf_counter() - started, "error": None if cited else f"no sources in {result!r}"[:300],
        }
    except Exception as exc:
        return {"animal": animal, "ok": False, "foreign": [], "cited": [], "seconds": time.perf_counter() - started, "error": repr(exc)[:300]}


def run_load(url: str, sessions: int) -> dict:
    animals = [ANIMALS[i % len(ANIMALS)] + ("" if i < len(ANIMALS) else str(i)) for i in range(sessions)]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=sessions) as pool:
        results = list(pool.map(lambda a: one_session(url, a), animals))
    wall = time.perf_counter() - started
    seconds = sorted(r["seconds"] for r in results)

    def pct(q: float) -> float:
        return round(seconds[min(len(seconds) - 1, int(q * len(seconds)))], 2)

    return {
        "sessions": sessions, "answered": sum(r["error"] is None for r in results),
        "own_sources_first": sum(r["ok"] for r in results),
        "foreign_sources_first": sum(bool(r["cited"]) and not r["ok"] for r in results),
        "failed": [r for r in results if r["error"]], "p50_s": pct(0.5), "p95_s": pct(0.95), "wall_s": round(wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--url", help="an already running docqa (loopback only)")
    args = parser.parse_args()
    if args.url:
        result = run_load(args.url, args.sessions)
    else:
        with tempfile.TemporaryDirectory(prefix="docqa-load-") as tmp:
            docs, data = Path(tmp) / "docs", Path(tmp) / "data"
            write_documents(docs, args.sessions)
            env = {"LLM_BACKEND": "llamacpp", "LLM_MAX_TOKENS": "16", "RATE_LIMIT_PER_MINUTE": "0"}
            with docqa_server(docs, data, env) as url:
                result = run_load(url, args.sessions)
    print(f"{'sessions':>9}{'answered':>10}{'own first':>11}{'p50 s':>8}{'p95 s':>8}{'wall s':>8}")
    print(f"{result['sessions']:>9}{result['answered']:>10}{result['own_sources_first']:>11}{result['p50_s']:>8}{result['p95_s']:>8}{result['wall_s']:>8}")
    for failure in result["failed"][:5]:
        print("failed:", failure["animal"], failure["error"])
    print(json.dumps({"bench": "load", **{k: v for k, v in result.items() if k != "failed"}, "failures": len(result["failed"])}))
    return 0 if not result["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
