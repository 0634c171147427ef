"""One `make site` per test session, shared by tests/site/test_site.py and tests/site/test_static_export.py.

The site is built into a fresh temporary folder (not _site/, which stays the user's; not a fixed
folder, which a second test run at the same time would rebuild under this one's feet), removed
when the session ends. ``--allow-missing`` lets the pages that exist be checked while others are
still being written; test_site.py fails on any page the course lists but the site lacks.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import build_site  # noqa: E402  (scripts/build_site.py)


@dataclass(frozen=True)
class Build:
    site: Path
    returncode: int
    output: str
    seconds: float
    manifest: dict


def require_site_tools() -> None:
    """npm fetches Pyodide's lock file once; without it the site tests skip (fail in CI).

    CI (``REQUIRE_BROWSER=1``) must build the site, so there a missing npm is a failure.
    """
    if build_site.PYODIDE_LOCK.is_file() or shutil.which("npm"):
        return
    from oracle import _missing

    _missing("npm not found: `make site` needs it once for Pyodide's lock file; site tests skipped", "REQUIRE_BROWSER")


# Set by tests/conftest.py at collection: whether a selected test reads the built site.
BUILT_THIS_SESSION = False


@functools.lru_cache(maxsize=1)
def site_build() -> Build:
    site = Path(tempfile.mkdtemp(prefix="dlcourse-site-")) / "_site"
    atexit.register(shutil.rmtree, site.parent, True)
    started = time.monotonic()
    process = subprocess.run(
        ["make", "site", f"VENV={sys.prefix}", f"SITE_DIR={site}", "SITE_ARGS=--allow-missing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.monotonic() - started
    manifest_path = site / "site.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    output = process.stdout + process.stderr
    print(f"make site: exit {process.returncode} in {seconds:.0f} s\n{output[-3000:]}")
    return Build(site, process.returncode, output, seconds, manifest)
