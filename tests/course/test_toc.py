"""engine.course.toc: the table of contents every page, the hub and the site index rely on."""

import re
from pathlib import Path

import pytest

from engine.course import toc

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOK_IDS = [
    "01_activations",
    "02_losses",
    "03_backprop",
    "04_optimizers",
    "05_convolution",
    "06_attention",
    "07_diffusion",
    "08_vae",
]
CHEATSHEET_IDS = [
    "deep_learning",
    "activation_functions",
    "loss_functions",
    "derivatives",
    "optimizers",
    "metrics",
    "tensor_shapes",
]


def test_the_course_lists_the_eight_notebooks_in_order_and_the_seven_sheets():
    assert [e.id for e in toc.notebooks()] == NOTEBOOK_IDS
    assert sorted(e.id for e in toc.cheatsheets()) == sorted(CHEATSHEET_IDS)
    assert toc.HUB_ID == "deep_learning" and toc.entry("deep_learning").kind == "cheatsheet"


def test_ids_are_unique_and_entries_are_complete():
    ids = [e.id for e in toc.ENTRIES]
    assert len(ids) == len(set(ids))
    for e in toc.ENTRIES:
        assert e.kind in ("notebook", "cheatsheet")
        folder = "notebooks" if e.kind == "notebook" else "cheatsheets"
        assert e.path == f"{folder}/{e.id}.py"
        assert e.title.strip() and len(e.summary) > 20 and e.topics
        for r in e.related:
            assert toc.entry(r).id == r and r != e.id


@pytest.mark.parametrize("e", toc.ENTRIES, ids=lambda e: e.id)
def test_every_page_file_exists(e):
    # Intended to fail until the page is written: the course promises all of them.
    assert (ROOT / e.path).is_file(), f"{e.path} is listed in engine/course/toc.py but missing"


def test_unknown_ids_and_modes_are_clear_errors():
    with pytest.raises(ValueError, match="unknown id 'nope'"):
        toc.entry("nope")
    with pytest.raises(ValueError, match="mode"):
        toc.link("02_losses", mode="browser")
    with pytest.raises(ValueError, match="unknown id"):
        toc.link("02_losses", from_id="nope", mode="site")
    with pytest.raises(ValueError, match="kind"):
        toc.entries("video")


def test_server_links_use_the_gallery_file_query():
    for e in toc.ENTRIES:
        url = toc.link(e.id, mode="server")
        assert url == f"?file={e.path}"
        assert (ROOT / url.removeprefix("?file=")).as_posix().endswith(e.path)


def test_site_links_resolve_inside_the_site_layout(tmp_path):
    # Build an empty site with the layout of `make site`, then follow every link from every page.
    site = tmp_path / "_site"
    for e in toc.ENTRIES:
        page = site / toc.site_path(e.id)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("")
    (site / "index.html").write_text("")
    for src in toc.ENTRIES:
        here = (site / toc.site_path(src.id)).parent
        for dst in toc.ENTRIES:
            url = toc.link(dst.id, from_id=src.id, mode="site")
            assert url.endswith(".html") and not url.startswith("/")
            assert (here / url).resolve() == (site / toc.site_path(dst.id)).resolve()
    for dst in toc.ENTRIES:
        assert (site / toc.link(dst.id, from_id="index", mode="site")).is_file()
    assert toc.site_path("03_backprop") == "notebooks/03_backprop.html"


def test_outside_a_marimo_server_links_are_the_site_form():
    # Under pytest there is no marimo session with an HTTP request: auto picks the static form.
    assert toc.detect_mode() == "site"
    assert toc.link("04_optimizers") == "../notebooks/04_optimizers.html"


def _links(md):
    return re.findall(r"\[([^\]]+)\]\(([^)]+)\)", md)


def test_nav_links_previous_next_and_the_hub():
    md = toc.nav_md("02_losses", mode="site")
    targets = [u for _, u in _links(md)]
    assert "../notebooks/01_activations.html" in targets
    assert "../notebooks/03_backprop.html" in targets
    assert "../cheatsheets/deep_learning.html" in targets
    assert "../cheatsheets/loss_functions.html" in targets
    assert md.index("01_activations") < md.index("03_backprop")
    first, last = toc.nav_md("01_activations", "server"), toc.nav_md("08_vae", "server")
    assert "previous" not in first and "next" in first
    assert "next" not in last and "?file=notebooks/07_diffusion.py" in last
    hub = toc.nav_md("deep_learning", "site")
    assert "deep_learning.html" not in hub  # the hub does not link to itself


@pytest.mark.parametrize("e", toc.ENTRIES, ids=lambda e: e.id)
def test_every_nav_bar_is_well_formed(e):
    for mode in ("server", "site"):
        links = _links(toc.nav_md(e.id, mode))
        assert links, e.id
        for label, url in links:
            assert label.strip()
            assert (
                re.fullmatch(r"\?file=(notebooks|cheatsheets)/\w+\.py", url)
                if mode == "server"
                else re.fullmatch(r"\.\./(notebooks|cheatsheets)/\w+\.html", url)
            )


def test_the_reading_guide_names_files_that_exist():
    """ARCHITECTURE.md (linked from the README) points at real files: a renamed module breaks it."""
    root = ROOT
    guide = (root / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = set(re.findall(r"(?:engine|tests|notebooks|cheatsheets|docs|scripts)/[\w/.<>-]*[\w>]", guide))
    concrete = {p for p in named if "<" not in p and "NN_" not in p}  # not the patterns, e.g. labs/<topic>.py
    assert len(concrete) >= 20, sorted(concrete)
    missing = sorted(p for p in concrete if not (root / p).exists())
    assert not missing, f"ARCHITECTURE.md names missing files: {missing}"
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "(ARCHITECTURE.md)" in readme and "(docs/notebook-convention.md)" in readme
