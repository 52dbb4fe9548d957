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
CPU, and a CPU this cannot read (not Linux, not x86) gets it too. Standard library only:
it runs before the virtual environment exists.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

PORTABLE = ["-DGGML_NATIVE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_BF16=OFF"]
AVX2 = ["-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
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


def cmake_args(flags: set[str], mode: str = "auto") -> list[str]:
    """The flags for a CPU with these features: portable unless it has AVX2 and FMA, never AMX."""
    if mode == "portable" or platform.machine().lower() not in ("x86_64", "amd64") or not {"avx2", "fma", "f16c"} <= flags:
        return list(PORTABLE)
    args = PORTABLE + AVX2
    for needed, options in UNITS:
        if needed <= flags:
            args += options
    return args


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "auto"
    if mode not in ("auto", "portable"):
        sys.exit(f"LLAMA_CPU must be auto or portable, not {mode!r}")
    print(" ".join(cmake_args(cpu_flags(), mode)))
