"""The llama.cpp build flags: this CPU's vector units, never AMX, portable where they are unknown."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from llama_flags import PORTABLE, cmake_args, cpu_flags  # noqa: E402

SAPPHIRE_RAPIDS = set("fpu sse2 avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl avx512_vnni avx512vbmi avx512_bf16 avx_vnni amx_tile amx_int8 amx_bf16".split())
HASWELL = set("fpu sse2 avx avx2 fma f16c".split())


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 flags")
def test_avx512_and_vnni_are_used_where_the_cpu_has_them_and_amx_never() -> None:
    args = cmake_args(SAPPHIRE_RAPIDS)
    assert {"-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX_VNNI=ON", "-DGGML_AVX2=ON"} <= set(args)
    assert "-DGGML_NATIVE=OFF" in args and not any("AMX" in a and a.endswith("=ON") for a in args)
    assert {"-DGGML_AMX_INT8=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_BF16=OFF"} <= set(args)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 flags")
def test_a_cpu_without_avx512_gets_no_avx512_and_an_unknown_one_the_portable_build() -> None:
    assert not any("AVX512" in a for a in cmake_args(HASWELL)) and "-DGGML_AVX2=ON" in cmake_args(HASWELL)
    assert cmake_args(set()) == PORTABLE
    assert cmake_args(SAPPHIRE_RAPIDS, "portable") == PORTABLE


def test_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t\t: other\n")
    assert cpu_flags(info) == {"fpu", "avx2", "fma"}
    assert cpu_flags(tmp_path / "missing") == set()
