"""The README stays a page people read: the two commands, short, every link going somewhere, and the
figures it shares with the code (Python versions, disk) the code's own; docs/settings.md is config.py's.

Reads the real README.md, docs/*.md, the shipped user guide's source text and the set-up scripts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import preflight  # noqa: E402
import write_settings_doc  # noqa: E402
from choose_python import SUPPORTED  # noqa: E402
from make_documents import GUIDE_PAGES  # noqa: E402

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def links(page: Path) -> list[str]:
    """The link targets of a Markdown page, outside code blocks."""
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub makes for a page: lower case, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    headings = re.findall(r"^#+\s+(.+?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def python_versions(text: str) -> set[tuple[int, int]]:
    """Every 3.x version a text names, as (3, x)."""
    return {(3, int(minor)) for minor in re.findall(r"\b3\.(1\d)\b", text)}


def test_readme_gives_the_two_commands_and_stays_short():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move details to docs/"
    commands = "\n".join(FENCE.findall(text))
    assert re.search(r"^make run\b", commands, re.M) and re.search(r"^make test\b", commands, re.M)
    assert "make run" in "\n".join(lines[:40]), "the commands belong on the first screen"


def minutes(cell: str) -> tuple[float, float]:
    """'about 10 min', '2–5 min', 'about 30 s' as (fewest, most) minutes."""
    low, _, high = re.search(r"(\d+(?:–\d+)?) (min|s)\b", cell).group(1).partition("–")
    unit = 1 if re.search(r"\d (min)\b", cell) else 1 / 60
    return float(low) * unit, float(high or low) * unit


def test_readme_first_run_total_is_the_sum_of_its_steps():
    table, total = README.read_text(encoding="utf-8").split("| `make run`, the first time | time |", 1)[1].split("**total**", 1)
    steps: list[list[tuple[float, float]]] = []  # each step's ways: a row opening "…" is another way through the one above
    for line in table.splitlines():
        cells = line.strip().strip("|").split("|")
        if len(cells) == 2 and not cells[0].startswith("-"):
            if not cells[0].strip().startswith("…"):
                steps.append([])
            steps[-1].append(minutes(cells[1]))
    sums = [(0.0, 0.0)]
    for ways in steps:
        sums = [(low + a, high + b) for low, high in sums for a, b in ways]
    stated = re.findall(r"(\d+)–(\d+) min", total.splitlines()[0])
    assert [(int(a), int(b)) for a, b in stated] == [(round(a), round(b)) for a, b in sums]


def test_every_relative_link_in_the_readme_and_docs_reaches_a_file_and_heading():
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_readme_and_user_guide_name_the_python_versions_setup_accepts():
    guide = " ".join(text for page in GUIDE_PAGES for _, text in page)
    assert "Python 3.11, 3.12 or 3.13" in guide
    assert python_versions(guide) == set(SUPPORTED)
    readme = README.read_text(encoding="utf-8")
    assert python_versions(readme.split("### The first-run time")[0]) == set(SUPPORTED)


def test_readme_disk_figures_are_what_the_preflight_check_asks_for():
    readme = README.read_text(encoding="utf-8")
    shared = preflight.MODEL_GB + preflight.BUILD_GB
    for torch in ("cuda", "cpu"):
        need = preflight.VENV_GB[torch] + preflight.DOWNLOADS_GB[torch] + shared
        assert f"{need:.1f} GB" in readme, f"the README's disk need with torch's {torch} build should be {need:.1f} GB"
    nothing_compiled = preflight.VENV_GB["cuda"] + preflight.DOWNLOADS_GB["cuda"] + preflight.MODEL_GB
    assert f"{nothing_compiled:.1f} GB" in readme


def test_settings_reference_is_generated_from_config():
    shown = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert shown == write_settings_doc.render(), "run `.venv/bin/python scripts/write_settings_doc.py`"
    for name in ("CHUNK_SIZE", "TOP_K", "LLM_BACKEND", "DOCQA_API_KEYS"):
        assert f"| `{name}` |" in shown
