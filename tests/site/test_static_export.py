"""The static pages of the site (`marimo export html`), opened in Chromium.

A static export runs the notebook once at build time and freezes its outputs into the page; the
page's scripts come from marimo's CDN
(``cdn.jsdelivr.net/npm/@marimo-team/frontend@<version>/dist/``). Here the CDN is out of reach,
so every such request is answered from the installed marimo package's ``_static/`` folder (the
same files) and any other network request is refused. Each page must then render its title and
its formulas with KaTeX, show no error output and raise no JavaScript error; its links must lead
to files of the site. A screenshot goes to build/screenshots/static/<id>.png.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest
from browser_tools import CdnFromPackage, open_page, screenshot
from oracle import require_browser
from site_build import build_site, require_site_tools, site_build

from engine.course import toc

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STOPPED = "an ancestor was stopped with `mo.stop`"


@pytest.fixture(scope="module")
def static_page():
    with open_page(require_browser(), kernel_hook=False) as page:
        yield page


@pytest.mark.parametrize("entry", toc.entries(), ids=lambda e: e.id)
def test_static_page_renders(entry, static_page):
    require_site_tools()
    built = site_build()
    path = built.site / build_site.static_path(entry.id)
    assert path.is_file(), (
        f"the site lacks {build_site.static_path(entry.id)} "
        f"(make site exit {built.returncode}):\n{built.output[-2000:]}"
    )
    page = static_page
    cdn = CdnFromPackage()
    errors: list[str] = []

    def on_error(error):
        errors.append(str(error))

    page.on("pageerror", on_error)
    page.route("**/*", cdn)
    try:
        page.goto(path.as_uri(), wait_until="load")
        page.locator("#App .output-area").first.wait_for(timeout=60_000)
        page.locator(".katex").first.wait_for(state="attached", timeout=60_000)
        page.wait_for_load_state("networkidle")

        assert not cdn.missing, f"CDN files that marimo/_static lacks: {cdn.missing[:5]}"
        assert cdn.served, "the page loaded nothing from the CDN: not a marimo export?"
        headings = [h.strip() for h in page.locator("#App h1").all_inner_texts()]
        assert any(entry.title.casefold() in h.casefold() for h in headings), (
            f"no H1 names {entry.title!r}; H1s: {headings}"
        )
        unrendered = page.locator("marimo-tex").evaluate_all(
            "els => els.filter(e => !(e.shadowRoot || e).querySelector('.katex')).map(e => e.textContent.slice(0, 80))"
        )
        assert page.locator("marimo-tex").count() > 0, "no formula on the page"
        assert not unrendered, f"formulas not rendered by KaTeX: {unrendered[:5]}"
        assert page.locator(".katex-error").count() == 0, page.locator(".katex-error").all_inner_texts()[:5]
        # Cells behind a run button were stopped on purpose (mo.stop): marimo says so in an alert.
        alerts = page.locator("#App .output-area [role=alert]").all_inner_texts()
        failed = [text for text in alerts if not (STOPPED in text and "Traceback" not in text)]
        assert not failed, f"error outputs: {[text[:300] for text in failed[:3]]}"
        assert not errors, f"JavaScript page errors: {errors}"

        site = built.site.resolve()
        hrefs = page.locator("#App a[href]").evaluate_all("els => els.map(e => e.href)")
        broken = []
        for href in hrefs:
            if href.startswith("file://"):
                target = Path(urllib.parse.unquote(urllib.parse.urlparse(href).path))
                if not (target.is_relative_to(site) and target.is_file()):
                    broken.append(href)
        assert not broken, f"links to files the site lacks: {broken}"
    finally:
        page.unroute("**/*", cdn)
        page.remove_listener("pageerror", on_error)
        screenshot(page, f"static/{entry.id}")
