"""The course as a web app: `make run`'s gallery driven in Chromium with Playwright.

One `marimo run` server (the command `make run` prints) serves the whole gallery; one browser
page visits every notebook and cheat sheet of engine.course.toc in sequence and checks that it

- renders its title (an H1 naming the course entry) and its formulas with KaTeX, with no marimo
  error output, no stderr traceback and no JavaScript page error;
- links to other pages with the gallery's ``?file=`` form, each answering 200;
- changes what it draws when a slider moves (the chart's pixels/spec or an output's text);
- on pages with buttons: a button press starts a run whose progress bar reaches its total.

Waits follow the kernel: a websocket hook (tests/support/browser_tools.py) records each cell's status and
each finished run. A full-page screenshot of each page goes to build/screenshots/<id>.png.
"""

from __future__ import annotations

import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from browser_tools import (
    INTENTIONAL_ERRORS,
    ROOT,
    assert_no_errors,
    changed_areas,
    free_port,
    run_started,
    screenshot,
    serve,
    stop_process_group,
    wait_idle_after,
    wait_settled,
)

from engine.course import toc

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOAD_TIMEOUT_MS = 180_000  # the first run of a page: a kernel process, imports, every cell
RUN_TIMEOUT_MS = 240_000  # one training run behind a button


# The fixtures `gallery` and `browser_page` are in tests/site/conftest.py.


# ----------------------------------------------------------------------------- helpers
# The height of every Vega chart on the page, in the document and in open shadow roots.
_CHART_HEIGHTS = """() => {
  const found = [];
  const walk = root => root.querySelectorAll('*').forEach(e => {
    if (e.shadowRoot) walk(e.shadowRoot);
    if (e.classList.contains('vega-embed')) found.push(Math.round(e.getBoundingClientRect().height));
  });
  walk(document);
  return found;
}"""


def _open(page, gallery, entry) -> None:
    page.page_errors.clear()
    page.goto(gallery["base"] + toc.link(entry.id, mode="server"), wait_until="domcontentloaded")
    wait_idle_after(page, 0, LOAD_TIMEOUT_MS, f"{entry.id}: first run")


# ----------------------------------------------------------------------------- tests
def test_gallery_lists_every_page(gallery, browser_page):
    page = browser_page
    page.goto(gallery["base"])
    page.locator("a[href*='?file=']").first.wait_for(timeout=60_000)
    hrefs = page.locator("a[href*='?file=']").evaluate_all("els => els.map(e => e.href)")
    served = set()
    for href in hrefs:
        file = urllib.parse.parse_qs(urllib.parse.urlparse(href).query)["file"][0]
        path = Path(file) if Path(file).is_absolute() else ROOT / file
        served.add(path.resolve().relative_to(ROOT.resolve()).as_posix())
    listed = {e.path for e in toc.entries()}
    assert listed <= served, f"the gallery lacks {sorted(listed - served)}"
    screenshot(page, "gallery")


@pytest.mark.parametrize("entry", toc.entries(), ids=lambda e: e.id)
def test_page_renders_and_reacts(entry, gallery, browser_page):
    assert (ROOT / entry.path).is_file(), f"{entry.path} is listed in engine/course/toc.py but missing"
    page = browser_page
    started = time.monotonic()
    _open(page, gallery, entry)
    print(f"{entry.id}: first run done in {time.monotonic() - started:.1f} s")
    try:
        _check_page(page, gallery, entry)
    finally:
        screenshot(page, entry.id)
        if page.console_errors:
            print(f"{entry.id}: console errors {page.console_errors[:5]}")
            page.console_errors.clear()
        print(f"{entry.id}: checked in {time.monotonic() - started:.1f} s")


def _check_page(page, gallery, entry) -> None:
    problems = []  # reported together at the end, after every control was exercised
    # Title and formulas (the DOM follows the kernel's messages by a frame or so).
    try:
        page.locator("#App h1").first.wait_for(timeout=30_000)
    except Exception:
        pass  # reported just below, with what the page shows
    wait_settled(page)
    headings = [h.strip() for h in page.locator("#App h1").all_inner_texts()]
    assert any(entry.title.casefold() in h.casefold() for h in headings), (
        f"{entry.id}: no H1 names {entry.title!r}; H1s: {headings}"
    )
    formulas = page.locator("marimo-tex")
    assert formulas.count() > 0, f"{entry.id}: no formula on the page"
    page.locator(".katex").first.wait_for(state="attached", timeout=30_000)
    unrendered = page.locator("marimo-tex").evaluate_all(
        "els => els.filter(e => !(e.shadowRoot || e).querySelector('.katex')).map(e => e.textContent.slice(0, 80))"
    )
    assert not unrendered, f"{entry.id}: formulas not rendered by KaTeX: {unrendered[:5]}"
    assert page.locator(".katex-error").count() == 0, (
        f"{entry.id}: KaTeX errors: {page.locator('.katex-error').all_inner_texts()[:5]}"
    )
    assert_no_errors(page, gallery["log"], f"{entry.id} after loading")
    # Every chart draws: Vega reports a spec it cannot run (a bad data format, say) only in the
    # console, and leaves an empty, zero-height chart.
    vega_errors = [m for m in page.console_errors if "vega" in m.lower()]
    assert not vega_errors, f"{entry.id}: Vega could not draw a chart: {vega_errors[:3]}"
    heights = page.evaluate(_CHART_HEIGHTS)
    assert all(h > 0 for h in heights), f"{entry.id}: charts drawn with no height: {heights}"

    # Links to other pages: the gallery form, each served.
    hrefs = page.locator("#App a[href]").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert not [h for h in hrefs if h.endswith(".html") and "://" not in h], (
        f"{entry.id}: site-style .html links under marimo run: {hrefs}"
    )
    broken_links = []
    for href in sorted({h for h in hrefs if h.startswith("?file=")}):
        target = urllib.parse.unquote(href.removeprefix("?file="))
        if target not in {e.path for e in toc.entries()}:
            broken_links.append(f"{href} (not a course page)")
            continue
        try:
            with urllib.request.urlopen(gallery["base"] + href, timeout=30) as response:
                status = response.status
        except urllib.error.HTTPError as error:
            status = error.code
        if status != 200:
            broken_links.append(f"{href} (HTTP {status})")
    if broken_links:
        problems.append(f"links that the gallery does not serve: {broken_links}")

    # A slider changes what is drawn.
    sliders = page.locator("#App [role=slider]")
    count = sliders.count()
    if count == 0:
        problems.append("no slider on the page")
    tried = []
    for index in range(count):
        thumb = sliders.nth(index)
        if thumb.get_attribute("aria-disabled") == "true" or thumb.get_attribute("data-disabled") is not None:
            continue
        before = wait_settled(page)
        completed = page.evaluate("() => __mw.completed")
        value, high = thumb.get_attribute("aria-valuenow"), thumb.get_attribute("aria-valuemax")
        thumb.scroll_into_view_if_needed()
        thumb.focus()
        thumb.press("ArrowLeft" if value is not None and value == high else "ArrowRight")
        if not run_started(page, completed):
            tried.append(f"slider {index} (no cell ran)")
            continue
        wait_idle_after(page, completed, RUN_TIMEOUT_MS, f"{entry.id}: slider {index}")
        assert_no_errors(page, gallery["log"], f"{entry.id} after moving slider {index}")
        # The new outputs arrive with the finished run; charts then redraw: compare once settled.
        changes = changed_areas(before, wait_settled(page))
        if changes:
            print(f"{entry.id}: slider {index} changed {changes[:3]}")
            break
        tried.append(f"slider {index} ({value} -> {thumb.get_attribute('aria-valuenow')})")
    else:
        if count:
            problems.append(f"moving a slider changed nothing drawn; tried {tried}")

    # A button: its press runs to the end, and the training run's progress bar reaches its total.
    # Presses stop at the first run that showed a progress bar: every button's run is checked
    # in-process (test_every_notebook.py's test_every_run_button_runs_to_the_end); here the browser
    # shows the bar and the result.
    buttons = page.locator("#App marimo-button button")
    if buttons.count():
        progress_before = page.evaluate("() => __mw.progress.length")
        pressed, disabled = 0, []
        for index in range(buttons.count()):
            button = buttons.nth(index)
            if button.is_disabled():  # a button that cannot run here says why (PyTorch missing)
                disabled.append(button.inner_text())
                continue
            if pressed and page.evaluate(f"() => __mw.progress.slice({progress_before}).some(u => u.total > 0)"):
                continue
            pressed += 1
            completed = page.evaluate("() => __mw.completed")
            button.scroll_into_view_if_needed()
            button.click()
            assert run_started(page, completed), f"{entry.id}: pressing button {index} ran no cell"
            wait_idle_after(page, completed, RUN_TIMEOUT_MS, f"{entry.id}: button {index}")
            assert_no_errors(page, gallery["log"], f"{entry.id} after pressing button {index}")
            print(f"{entry.id}: button {index} ({button.inner_text()!r}) done")
        progress = page.evaluate(f"() => __mw.progress.slice({progress_before})")
        final = page.evaluate("() => __mw.lastOutput")
        bars = {}
        for update in progress:
            if update["total"] and update["total"] > 0:
                bars[update["cell"]] = max(bars.get(update["cell"], 0), update["progress"])
        if not pressed:
            unexplained = [label for label in disabled if "not installed" not in label]
            assert not unexplained, f"{entry.id}: disabled buttons that do not say why: {unexplained}"
        elif not bars:
            problems.append("pressing its buttons showed no progress bar (mo.status.progress_bar)")
        # marimo sends bar updates at most every 0.15 s and may remove the bar on exit, so a
        # finished bar is one that advanced and then either reached its total or was replaced by
        # the cell's result when the run ended (the cell is idle, without error, by now).
        stalled = {cell: high for cell, high in bars.items() if high < 1}
        assert not stalled, f"{entry.id}: progress bars that never advanced: {stalled}"
        unfinished = {
            cell: f"{state['progress']}/{state['total']}"
            for cell, state in final.items()
            if cell in bars and state is not None and state["progress"] < state["total"]
        }
        assert not unfinished, f"{entry.id}: progress bars left short of their total: {unfinished}"
        wait_settled(page)

    assert not problems, f"{entry.id}: " + "; ".join(problems)


def test_some_page_trains_behind_a_button():
    """The course has training runs behind buttons (checked page by page above)."""
    sources = [(ROOT / e.path).read_text(encoding="utf-8") for e in toc.entries() if (ROOT / e.path).is_file()]
    assert any("run_button" in s and "progress_bar" in s for s in sources), (
        "no page has a mo.ui.run_button with mo.status.progress_bar"
    )


HARNESS_NOTEBOOK = """
import marimo

app = marimo.App()


@app.cell
def _():
    import time

    import marimo as mo

    mo.md("# Harness check\\n\\n$$a^2 + b^2$$")
    return mo, time


@app.cell
def _(mo):
    k = mo.ui.slider(1, 5, value=1, label="k")
    k
    return (k,)


@app.cell
def _(k, mo):
    mo.md(f"ten times k is {10 * k.value}")
    return


@app.cell
def _(k):
    if k.value > 1:
        raise ZeroDivisionError("the harness must see this")
    return


@app.cell
def _(mo):
    go = mo.ui.run_button(label="go")
    go
    return (go,)


@app.cell
def _(go, mo, time):
    mo.stop(not go.value)
    with mo.status.progress_bar(total=20, remove_on_exit=True) as bar:
        for _ in range(20):
            time.sleep(0.02)
            bar.update()
    mo.md("trained")
    return
"""


def test_the_harness_sees_errors_changes_and_progress(browser_page, tmp_path):
    """The checks above can fail: on a notebook made to misbehave, each one notices."""
    folder = tmp_path / "harness"
    folder.mkdir()
    (folder / "harness.py").write_text(HARNESS_NOTEBOOK, encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "marimo",
        "run",
        str(folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(free_port()),
        "--headless",
        "--no-token",
        "--no-sandbox",
    ]
    server, base = serve(command, tmp_path, tmp_path / "server.log")
    page = browser_page
    try:
        page.page_errors.clear()
        page.goto(base + "?file=harness.py")
        wait_idle_after(page, 0, LOAD_TIMEOUT_MS, "harness: first run")
        state = page.evaluate("() => ({errors: __mw.errors, progress: __mw.progress})")
        assert [e for e in state["errors"] if e["type"] not in INTENTIONAL_ERRORS] == []
        assert page.locator(".katex").count() >= 1

        before = wait_settled(page)
        completed = page.evaluate("() => __mw.completed")
        thumb = page.locator("#App [role=slider]").first
        thumb.focus()
        thumb.press("ArrowRight")
        wait_idle_after(page, completed, RUN_TIMEOUT_MS, "harness: slider")
        changes = changed_areas(before, wait_settled(page))
        assert any("ten times k is 20" in change for change in changes), changes
        with pytest.raises(AssertionError, match="marimo error output"):
            assert_no_errors(page, tmp_path / "server.log", "harness")

        completed = page.evaluate("() => __mw.completed")
        page.locator("#App marimo-button button").first.click()
        wait_idle_after(page, completed, RUN_TIMEOUT_MS, "harness: button")
        progress = page.evaluate("() => __mw.progress")
        assert progress and max(p["progress"] for p in progress) >= 1
        assert all(p["total"] == 20 for p in progress)
        assert page.evaluate("() => Object.values(__mw.lastOutput).every(v => v === null)")
        assert "trained" in page.locator("#App").inner_text()
    finally:
        stop_process_group(server)
