"""Embedded models by short name; split models joined from their part packages and verified."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from errors import BackendUnavailable
from gguf_models import MODELS, join_parts, model_file, model_named, part_files


def fake_model(tmp_path: Path, pieces: list[bytes]) -> tuple[object, list[Path]]:
    parts = []
    for n, data in enumerate(pieces, start=1):
        part = tmp_path / f"part{n:02}.bin"
        part.write_bytes(data)
        parts.append(part)
    whole = b"".join(pieces)
    model = dataclasses.replace(
        MODELS["qwen2.5-coder-0.5b"], name="fake", file_name="fake.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest()
    )
    return model, parts


def test_parts_are_joined_in_order_when_size_and_hash_are_the_official_ones(tmp_path):
    model, parts = fake_model(tmp_path, [b"GGUF-head-", b"middle-", b"tail"])
    joined = join_parts(model, parts, tmp_path / "cache" / "fake.gguf")
    assert joined.read_bytes() == b"GGUF-head-middle-tail"


def test_a_tampered_part_is_refused_and_nothing_is_kept(tmp_path):
    model, parts = fake_model(tmp_path, [b"GGUF-head-", b"middle-", b"tail"])
    parts[1].write_bytes(b"MIDDLE-")  # same size, other bytes
    target = tmp_path / "cache" / "fake.gguf"
    with pytest.raises(BackendUnavailable, match="not the official file"):
        join_parts(model, parts, target)
    assert not target.exists()
    assert not list(target.parent.iterdir()), "no temporary file left behind"


def test_missing_part_packages_say_how_to_install_them():
    model = dataclasses.replace(MODELS["qwen2.5-coder-0.5b"], parts=("docqa-no-such-part1", "docqa-no-such-part2"))
    with pytest.raises(BackendUnavailable, match=r"2 of 2 parts missing.*make setup"):
        part_files(model)


def test_an_unknown_short_name_lists_the_known_ones():
    with pytest.raises(BackendUnavailable, match="qwen2.5-coder-0.5b.*LLAMACPP_MODEL_PATH"):
        model_named("gpt-5")


def test_the_installed_default_model_is_found_through_its_packages_and_verified(tmp_path):
    model = MODELS["qwen2.5-coder-0.5b"]
    parts = part_files(model)
    assert len(parts) == 6 and all(p.name.endswith(".bin") for p in parts)
    assert sum(p.stat().st_size for p in parts) == model.size
    path = model_file(model, Path.home() / ".cache" / "docqa")
    assert path.stat().st_size == model.size
    assert path.with_name(path.name + ".verified").is_file()


def test_a_file_changed_after_verification_is_joined_and_checked_again(tmp_path):
    model, parts = fake_model(tmp_path, [b"GGUF-", b"data"])
    cache = tmp_path / "cache"
    target = cache / "models" / model.file_name
    join_parts(model, parts, target)
    target.write_bytes(b"GGUF-evil")  # the marker no longer fits
    from gguf_models import _already_verified

    assert not _already_verified(model, target)


def test_the_set_up_check_knows_the_default_models_file():
    """scripts/preflight.py runs before the venv exists and names the file itself: it must stay the default's."""
    from config import Settings
    from scripts.preflight import DEFAULT_MODEL_FILE

    assert MODELS[Settings().llamacpp_model].file_name == DEFAULT_MODEL_FILE
