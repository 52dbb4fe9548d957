"""Regenerate .env.example from config.py, so it documents every setting with its default."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config import SETTING_FIELDS, Settings, env_name  # noqa: E402


def render() -> str:
    defaults = Settings()
    lines = [
        "# docqa settings. Copy to .env and uncomment what you change.",
        "# Precedence, lowest first: defaults, ~/.config/docqa/.env, this project's .env,",
        "# environment variables, command-line flags. `python main.py config` shows the result.",
        "",
    ]
    for f in SETTING_FIELDS:
        value = getattr(defaults, f.name)
        shown = json.dumps(value) if isinstance(value, list) else str(value)
        lines.append(f"# {f.metadata['doc']}")
        lines.append(f"# {env_name(f.name)}={shown}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    (ROOT / ".env.example").write_text(render(), encoding="utf-8")
    print("wrote .env.example")
