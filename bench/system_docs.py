"""Questions on documents no rule was written for: four manuals this Debian machine ships.

    .venv/bin/python bench/system_docs.py [--out /tmp/system-docs] [--answers] [--json]

The shipped documents and Think Python are the sets docqa's rules were written against. This
set is the check that they hold elsewhere: four real documents of other kinds, found in
/usr/share/doc on a machine of the project's kind (packages zlib1g-dev, base-passwd,
shared-mime-info and nodejs), and bench/system_docs.jsonl, 25 questions written from them
(3 with no answer in them). The files are copied into `--out`/docs (the indexer refuses
symlinks) and `main.py eval --qa` runs on them; without one of the files it says which package
to install and stops. Add questions here only from the documents, never from an answer seen.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "bench" / "system_docs.jsonl"
FILES = {
    "/usr/share/doc/zlib1g-dev/examples/zlib_how.html": "zlib1g-dev",
    "/usr/share/doc/base-passwd/users-and-groups.html": "base-passwd",
    "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf": "shared-mime-info",
    "/usr/share/doc/nodejs/api/dgram.md": "nodejs",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/system-docs"), help="folder for the copies and the index")
    parser.add_argument("--answers", action="store_true", help="also generate and score answers")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    missing = [f"{path} (apt-get install {package})" for path, package in FILES.items() if not Path(path).is_file()]
    if missing:
        print("Missing: " + "; ".join(missing), file=sys.stderr)
        return 2
    docs = args.out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for path in FILES:
        shutil.copyfile(path, docs / Path(path).name)
    command = [sys.executable, str(ROOT / "main.py"), "eval", "--qa", str(QUESTIONS), "--docs", str(docs), "--db", str(args.out / "data")]
    command += ["--answers"] * args.answers + ["--json"] * args.json
    return subprocess.call(command, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
