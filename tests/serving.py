"""Start a server process for a test or benchmark, wait until it answers, stop it afterwards.

Used for `python main.py serve` (browser tests, load benchmark) and `chroma run` (store
contract): one way to pick a port, wait and clean up, with the server's own output in the
error when it does not come up.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path


class ServerDidNotStart(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(log: Path, chars: int = 4000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no output)"


def wait_for(url: str, seconds: float, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    """Until `url` answers; fails early, with the server's output, if the process exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            command = " ".join([Path(str(proc.args[0])).name, *map(str, proc.args[1:3])])
            raise ServerDidNotStart(f"`{command}` exited with {proc.returncode}:\n{log_tail(log) if log else ''}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise ServerDidNotStart(f"nothing answered at {url} within {seconds:g}s:\n{log_tail(log) if log else ''}")


@contextlib.contextmanager
def running(cmd: list[str], url: str, log: Path, env: dict[str, str] | None = None,
            cwd: Path | None = None, start_s: float = 300) -> Iterator[subprocess.Popen]:
    """Run `cmd` (output to `log`) until the block ends; it is ready when `url` answers."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(url, start_s, proc, log)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def wait_until_indexed(base_url: str, seconds: float = 300) -> None:
    """Until docqa's start-up sync has ended: `serve` listens first and indexes behind the page."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/api/status", timeout=30) as reply:
            if json.load(reply)["index"]["state"] in ("idle", "failed"):
                return
        time.sleep(0.5)
    raise ServerDidNotStart(f"the start-up sync at {base_url} did not end within {seconds:g}s")
