"""`make setup` on the machines people have: which Python, what is checked first, what each step says."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from choose_python import NONE_FITS, NoPythonError, choose  # noqa: E402
from llama_flags import PORTABLE, cmake_args, cpu_flags, llama_step  # noqa: E402
from preflight import check_disk, index_answers, pip_index, run  # noqa: E402

SAPPHIRE_RAPIDS = set("avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl avx512_vnni avx_vnni amx_tile amx_int8 amx_bf16".split())


def fake_pythons(folder: Path, **versions: str) -> str:
    """Executables named python3.11 etc. that print what the probe prints: major, minor, has ensurepip.

    `exit` as the version makes one fail the way a pyenv shim for an unselected version does.
    """
    folder.mkdir(exist_ok=True)
    for name, version in versions.items():
        script = folder / name.replace("_", ".")
        body = "echo 'pyenv: command not found' >&2; exit 127" if version == "exit" else f"echo '{version}'"
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    return str(folder)


def test_python311_is_chosen_when_present(tmp_path: Path) -> None:
    path = fake_pythons(tmp_path, python3_11="3 11 1", python3_12="3 12 1", python3_13="3 13 1", python3="3 12 1")
    assert choose(path=path) == str(tmp_path / "python3.11")


def test_without_311_the_newest_of_313_and_312_is_chosen(tmp_path: Path) -> None:
    assert choose(path=fake_pythons(tmp_path, python3_12="3 12 1", python3_13="3 13 1")) == str(tmp_path / "python3.13")
    (tmp_path / "python3.13").unlink()
    assert choose(path=str(tmp_path)) == str(tmp_path / "python3.12")


def test_a_python311_that_does_not_run_is_passed_over(tmp_path: Path) -> None:
    assert choose(path=fake_pythons(tmp_path, python3_11="exit", python3_12="3 12 1")) == str(tmp_path / "python3.12")


def test_python3_is_used_only_when_it_is_311_to_313(tmp_path: Path) -> None:
    assert choose(path=fake_pythons(tmp_path, python3="3 13 1")) == str(tmp_path / "python3")
    fake_pythons(tmp_path, python3="3 10 1")
    with pytest.raises(NoPythonError) as raised:
        choose(path=str(tmp_path))
    assert str(raised.value) == NONE_FITS
    assert "Python 3.11, 3.12 or 3.13" in NONE_FITS and "make PYTHON=" in NONE_FITS


def test_a_python_without_venv_support_says_which_package_to_install(tmp_path: Path) -> None:
    with pytest.raises(NoPythonError, match=r"apt install python3\.12-venv"):
        choose(path=fake_pythons(tmp_path, python3_12="3 12 0"))


def test_make_python_overrides_the_choice_but_must_run_and_be_311_or_newer(tmp_path: Path) -> None:
    path = fake_pythons(tmp_path, python3_11="3 11 1", python3_14="3 14 0", python3_10="3 10 1")
    assert choose("python3.14", path=path) == str(tmp_path / "python3.14")
    with pytest.raises(NoPythonError, match=r"PYTHON=python3\.10 is Python 3\.10"):
        choose("python3.10", path=path)
    with pytest.raises(NoPythonError, match="does not run"):
        choose(str(tmp_path / "missing"), path=path)


def test_make_python_naming_an_unselected_pyenv_shim_says_which_interpreter_to_give(tmp_path: Path) -> None:
    shims = fake_pythons(tmp_path / "shims", python3_12="exit")  # pyenv's shim for a version not selected
    (tmp_path / "versions" / "3.12.1").mkdir(parents=True)
    real = Path(fake_pythons(tmp_path / "versions" / "3.12.1" / "bin", python3_12="3 12 1")) / "python3.12"
    with pytest.raises(NoPythonError, match=rf"pyenv shim .* make PYTHON={real}$"):
        choose("python3.12", path=shims)
    assert choose(str(real), path=shims) == str(real)


def test_no_fitting_python_is_one_line_and_exit_1(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "choose_python.py")],
        env={"PATH": fake_pythons(tmp_path, python3="3 9 0")},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == NONE_FITS


def roomy(_folder: Path) -> float:
    """A disk with room for any set-up, so these tests do not depend on the free space of the machine they run on."""
    return 1000.0


def no_network(tmp_path: Path, path: str) -> dict[str, str]:
    """An environment for the pre-flight check: this PATH, a home of its own and a local package index."""
    (tmp_path / "index").mkdir(exist_ok=True)
    return {"PATH": path, "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "PIP_INDEX_URL": (tmp_path / "index").as_uri()}


def test_preflight_names_the_missing_compiler_and_cmake_and_how_to_install_them(tmp_path: Path) -> None:
    environ = no_network(tmp_path, fake_pythons(tmp_path / "bin", python3_11="3 11 1"))
    report = run("build", tmp_path / ".venv", tmp_path / "cache", environ=environ, system="Linux", free_on=roomy)
    [line] = report.missing
    assert "a C compiler (cc, gcc or clang)" in line and "a C++ compiler (c++, g++ or clang++)" in line
    assert "CMake" in line and "apt install build-essential cmake" in line
    mac = run("build", tmp_path / ".venv", tmp_path / "cache", environ=environ, system="Darwin", free_on=roomy)
    assert "xcode-select --install" in mac.missing[0] and "brew install cmake" in mac.missing[0]


def test_preflight_asks_for_no_compiler_when_nothing_will_be_compiled(tmp_path: Path) -> None:
    environ = no_network(tmp_path, fake_pythons(tmp_path / "bin", python3_11="3 11 1"))
    for step in ("install", "installed"):
        report = run(step, tmp_path / ".venv", tmp_path / "cache", environ=environ, system="Linux", free_on=roomy)
        assert report.missing == [], report.missing


def test_preflight_command_reports_everything_missing_at_once_and_exits_1(tmp_path: Path) -> None:
    environ = no_network(tmp_path, fake_pythons(tmp_path / "bin", python3="3 10 1"))
    environ["PIP_INDEX_URL"] = "http://127.0.0.1:9/simple"  # nothing listens there
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "preflight.py"), "--llama-step", "build", "--venv", str(tmp_path / ".venv")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    for needed in ("Python 3.11, 3.12 or 3.13", "C compiler", "CMake", "apt install build-essential cmake", "http://127.0.0.1:9/simple"):
        assert needed in proc.stderr


def test_too_little_disk_says_how_much_is_needed(tmp_path: Path) -> None:
    environ = no_network(tmp_path, fake_pythons(tmp_path / "bin", python3_11="3 11 1"))
    report = run("install", tmp_path / ".venv", tmp_path / "cache", environ=environ, free_on=roomy)
    assert report.missing == [] and any("GB free" in found for found in report.found)
    tight = run("install", tmp_path / ".venv", tmp_path / "cache", environ=environ, system="Linux", machine="x86_64", free_on=lambda _folder: 12.4)
    [line] = tight.missing
    assert line.startswith("Only 12.4 GB free") and "needs about 14.5 GB" in line and "free some space" in line
    from preflight import Report

    enough, short = Report(), Report()  # the real disk: room for a byte, none for a petabyte
    check_disk(enough, [(tmp_path, 1e-9, "the venv")])
    assert enough.missing == [] and "GB free" in enough.found[0]
    check_disk(short, [(tmp_path, 1e6, "the venv"), (tmp_path / "cache", 1.0, "the model")])  # one disk: summed
    [line] = short.missing
    assert "needs about 1000001.0 GB" in line and "the venv 1000000.0 GB, the model 1.0 GB" in line and "free some space" in line


def test_the_disk_needed_counts_the_cuda_torch_pypi_serves_on_linux_x86_64(tmp_path: Path) -> None:
    from preflight import DOWNLOADS_GB, MODEL_GB, VENV_GB, torch_build

    assert torch_build("Linux", "x86_64") == "cuda"
    assert torch_build("Darwin", "arm64") == torch_build("Linux", "aarch64") == "cpu"
    environ = no_network(tmp_path, fake_pythons(tmp_path / "bin", python3_11="3 11 1"))
    for system, machine, torch in (("Linux", "x86_64", "cuda"), ("Darwin", "arm64", "cpu")):
        report = run("install", tmp_path / ".venv", tmp_path / "cache", environ=environ, system=system, machine=machine, free_on=roomy)
        assert f"(needs {VENV_GB[torch] + MODEL_GB + DOWNLOADS_GB[torch]:.1f} GB)" in " ".join(report.found)


def test_the_package_index_is_read_from_pip_config_and_env(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple\n")
    assert pip_index({"HOME": str(tmp_path), "PIP_CONFIG_FILE": str(conf)}, tmp_path / ".venv") == "https://mirror.example/simple"
    assert pip_index({"HOME": str(tmp_path), "PIP_INDEX_URL": "https://other.example/simple"}, tmp_path) == "https://other.example/simple"
    assert pip_index({"HOME": str(tmp_path), "PIP_NO_INDEX": "1"}, tmp_path) is None
    assert index_answers(tmp_path.as_uri()) and not index_answers((tmp_path / "missing").as_uri())
    assert not index_answers("http://127.0.0.1:9/simple", timeout=2)


def test_apple_silicon_gets_no_x86_flag_at_all_and_so_the_metal_default() -> None:
    for mode in ("auto", "portable"):
        assert cmake_args(SAPPHIRE_RAPIDS, mode, system="Darwin", machine="arm64") == []
    assert cmake_args(set(), system="Linux", machine="aarch64") == PORTABLE  # other ARM: portable, as before


def test_apple_silicon_flags_through_the_real_platform_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_flags

    monkeypatch.setattr(llama_flags.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(llama_flags.platform, "machine", lambda: "arm64")
    assert llama_flags.cmake_args(SAPPHIRE_RAPIDS) == []


def test_llama_step_builds_only_when_no_wheel_with_these_flags_exists(tmp_path: Path) -> None:
    venv, wheels = tmp_path / ".venv", tmp_path / "wheels"
    stamp = venv / ".docqa-llama-flags"
    wheels.mkdir()
    assert llama_step("0.3.36", "-DX=ON", wheels, stamp) == "build"
    (wheels / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl").write_bytes(b"")
    assert llama_step("0.3.36", "-DX=ON", wheels, stamp) == "install"
    (venv / "lib" / "python3.12" / "site-packages" / "llama_cpp_python-0.3.36.dist-info").mkdir(parents=True)
    stamp.write_text("-DX=ON\n")
    assert llama_step("0.3.36", "-DX=ON", wheels, stamp) == "installed"
    assert llama_step("0.3.36", "-DX=OFF", wheels, stamp) == "install"  # other flags: reinstall
    assert llama_step("0.3.37", "-DX=ON", tmp_path / "none", stamp) == "build"


@pytest.fixture
def fake_checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The Makefile and scripts beside a venv whose pip and python only echo, llama.cpp installed."""
    if not shutil.which("make"):
        pytest.skip("needs make")
    for name in ("Makefile", "requirements.txt", "scripts"):
        (shutil.copytree if name == "scripts" else shutil.copy)(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("pip", "python"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "fake {tool} $*"\n')
        (bin_dir / tool).chmod(0o755)
    (tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "llama_cpp_python-0.3.36.dist-info").mkdir(parents=True)
    (tmp_path / ".venv" / ".docqa-llama-flags").write_text(" ".join(cmake_args(cpu_flags(), "auto")) + "\n")
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "python3").symlink_to(Path(sys.executable).resolve())  # a real one, not a pyenv shim
    return tmp_path, no_network(tmp_path, f"{tmp_path / 'python'}:/usr/local/bin:/usr/bin:/bin")


def test_setup_announces_each_long_step_and_a_rerun_does_nothing_and_says_so(fake_checkout: tuple[Path, dict[str, str]]) -> None:
    checkout, environ = fake_checkout
    first = subprocess.run(["make", "setup"], cwd=checkout, env=environ, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    steps = ["Pre-flight:", "Installing requirements.txt, about 2-5 minutes", "Preparing the models", "about 30 s", "Smoke check", "docqa is set up."]
    assert [out.index(step) for step in steps] == sorted(out.index(step) for step in steps)
    assert out.index("Installing requirements.txt") < out.index("fake pip install --quiet -r requirements.txt")
    assert "Building llama-cpp-python" not in out  # installed with these flags already

    started = time.perf_counter()
    again = subprocess.run(["make", "setup"], cwd=checkout, env=environ, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == "docqa is set up (nothing to do)."
    assert time.perf_counter() - started < 5


def test_the_llama_build_is_announced_and_stopped_before_it_starts_when_tools_are_missing(
    fake_checkout: tuple[Path, dict[str, str]],
) -> None:
    checkout, environ = fake_checkout
    shutil.rmtree(checkout / ".venv" / "lib")  # llama-cpp-python not installed, and no wheel in this HOME
    tools = checkout / "tools"
    tools.mkdir()
    (tools / "python3").symlink_to(Path(sys.executable).resolve())  # a real one, not a pyenv shim
    for name in ("make", "sh", "sha256sum", "cut", "cat", "mkdir", "rm", "touch", "test"):
        if found := shutil.which(name):
            (tools / name).symlink_to(found)
    missing = subprocess.run(["make", "setup"], cwd=checkout, env={**environ, "PATH": str(tools)}, capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0
    assert "C compiler" in missing.stderr and "CMake" in missing.stderr and "apt install build-essential cmake" in missing.stderr
    assert "Building" not in missing.stdout and "fake pip" not in missing.stdout  # nothing started

    for name in ("cc", "c++", "cmake"):  # stand-ins: the fake pip compiles nothing
        (tools / name).symlink_to(shutil.which("true") or "/bin/true")
    built = subprocess.run(["make", "setup"], cwd=checkout, env={**environ, "PATH": str(tools)}, capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stdout + built.stderr
    out = built.stdout
    assert out.index("Pre-flight: C/C++ compilers and CMake") < out.index("about 10 minutes on 2 cores") < out.index("fake pip wheel")
    assert out.index("fake pip wheel") < out.index("Installing llama-cpp-python") < out.index("Installing requirements.txt")
