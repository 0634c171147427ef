"""Shared pytest setup.

- Markers (declared in pyproject.toml): a test marked ``oracle`` needs torch and one marked
  ``browser`` needs Chromium + Playwright; both are checked before the test runs and skip it with
  the reason, or fail it under ``REQUIRE_ORACLE=1`` / ``REQUIRE_BROWSER=1`` (see tests/support/oracle.py).
- Fixtures ``torch`` (the module) and ``chromium`` (the executable's path) do the same.
- Hypothesis runs without its per-example deadline: the machine is shared and tests never assert
  times.
- BLAS runs one thread per process (see below); benchmarks, not tests, measure speed.
- The end of the run says which optional tools were present, so a skip is never silent.
"""

from __future__ import annotations

import os
import sys

# One BLAS thread per process, set before NumPy loads: tests run beside marimo servers and
# subprocesses on 2 cores, where OpenBLAS's spinning threads slow small products 10-30x.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

# The helpers that are not tests (oracle, torch_compare, notebook_driver, browser_tools, site_build)
# live in tests/support/: `from oracle import ...` works from any test file.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "support"))

from oracle import browser_available, require_browser, require_torch, torch_available  # noqa: E402

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("course", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))
except ImportError:  # hypothesis is a test extra; tests that use it import it themselves
    pass


@pytest.hookimpl(trylast=True)  # after pytest's own configure has made its temporary-folder factory
def pytest_configure(config):
    """In a pytest-xdist worker, build the site in the folder all workers share (site_build.py)."""
    if hasattr(config, "workerinput"):
        import site_build

        site_build.SHARED_DIR = config._tmp_path_factory.getbasetemp().parent


def pytest_collection_modifyitems(config, items):
    """Tell ``notebook_driver.export_html`` whether this session builds the site anyway (a test
    that reads the built site is selected): only then does it read a page's export from the site
    instead of exporting the page itself (a run of a few export tests should not build 15 pages)."""
    import site_build

    site_build.BUILT_THIS_SESSION = any(
        item.nodeid.startswith(("tests/site/test_site.py", "tests/site/test_static_export.py")) for item in items
    )


def pytest_runtest_setup(item):
    if item.get_closest_marker("oracle"):
        require_torch()
    if item.get_closest_marker("browser"):
        require_browser()


@pytest.fixture
def torch():
    """The torch module (skips, or fails under REQUIRE_ORACLE=1, without it)."""
    return require_torch()


@pytest.fixture
def chromium() -> str:
    """Path to a working Chromium (skips, or fails under REQUIRE_BROWSER=1, without it)."""
    return require_browser()


def pytest_report_header(config):
    import numpy

    lines = [f"numpy {numpy.__version__}"]
    if torch_available():
        import torch

        lines.append(f"oracle: torch {torch.__version__}")
    else:
        lines.append("oracle: torch not installed -> oracle tests will be skipped")
    lines.append(
        "browser: "
        + ("chromium + playwright found" if browser_available() else "unavailable -> browser tests will be skipped")
    )
    for variable in ("REQUIRE_ORACLE", "REQUIRE_BROWSER"):
        if os.environ.get(variable):
            lines.append(f"{variable}={os.environ[variable]}")
    return lines


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    tools = {"oracle (torch)": "torch not installed", "browser": "browser test skipped"}
    for tool, phrase in tools.items():
        count = sum(phrase in str(getattr(report, "longrepr", "")) for report in skipped)
        if count:
            terminalreporter.write_line(
                f"{count} {tool} test(s) skipped; `bash .ci/run` installs the tools and runs them.",
                yellow=True,
            )
