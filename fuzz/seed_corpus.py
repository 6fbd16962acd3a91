"""Fill a libFuzzer corpus folder with every fixture file: valid, newer, invalid and events.

Usage: ``python fuzz/seed_corpus.py CORPUS_DIR``. Existing corpus files are kept.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def seed(corpus: Path) -> int:
    """Copy each fixture file into ``corpus`` under its content hash; return how many were new."""
    corpus.mkdir(parents=True, exist_ok=True)
    added = 0
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.stat().st_size > 1_000_000:
            continue
        data = path.read_bytes()
        target = corpus / hashlib.sha1(data).hexdigest()
        if not target.exists():
            target.write_bytes(data)
            added += 1
        # Each line of a JSON Lines file is a seed on its own too (loads_message, parse_event).
        if path.suffix == ".jsonl":
            for line in data.splitlines():
                line_target = corpus / hashlib.sha1(line).hexdigest()
                if line and not line_target.exists():
                    line_target.write_bytes(line)
                    added += 1
    return added


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python fuzz/seed_corpus.py CORPUS_DIR")
    print(f"added {seed(Path(sys.argv[1]))} seed files")
