"""One `make site` per test session, shared by tests/test_site.py and tests/test_static_export.py.

The site is built into build/test-site/ (not _site/, which stays the user's) with
``--allow-missing``, so the pages that exist are checked even while others are still being
written; test_site.py fails on any page the course lists but the site lacks.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "test-site"
sys.path.insert(0, str(ROOT / "scripts"))

import build_site  # noqa: E402  (scripts/build_site.py)


@dataclass(frozen=True)
class Build:
    site: Path
    returncode: int
    output: str
    seconds: float
    manifest: dict


@functools.lru_cache(maxsize=1)
def site_build() -> Build:
    started = time.monotonic()
    process = subprocess.run(
        ["make", "site", f"VENV={sys.prefix}", f"SITE_DIR={SITE}", "SITE_ARGS=--allow-missing"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800,
    )
    seconds = time.monotonic() - started
    manifest_path = SITE / "site.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    output = process.stdout + process.stderr
    print(f"make site: exit {process.returncode} in {seconds:.0f} s\n{output[-3000:]}")
    return Build(SITE, process.returncode, output, seconds, manifest)
