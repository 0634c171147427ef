"""Fixtures the browser tests of this folder share: the gallery `make run` serves, and one page."""

from __future__ import annotations

import pytest
from browser_tools import ROOT, free_port, make_command, open_page, served
from oracle import require_browser

from engine.course import toc


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    """Base URL of `make run`'s gallery on 127.0.0.1 (its log file kept for error reports)."""
    require_browser()
    missing = [e.path for e in toc.entries() if not (ROOT / e.path).is_file()]
    if len(missing) == len(toc.entries()):
        pytest.fail("no notebook or cheat sheet exists yet: nothing to serve")
    log_path = tmp_path_factory.mktemp("gallery") / "server.log"
    with served(make_command("run", free_port()), ROOT, log_path) as base:
        yield {"base": base, "log": log_path}


@pytest.fixture(scope="module")
def browser_page():
    """One Chromium page, reused for every course page (visited in sequence)."""
    with open_page(require_browser()) as page:
        yield page
