"""The Python `make setup` builds the virtual environment with: 3.11 (tested), else 3.13 or 3.12, else python3.

    python3 scripts/choose_python.py [PYTHON]

prints the path of the interpreter to use, or exits 1 with one line saying what to install.
PYTHON (`make PYTHON=/path/to/python`) overrides the choice; it must run and be 3.11 or newer.
A name on PATH is tried by running it, not only found: a pyenv shim for a version that is not
selected is on PATH and fails when run; PYTHON naming one gets the path of the interpreter behind
it to use instead. Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PREFERENCE = ["python3.11", "python3.13", "python3.12", "python3"]  # 3.11 is the tested one
SUPPORTED = ((3, 11), (3, 12), (3, 13))
NONE_FITS = (
    "docqa needs Python 3.11, 3.12 or 3.13: install one, e.g. apt install python3.12-venv, "
    "or run make PYTHON=/path/to/python"
)
# Prints the version and whether `python -m venv` can install pip (Debian ships ensurepip apart).
PROBE = "import sys, importlib.util as u; print(*sys.version_info[:2], int(u.find_spec('ensurepip') is not None))"


class NoPythonError(Exception):
    """No interpreter fits; the message says what to install."""


def probe(executable: str) -> tuple[tuple[int, int], bool] | None:
    """(major, minor) and whether it has ensurepip, or None when it does not run."""
    try:
        proc = subprocess.run([executable, "-c", PROBE], capture_output=True, text=True, timeout=20)
        major, minor, has_ensurepip = proc.stdout.split()[:3]
        if proc.returncode == 0:
            return (int(major), int(minor)), has_ensurepip == "1"
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return None


def behind_pyenv_shim(executable: str) -> list[str]:
    """The interpreters a pyenv shim (ROOT/shims/NAME) stands for: ROOT/versions/*/bin/NAME."""
    shim = Path(executable)
    if shim.parent.name != "shims":
        return []
    return sorted(str(p) for p in shim.parent.parent.glob(f"versions/*/bin/{shim.name}") if os.access(p, os.X_OK))


def choose(override: str = "", path: str | None = None) -> str:
    """The interpreter to build the venv with, as a path; raises NoPythonError saying what to install."""
    if override:
        found = shutil.which(override, path=path) or override
        probed = probe(found)
        if probed is None:
            if behind := behind_pyenv_shim(found):
                raise NoPythonError(
                    f"PYTHON={override} is a pyenv shim for a version pyenv has not selected: "
                    f"give the interpreter itself, make PYTHON={behind[-1]}"
                )
            raise NoPythonError(f"PYTHON={override} does not run: {NONE_FITS}")
        if probed[0] < (3, 11):
            raise NoPythonError(f"PYTHON={override} is Python {probed[0][0]}.{probed[0][1]}: {NONE_FITS}")
        return found
    without_venv = []
    for name in PREFERENCE:
        candidate = shutil.which(name, path=path)
        probed = probe(candidate) if candidate else None
        if candidate is None or probed is None or probed[0] not in SUPPORTED:
            continue
        if probed[1]:
            return candidate
        without_venv.append(f"python{probed[0][0]}.{probed[0][1]}")
    if without_venv:
        raise NoPythonError(
            f"{without_venv[0]} cannot create a virtual environment (no ensurepip): "
            f"install it, e.g. apt install {without_venv[0]}-venv, or run make PYTHON=/path/to/python"
        )
    raise NoPythonError(NONE_FITS)


def main(argv: list[str]) -> int:
    try:
        print(choose(argv[0] if argv else "", os.environ.get("PATH")))
    except NoPythonError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
