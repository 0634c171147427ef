"""`make site`: the WebAssembly build of the course, checked without running Pyodide.

The WASM pages fetch Pyodide and its packages from a CDN when a reader opens them; this machine
reaches no CDN, so the tests check everything around that step instead:

- `make site` exits 0 and builds every page engine.course.toc lists (a missing page fails);
- the home page lists every page with its title, summary and links;
- each WASM page embeds its notebook, whose PEP 723 header names the engine wheel that sits where
  the browser will look for it, and pins NumPy, Altair and Matplotlib to the Pyodide lock file and
  the widget packages (wigglystuff, anywidget, drawdata) to pyproject.toml's pins;
- all pages share one engine wheel, which holds the whole package, pip-installs into a clean
  virtual environment and imports `engine` with all its submodules there;
- every link in the home page, in the static pages and in each page's navigation resolves to a
  file of the site.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import zipfile
from pathlib import Path

import pytest
from site_build import ROOT, build_site, require_site_tools, site_build

from engine.course import toc

# the site build (about 40 s) and the wheel's clean venv
pytestmark = pytest.mark.slow

ENTRIES = toc.entries()


@pytest.fixture(scope="module")
def built():
    require_site_tools()
    return site_build()


def _lock_versions() -> dict[str, str]:
    """``{package: version}`` of Pyodide's lock file, names in lower case (it spells 'Pillow')."""
    return {
        name.lower(): version for name, version in build_site.lock_versions(build_site.ensure_pyodide_lock()).items()
    }


def test_make_site_builds_every_page(built):
    assert built.returncode == 0, f"make site failed:\n{built.output[-4000:]}"
    assert built.manifest, "make site wrote no site.json"
    assert built.manifest["missing"] == [], f"pages missing from the site: {built.manifest['missing']}"
    assert [p["id"] for p in built.manifest["pages"]] == [e.id for e in ENTRIES]
    size = sum(f.stat().st_size for f in built.site.rglob("*") if f.is_file())
    print(f"site: {len(ENTRIES)} pages, {size / 2**20:.1f} MiB, make site took {built.seconds:.0f} s")


def test_the_home_page_lists_every_page(built):
    index = (built.site / "index.html").read_text(encoding="utf-8")
    for e in ENTRIES:
        item = re.search(rf'<li class="page" id="{re.escape(e.id)}">(.*?)</li>', index, re.S)
        assert item, f"index.html does not list {e.id}"
        text = html.unescape(item.group(1))
        assert e.title in text and e.summary in text
        hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]+)"', item.group(1))]
        assert toc.link(e.id, from_id="index", mode="site") in hrefs
        assert build_site.static_path(e.id) in hrefs


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_each_page_is_a_wasm_page_with_its_notebook_and_the_engine_wheel(built, entry):
    page = built.site / build_site.wasm_path(entry.id)
    assert (ROOT / entry.path).is_file(), f"{entry.path} is listed in engine/course/toc.py but missing"
    assert page.is_file(), f"the site lacks {build_site.wasm_path(entry.id)}"
    assert (built.site / build_site.static_path(entry.id)).is_file(), "no static export beside it"
    source = build_site.embedded_notebook(page.read_text(encoding="utf-8"))
    # The embedded notebook is this page's notebook: the same cells (marimo re-serialises it).
    from marimo._ast.parse import parse_notebook

    cells = [c.code.strip() for c in parse_notebook((ROOT / entry.path).read_text(encoding="utf-8")).cells]
    embedded = [c.code.strip() for c in parse_notebook(source).cells]
    assert embedded == cells, f"the embedded notebook has other cells than {entry.path}"
    assert re.search(r"^# /// script$", source, re.M), "no PEP 723 header in the embedded notebook"
    wheels = build_site.page_wheels(built.site, entry)
    assert "engine" in wheels, f"the embedded notebook names no engine wheel: {source[:400]}"
    assert wheels["engine"].is_file(), f"{wheels['engine']} (where the browser looks) is missing"
    assert wheels["engine"].name.startswith("engine-") and wheels["engine"].suffix == ".whl"
    versions = _lock_versions()
    for package in build_site.WASM_DEPENDENCIES:
        if "==" in package:  # a widget package, pinned as pyproject.toml pins it
            assert f'"{package}"' in source, f"{package} is missing from the page: {source[:400]}"
            continue
        pin = f'"{package}=={versions[package]}"'
        assert pin.lower() in source.lower(), (
            f"{package} is not pinned to Pyodide's {versions[package]}: {source[:400]}"
        )


def test_the_wasm_header_adds_the_widget_packages_at_pyprojects_pins_once():
    """Without a build: the staged header lists NumPy, Pillow, Altair, Matplotlib and every widget package
    pyproject.toml pins (none of them ships with Pyodide), and keeps a page's own listing."""
    import tomllib

    from marimo._environments import script_metadata

    require_site_tools()  # the lock file, to check none of the widget packages is in it

    pinned = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    widget_pins = {d for d in pinned if d.split("==")[0] in ("wigglystuff", "anywidget", "drawdata")}
    assert len(widget_pins) == 3 and all("==" in d for d in widget_pins)
    assert not set(build_site.WIDGET_PACKAGES) & set(_lock_versions()), "Pyodide ships one now: pin it there"
    header = script_metadata.loads(build_site.with_wasm_header("import marimo\napp = marimo.App()\n"))
    assert set(header["dependencies"]) == {"numpy", "pillow", "altair", "matplotlib"} | widget_pins
    own = build_site.with_wasm_header('# /// script\n# dependencies = ["drawdata>=0.5"]\n# ///\nimport marimo\n')
    listed = script_metadata.loads(own)["dependencies"]
    assert listed.count("drawdata>=0.5") == 1 and not [d for d in listed if d.startswith("drawdata==")]


def _imported_by_name(package: Path) -> set[str]:
    """The submodules ``package/__init__.py`` imports by name (``from . import a, b``, ``from .a import x``)."""
    import ast

    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            imported.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
    return imported


def _submodules(package: Path) -> set[str]:
    """Public modules and subpackages of ``package`` (a leading underscore marks a private helper,
    reached through the public module that imports it)."""
    names = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")}
    return names | {d.name for d in package.iterdir() if (d / "__init__.py").is_file()}


@pytest.mark.parametrize("package", ["engine", "engine/course", "engine/course/labs"])
def test_each_init_imports_every_submodule_by_name(package):
    """Ruff's static import graph decides what the wheel holds: importlib calls are invisible to it.
    The library's __init__ reaches the library, engine.course's reaches the course layer (and
    every page imports engine.course); the library's __init__ never imports the course layer."""
    path = ROOT / package
    expected = _submodules(path) - ({"course"} if package == "engine" else set())
    imported = _imported_by_name(path)
    assert expected <= imported, f"{package}/__init__.py does not import {sorted(expected - imported)}"
    if package == "engine":
        assert "course" not in imported, "engine/__init__.py imports the course layer"


def test_every_page_reaches_the_whole_engine_package(monkeypatch):
    """Each page, resolved as `marimo export html-wasm` resolves it (Ruff's import graph through
    uv), reaches every file of engine/: so all pages bundle one complete wheel. Without a name
    imported from engine/course/__init__.py (``from engine.course import plot, toc`` reaches only
    those two files) a page would miss the labs of the other notebooks. Needs no site build."""
    from marimo._export.local_modules import module_python_files, resolve_local_modules

    if shutil.which("uv") is None and not (Path(sys.executable).parent / "uv").is_file():
        from oracle import _missing

        _missing("uv not found: `make site-tools` installs it; the wheel-contents test skipped", "REQUIRE_BROWSER")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    package = {p.resolve() for p in (ROOT / "engine").rglob("*.py") if "__pycache__" not in p.parts}
    for entry in ENTRIES:
        modules = resolve_local_modules(ROOT / entry.path, roots=[ROOT])
        reached = {f.resolve() for m in modules if m.name == "engine" for f in module_python_files(m)}
        missing = sorted(p.relative_to(ROOT).as_posix() for p in package - reached)
        assert not missing, f"{entry.path} does not reach {missing}"


def test_every_page_shares_one_complete_engine_wheel(built):
    wheels = {
        e.id: build_site.page_wheels(built.site, e).get("engine")
        for e in ENTRIES
        if (built.site / build_site.wasm_path(e.id)).is_file()
    }
    assert wheels, "no WASM page was built"
    names = {w.name for w in wheels.values() if w is not None}
    assert len(names) == 1, (
        f"pages bundle different engine wheels {names}: engine/__init__.py must "
        "import every submodule so that each page reaches the whole package"
    )
    wheel = next(iter(wheels.values()))
    with zipfile.ZipFile(wheel) as archive:
        packed = {n for n in archive.namelist() if n.endswith(".py")}
    package = {p.relative_to(ROOT).as_posix() for p in (ROOT / "engine").rglob("*.py") if "__pycache__" not in p.parts}
    assert package <= packed, f"the wheel lacks {sorted(package - packed)}"


def test_the_wheel_installs_into_a_clean_venv_and_imports(built, tmp_path):
    wheel = next(
        (
            build_site.page_wheels(built.site, e)["engine"]
            for e in ENTRIES
            if (built.site / build_site.wasm_path(e.id)).is_file()
        ),
        None,
    )
    assert wheel is not None and wheel.is_file(), "no engine wheel in the site"
    venv = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(wheel), "numpy"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    probe = (
        "import importlib, json, pathlib, engine\n"
        "root = pathlib.Path(engine.__file__).parent.parent\n"  # every installed .py, by its dotted name
        "names = sorted('.'.join(p.relative_to(root).with_suffix('').parts).removesuffix('.__init__')\n"
        "               for p in (root / 'engine').rglob('*.py'))\n"
        "for name in names: importlib.import_module(name)\n"
        "x = engine.tensor([1.0, -2.0, 3.0], requires_grad=True)\n"
        "(x * x).sum().backward()\n"
        "print(json.dumps({'file': engine.__file__, 'modules': names, 'grad': x.grad.tolist()}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run([str(python), "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(report["file"]).resolve().is_relative_to(venv.resolve()), report["file"]
    assert report["grad"] == [2.0, -4.0, 6.0]
    expected = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "engine").rglob("*.py")
        if p.stem != "__init__" and "__pycache__" not in p.parts
    }
    assert expected <= set(report["modules"]), sorted(expected - set(report["modules"]))


def _resolves(site: Path, page: Path, href: str) -> bool:
    target = urllib.parse.unquote(href.split("#")[0].split("?")[0])
    if not target:
        return True
    resolved = (page.parent / target).resolve()
    return resolved.is_relative_to(site.resolve()) and resolved.is_file()


def _local(href: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) and not href.startswith(("#", "//"))


def test_every_link_resolves_to_a_file_of_the_site(built):
    site = built.site
    broken = []
    index = site / "index.html"
    for href in re.findall(r'<a [^>]*href="([^"]+)"', index.read_text(encoding="utf-8")):
        href = html.unescape(href)
        if _local(href) and not _resolves(site, index, href):
            broken.append(f"index.html -> {href}")
    for e in ENTRIES:
        # The navigation each page draws in the browser (mode 'site': no server behind the page).
        for folder in ("", "static/"):
            page = site / (folder + toc.site_path(e.id))
            for href in re.findall(r"\]\(([^)]+)\)", toc.nav_md(e.id, mode="site")):
                if not _resolves(site, page, href):
                    broken.append(f"{folder}{toc.site_path(e.id)} nav -> {href}")
        # Links frozen into the static export's outputs (JSON-escaped inside the page).
        static = site / build_site.static_path(e.id)
        if static.is_file():
            text = static.read_text(encoding="utf-8")
            for href in set(re.findall(r'href=\\*["\']([^"\'\\]+\.html(?:#[^"\'\\]*)?)', text)):
                if _local(href) and not _resolves(site, static, href):
                    broken.append(f"{build_site.static_path(e.id)} -> {href}")
    assert not broken, "links to files the site lacks:\n" + "\n".join(broken)


def test_make_serve_site_serves_the_site_on_localhost(built):
    import shlex
    import time
    import urllib.request

    from browser_tools import free_port, stop_process_group

    port = free_port()
    dry = subprocess.run(
        ["make", "-n", "serve-site", f"VENV={sys.prefix}", f"SITE_DIR={built.site}", f"SITE_PORT={port}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dry.returncode == 0, dry.stderr
    command = next(line for line in dry.stdout.splitlines() if "http.server" in line)
    assert "--bind 127.0.0.1" in command
    server = subprocess.Popen(
        shlex.split(command), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        base = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(base, timeout=5) as response:
                    assert "<title>" in response.read().decode()
                    break
            except OSError:
                assert time.monotonic() < deadline, "make serve-site did not answer"
                time.sleep(0.3)
        first = next(e for e in ENTRIES if (built.site / build_site.wasm_path(e.id)).is_file())
        wheel = build_site.page_wheels(built.site, first)["engine"]
        for path in (build_site.wasm_path(first.id), wheel.relative_to(built.site).as_posix()):
            with urllib.request.urlopen(base + urllib.parse.quote(path), timeout=30) as response:
                assert response.status == 200
    finally:
        stop_process_group(server)
