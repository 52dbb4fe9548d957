"""Regenerate docs/settings.md from config.py, so the settings reference lists every setting with its
default and meaning, and can never disagree with the code (tests/test_readme.py checks it is current).

    python scripts/write_settings_doc.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config import SETTING_FIELDS, Settings, env_name  # noqa: E402

OUT = ROOT / "docs" / "settings.md"

HEADER = """\
# Settings

Generated from `config.py` by `python scripts/write_settings_doc.py` (do not edit by hand;
`tests/test_readme.py` fails when it is out of date). `.env.example` lists the same settings.

Every setting has a default, so docqa needs no configuration. Precedence, lowest first: the
defaults below, `~/.config/docqa/.env` (under `$XDG_CONFIG_HOME`), the project's `.env` (or the
file named by `DOCQA_ENV_FILE`), environment variables, command-line flags. `python main.py config`
prints every setting's value and where it came from. Changing a chunking or embedding setting
rebuilds the index on the next start.

| variable | default | what it does |
| --- | --- | --- |
"""


def shown_default(value: object) -> str:
    """A default as it would be written in `.env`; the defaults name no machine's paths, so the page is the same everywhere."""
    if isinstance(value, list):
        text = json.dumps(value)
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    else:
        text = str(value)
    return f"`{text}`" if text else "(empty)"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    defaults = Settings()
    rows = [
        f"| `{env_name(f.name)}` | {cell(shown_default(getattr(defaults, f.name)))} | {cell(f.metadata['doc'])} |"
        for f in SETTING_FIELDS
    ]
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
