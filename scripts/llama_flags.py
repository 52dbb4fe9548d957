"""The CMake flags `make setup` builds llama-cpp-python with: the vector units of this CPU, never AMX.

llama.cpp's native build (`GGML_NATIVE=ON`) enables every unit the CPU reports, AMX
included, and its AMX kernel crashes on the first token on the Sapphire Rapids machines
docqa is tested on. A portable build (`GGML_NATIVE=OFF` alone) runs anywhere but leaves
AVX-512 and VNNI unused, and prompt processing, most of the time to the first token, is
the matrix work they speed up. So the build names the units this CPU has, from
/proc/cpuinfo, and always turns AMX off. The build happens on the machine that runs it
(pip builds from source), so a CPU without AVX-512 gets a build without it.

    python3 scripts/llama_flags.py [auto|portable]

prints the flags; `portable` (make setup LLAMA_CPU=portable) gives the build for any x86-64
CPU, and a CPU this cannot read (not Linux, not x86) gets it too. On Apple Silicon the flags
are empty: llama-cpp-python's default there is the Metal build it recommends, and no x86
option (AMX included) means anything to it.

    python3 scripts/llama_flags.py step VERSION WHEEL_DIR FLAGS_STAMP [FLAGS...]

prints what set-up must do for llama-cpp-python VERSION built with FLAGS: `installed`,
`install` (a wheel built with them is in WHEEL_DIR) or `build`. Standard library only: it
runs before the virtual environment exists.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

PORTABLE = ["-DGGML_NATIVE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_TILE=OFF"]
AVX2 = ["-DGGML_AMX_BF16=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
UNITS = [  # (flags /proc/cpuinfo must list, the CMake options they allow), in a fixed order
    ({"avx_vnni"}, ["-DGGML_AVX_VNNI=ON"]),
    ({"avx512f", "avx512bw", "avx512dq", "avx512vl"}, ["-DGGML_AVX512=ON"]),
    ({"avx512f", "avx512_vnni"}, ["-DGGML_AVX512_VNNI=ON"]),
    ({"avx512f", "avx512vbmi"}, ["-DGGML_AVX512_VBMI=ON"]),
    ({"avx512f", "avx512_bf16"}, ["-DGGML_AVX512_BF16=ON"]),
]


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The first processor's feature flags, or none when they cannot be read."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cmake_args(flags: set[str], mode: str = "auto", *, system: str = "", machine: str = "") -> list[str]:
    """The flags for a CPU with these features: portable unless it has AVX2 and FMA, never AMX; none on Apple Silicon."""
    system, machine = system or platform.system(), (machine or platform.machine()).lower()
    if system == "Darwin" and machine == "arm64":
        return []
    if mode == "portable" or machine not in ("x86_64", "amd64") or not {"avx2", "fma", "f16c"} <= flags:
        return list(PORTABLE)
    args = PORTABLE + AVX2
    for needed, options in UNITS:
        if needed <= flags:
            args += options
    return args


def llama_step(version: str, flags: str, wheel_dir: Path, flags_stamp: Path) -> str:
    """`installed` when VERSION built with FLAGS is in the venv, `install` when such a wheel is cached, else `build`.

    The venv is the folder holding FLAGS_STAMP, written only after an install with these flags.
    """
    venv = flags_stamp.parent
    has_version = any(venv.glob(f"lib/python3*/site-packages/llama_cpp_python-{version}.dist-info"))
    try:
        same_flags = flags_stamp.read_text().strip() == flags.strip()
    except OSError:
        same_flags = False
    if has_version and same_flags:
        return "installed"
    return "install" if any(wheel_dir.glob("llama_cpp_python-*.whl")) else "build"


if __name__ == "__main__":
    if sys.argv[1:2] == ["step"] and len(sys.argv) >= 5:
        print(llama_step(sys.argv[2], " ".join(sys.argv[5:]), Path(sys.argv[3]), Path(sys.argv[4])))
        sys.exit(0)
    mode = sys.argv[1] if len(sys.argv) > 1 else "auto"
    if mode not in ("auto", "portable"):
        sys.exit(f"LLAMA_CPU must be auto or portable, not {mode!r}")
    print(" ".join(cmake_args(cpu_flags(), mode)))
