"""A file that hangs, crashes or exhausts memory in its converter costs that file only."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from converter_workers import ConverterPool, _convert


def misbehaving_convert(path: Path, source: str, cache_dir, sha: str):
    """Runs in the worker: behaves by file name, else converts for real."""
    if "hang" in source:
        time.sleep(600)
    if "crash" in source:
        os.abort()
    if "hog" in source:
        blocks = [bytearray(50 * 1024 * 1024) for _ in range(100)]  # 5 GB, over the limit
        return str(len(blocks)), None
    return _convert(path, source, cache_dir, sha)


@pytest.fixture
def files(tmp_path):
    names = ["good-1.md", "hang.md", "good-2.md", "crash.md", "hog.md", "good-3.md"]
    for n in names:
        (tmp_path / n).write_text(f"# {n}\n\nSome text about {n}.\n", encoding="utf-8")
    return [(n, tmp_path / n, f"sha-{n}") for n in names]


@pytest.mark.slow
def test_hung_crashing_and_memory_hungry_files_are_skipped_and_the_rest_convert(files):
    pool = ConverterPool(workers=2, timeout_s=8, memory_mb=600, convert_fn=misbehaving_convert)
    try:
        results = {source: (doc, error) for source, doc, error in pool.convert(files)}
    finally:
        pool.close()
    assert set(results) == {f[0] for f in files}
    for good in ("good-1.md", "good-2.md", "good-3.md"):
        doc, error = results[good]
        assert error is None and good in doc.markdown
    assert "longer than 8s" in results["hang.md"][1]
    assert "crashed" in results["crash.md"][1]
    assert "memory" in results["hog.md"][1]


def test_real_conversion_errors_come_back_as_reasons(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n garbage")
    (tmp_path / "ok.txt").write_text("hello", encoding="utf-8")
    pool = ConverterPool(workers=1, timeout_s=60)
    try:
        results = {s: (d, e) for s, d, e in pool.convert([("broken.pdf", tmp_path / "broken.pdf", "a"), ("ok.txt", tmp_path / "ok.txt", "b")])}
    finally:
        pool.close()
    assert results["broken.pdf"][0] is None and "PDF" in results["broken.pdf"][1]
    assert results["ok.txt"][0].markdown == "hello"


def test_the_ocr_heartbeat_folder_is_removed_even_without_close():
    import gc

    from ocr import OcrOptions

    pool = ConverterPool(workers=1, ocr=OcrOptions())
    pool._start()
    beats = pool._beats
    assert beats is not None and beats.is_dir()
    del pool
    gc.collect()
    assert not beats.exists()
