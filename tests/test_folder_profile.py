"""`python main.py analyze`: what a folder holds, and chunking settings that suit it.

A small real folder: markdown with short sections, Python and Go code, a file over the
size limit and a picture. The profile runs the real conversion workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import main
from folder_profile import FolderProfile, format_profile, profile_folder

GO = """package main

// Add returns the sum.
func Add(a, b int) int {
	return a + b
}
"""


def python_module(functions: int) -> str:
    return "import os\n\n\n" + "\n\n".join(
        f"def step_{n}(value):\n    '''Step {n}.'''\n" + "".join(f"    value = value + {m}\n" for m in range(n % 7 + 2)) + "    return value\n"
        for n in range(functions)
    )


@pytest.fixture
def folder(make_settings) -> tuple[Path, object]:
    settings = make_settings(max_file_mb=1, convert_workers=1)
    docs = settings.docs_dir
    sections = "\n\n".join(f"## Topic {n}\n\n" + "Short notes about the topic. " * (3 + n % 4) for n in range(12))
    (docs / "guide.md").write_text(f"# Guide\n\n{sections}\n", encoding="utf-8")
    (docs / "src").mkdir()
    (docs / "src" / "steps.py").write_text(python_module(20), encoding="utf-8")
    (docs / "src" / "add.go").write_text(GO, encoding="utf-8")
    (docs / "song.mp3").write_bytes(b"ID3\x04")
    with open(docs / "big.txt", "wb") as fh:
        fh.truncate(2 * 1000 * 1000)
    (docs / "node_modules").mkdir()
    (docs / "node_modules" / "lib.js").write_text("module.exports = 1;\n", encoding="utf-8")
    return docs, settings


def test_profile_counts_types_languages_and_skipped_files(folder):
    docs, settings = folder
    profile = profile_folder(settings)
    assert profile.files == 3
    assert profile.by_type["code"]["files"] == 2 and profile.by_type["markdown"]["files"] == 1
    assert profile.by_extension == {"py": 1, "md": 1, "go": 1}
    assert profile.languages["python"]["files"] == 1 and profile.languages["go"]["files"] == 1
    assert profile.languages["python"]["lines"] == (docs / "src" / "steps.py").read_text().count("\n") + 1
    assert profile.skipped["song.mp3"] == "unsupported file type .mp3"
    assert "larger than the 1 MB limit" in profile.skipped["big.txt"]
    assert profile.ignored == 1  # node_modules
    assert profile.sampled == 3 and profile.failed == {}


def test_profile_measures_sections_and_functions(folder):
    _, settings = folder
    profile = profile_folder(settings)
    assert profile.sections.count == 13  # the title and twelve topics
    assert 80 < profile.sections.median < 200 and profile.sections.median <= profile.sections.p90
    assert profile.functions.count == 21  # twenty Python steps and one Go function
    assert 60 < profile.functions.median < 250 and 4 <= profile.function_lines_median <= 11


def test_recommendations_follow_the_measurements_and_read_as_env_lines(folder):
    _, settings = folder
    profile = profile_folder(settings)
    size = profile.recommended["CHUNK_SIZE"]
    assert 400 <= size <= 1200 and size >= profile.sections.p75 - 50
    assert profile.recommended["CHUNK_OVERLAP"] < size
    assert profile.recommended["CODE_CHUNK_SIZE"] >= profile.functions.p90
    assert profile.env_lines() == [f"{k}={v}" for k, v in profile.recommended.items()]
    report = format_profile(profile, settings)
    assert f"CHUNK_SIZE={size}" in report and "now 1000" in report and "song.mp3: unsupported" in report


def test_an_empty_folder_recommends_nothing(make_settings):
    settings = make_settings()
    profile = profile_folder(settings)
    assert profile.files == 0 and profile.recommended == {}
    assert "nothing to measure" in format_profile(profile, settings)


def test_analyze_command_prints_json(folder, capsys):
    docs, _ = folder
    assert main.main(["analyze", "--docs", str(docs), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(FolderProfile.__dataclass_fields__) <= set(out)
    assert out["files"] == 3
    assert "binary" in out["skipped"]["big.txt"]  # under the default 10 MB limit its content is checked: all NUL bytes
    assert "CODE_CHUNK_SIZE" in out["recommended"]


def test_analyze_command_says_how_to_fix_a_missing_folder(tmp_path, capsys):
    assert main.main(["analyze", "--docs", str(tmp_path / "nowhere")]) == 2
    assert "--docs DIR" in capsys.readouterr().err
