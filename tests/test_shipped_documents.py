"""The shipped documents say what docqa does: the configuration reference's defaults are config.py's.

Reads the real files in documents/ with python-docx, and builds fresh ones with
scripts/make_documents.py in a temp folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from config import Settings
from conftest import ROOT
from scripts import make_documents

SHIPPED = ROOT / "documents"


def table_rows(path: Path) -> dict[str, str]:
    """Variable -> Default, from the configuration reference's table."""
    import docx

    (table,) = docx.Document(str(path)).tables
    rows = [[cell.text for cell in row.cells] for row in table.rows]
    assert rows[0] == ["Variable", "Default", "Meaning"]
    return {name: default for name, default, _ in rows[1:]}


def as_config_value(name: str, shown: str, default: object) -> object:
    """A default as the table writes it, read back as config.py's type."""
    if shown.startswith("(empty"):
        return ""
    if isinstance(default, Path):
        return Path(shown)
    return type(default)(shown)


def test_every_default_in_the_configuration_reference_is_configs_default():
    defaults = Settings()
    rows = table_rows(SHIPPED / make_documents.CONFIGURATION)
    assert list(rows) == [name for name, _ in make_documents.CONFIG_ROWS]
    for name, shown in rows.items():
        default = getattr(defaults, name.lower())
        assert as_config_value(name, shown, default) == default, f"{name}: the document says {shown}, config.py {default}"
    # What the example questions' answers rest on (tests/test_answers.py) still stands.
    assert rows["CHUNK_SIZE"] == "1000" and rows["TOP_K"] == "5" and rows["MAX_FILE_MB"] == "10"


@pytest.mark.parametrize("name", [make_documents.CONFIGURATION, make_documents.USER_GUIDE, make_documents.FAQ])
def test_the_shipped_documents_are_what_the_script_makes_now(tmp_path, name):
    """A changed default (or text) without `make documents` leaves a stale shipped file: this fails then."""
    make_documents.build_all(tmp_path)
    assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), "run `.venv/bin/python scripts/make_documents.py`"
    assert make_documents.check_outputs(tmp_path) == []
