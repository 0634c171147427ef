"""One `make site` per test session, shared by tests/site/test_site.py and test_static_export.py.

The site is built into a fresh temporary folder (not _site/, which stays the user's; not a fixed
folder, which a second test run at the same time would rebuild under this one's feet), removed
when the session ends. Under pytest-xdist (the slow tier runs on two workers) the workers share
one build in pytest's base temporary folder. ``--allow-missing`` lets the pages that exist be
checked while others are still being written; test_site.py fails on any page the course lists
but the site lacks.
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

# Set by tests/conftest.py in a pytest-xdist worker: a folder every worker of this run shares
# (pytest's base temporary folder, which pytest itself prunes), so that the run builds the site once.
SHARED_DIR: Path | None = None


@functools.lru_cache(maxsize=1)
def site_build() -> Build:
    """The site, built once per test run: by this process, or under xdist by the first worker that
    asks (the others wait on a file lock and read its result)."""
    if SHARED_DIR is None:
        site = Path(tempfile.mkdtemp(prefix="dlcourse-site-")) / "_site"
        atexit.register(shutil.rmtree, site.parent, True)
        return _build(site)
    import fcntl

    record = SHARED_DIR / "site-build.json"
    with open(SHARED_DIR / "site-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not record.is_file():
            (SHARED_DIR / "site").mkdir(parents=True, exist_ok=True)
            built = _build(SHARED_DIR / "site" / "_site")
            fields = {"returncode": built.returncode, "output": built.output, "seconds": built.seconds}
            record.write_text(json.dumps(fields), encoding="utf-8")
    fields = json.loads(record.read_text(encoding="utf-8"))
    site = SHARED_DIR / "site" / "_site"
    return Build(site, fields["returncode"], fields["output"], fields["seconds"], _manifest(site))


def _manifest(site: Path) -> dict:
    path = site / "site.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _build(site: Path) -> Build:
    started = time.monotonic()
    process = subprocess.run(
        ["make", "site", f"VENV={sys.prefix}", f"SITE_DIR={site}", "SITE_ARGS=--allow-missing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.monotonic() - started
    output = process.stdout + process.stderr
    print(f"make site: exit {process.returncode} in {seconds:.0f} s\n{output[-3000:]}")
    return Build(site, process.returncode, output, seconds, _manifest(site))
