"""Build the course's static site into ``_site/`` (what ``make site`` runs).

Layout (the one ``engine.course.toc`` links assume: every page one folder below the home page)::

    _site/index.html                          home page, generated from engine.course.toc
    _site/notebooks/01_activations.html       WebAssembly page (marimo export html-wasm --mode run)
    _site/notebooks/assets/, public/wheels/   marimo's frontend and the engine wheel for that folder
    _site/cheatsheets/<id>.html (+ assets/, public/wheels/)
    _site/static/notebooks/01_activations.html   static export (marimo export html): the notebook
    _site/static/cheatsheets/<id>.html           run once here, outputs frozen, no Python needed
    _site/site.json                           manifest: pages, wheel, versions (read by the tests)

WebAssembly pages
    ``marimo export html-wasm`` bundles the local ``engine`` package as a pure-Python wheel because
    pyproject.toml sets ``[tool.marimo.runtime] pythonpath = ["."]``; it finds the modules a page
    reaches with Ruff's import graph (run through ``uv``). ``engine/__init__.py`` imports every
    library submodule and ``engine/course/__init__.py`` every course submodule, and every page
    imports ``engine.course``, so each page reaches the whole package and all pages share one wheel
    (the builder checks that they do).

    The browser installs a page's dependencies from the PEP 723 header of the embedded notebook.
    The wheel declares none, and ``engine.course.plot`` imports Altair and Matplotlib lazily (invisible to
    marimo's import scan), so the builder exports a staged copy of each notebook (under
    ``build/site-src-<pid>/``) whose header lists the engine's runtime packages; marimo pins each to the
    version in Pyodide's lock file. The lock file is the one of the npm package
    ``pyodide@<PYODIDE_VERSION>`` (installed under ``build/pyodide/`` with npm) and is passed to
    marimo with ``MARIMO_PYODIDE_LOCK_FILE``, so the pins are exact and need no network look-up.

Static pages
    ``marimo export html`` runs each notebook with this Python and writes its outputs into the
    page; the page's scripts come from marimo's CDN at view time. A notebook cell that fails makes
    the build fail.

Usage::

    python scripts/build_site.py [--out _site] [--only ID ...] [--jobs 2] [--allow-missing]
    python scripts/build_site.py --tools-only      # fetch the lock file, check for uv
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.course import toc  # noqa: E402

PYODIDE_VERSION = "314.0.0"
PYODIDE_DIR = ROOT / "build" / "pyodide"
PYODIDE_LOCK = PYODIDE_DIR / "node_modules" / "pyodide" / "pyodide-lock.json"
# Staged notebooks (one folder per build, so that builds running at once never share it).
STAGE_DIR = ROOT / "build" / f"site-src-{os.getpid()}"
STATIC_PREFIX = "static"
# What the browser must install for `engine` (numpy) and its course layer (pillow, to read a
# drawing and write images; altair for the charts; matplotlib for colour maps and figures), pinned
# by marimo to Pyodide's lock file, and the widgets: packages Pyodide does not ship, which micropip
# fetches from PyPI at the versions pyproject.toml pins (copied from there).
WIDGET_PACKAGES = ("wigglystuff", "anywidget", "drawdata")
WIDGET_DEPENDENCIES = tuple(
    d
    for d in tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    if d.split("==")[0] in WIDGET_PACKAGES
)
WASM_DEPENDENCIES = ("numpy", "pillow", "altair", "matplotlib") + WIDGET_DEPENDENCIES
SITE_TITLE = "Deep learning, from the gradient up"


# ----------------------------------------------------------------------------- paths and names
def wasm_path(entry_id: str) -> str:
    """Where the WebAssembly page of an entry lives, relative to the site root."""
    return toc.site_path(entry_id)


def static_path(entry_id: str) -> str:
    """Where the static export of an entry lives: the same layout under ``static/``."""
    return f"{STATIC_PREFIX}/{toc.site_path(entry_id)}"


def embedded_notebook(page_html: str) -> str:
    """The notebook source a marimo export embeds (``<marimo-code>``, URL-encoded)."""
    match = re.search(r"<marimo-code[^>]*>(.*?)</marimo-code>", page_html, re.S)
    if match is None:
        raise ValueError("no <marimo-code> element: not a marimo html-wasm export")
    return urllib.parse.unquote(match.group(1).strip())


def wheel_requirements(notebook_source: str) -> dict[str, str]:
    """``{distribution: url}`` of the ``name @ url`` requirements in a notebook's PEP 723 header."""
    header = re.search(r"(?m)^# /// script$(.*?)^# ///$", notebook_source, re.S)
    if header is None:
        return {}
    return dict(re.findall(r'"([A-Za-z0-9_.-]+) @ ([^"]+\.whl)"', header.group(1)))


# ----------------------------------------------------------------------------- pyodide lock
def ensure_pyodide_lock(version: str = PYODIDE_VERSION) -> Path:
    """Path of ``pyodide-lock.json`` from the npm package ``pyodide@version`` (installs it once)."""
    package_json = PYODIDE_LOCK.parent / "package.json"
    if PYODIDE_LOCK.is_file() and package_json.is_file():
        if json.loads(package_json.read_text())["version"] == version:
            return PYODIDE_LOCK
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "build_site: npm is needed to fetch the Pyodide lock file (pyodide@"
            f"{version} from the npm registry); install Node.js and npm"
        )
    PYODIDE_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(PYODIDE_DIR),
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--no-package-lock",
            f"pyodide@{version}",
        ],
        check=True,
        timeout=600,
    )
    installed = json.loads(package_json.read_text())["version"]
    if installed != version:
        raise SystemExit(f"build_site: npm installed pyodide {installed}, expected {version}")
    return PYODIDE_LOCK


def lock_versions(lock_file: Path) -> dict[str, str]:
    """``{package: version}`` of the packages a Pyodide lock file ships."""
    packages = json.loads(lock_file.read_text())["packages"]
    return {spec["name"]: spec["version"] for spec in packages.values()}


# ----------------------------------------------------------------------------- staging
def with_wasm_header(source: str, dependencies=WASM_DEPENDENCIES) -> str:
    """The notebook with a PEP 723 header that lists ``dependencies`` (kept if already listed)."""
    from marimo._environments import script_metadata

    project = script_metadata.loads(source) or {}
    listed = [str(d) for d in project.get("dependencies", [])]

    def name(requirement):
        return re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0].lower()

    names = {name(d) for d in listed}
    project["dependencies"] = listed + [d for d in dependencies if name(d) not in names]
    block = script_metadata.dumps(project)
    if script_metadata.loads(source) is None:
        return f"{block}\n{source}"
    return script_metadata.replace_block(source, block)


def stage(entry) -> Path:
    """Copy the notebook under build/site-src-<pid>/ (same sub-folder) with the WASM header added.

    The copy stays inside the repository, so marimo still finds pyproject.toml and its pythonpath.
    """
    target = STAGE_DIR / entry.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(with_wasm_header((ROOT / entry.path).read_text(encoding="utf-8")), encoding="utf-8")
    return target


# ----------------------------------------------------------------------------- exports
@dataclass
class Result:
    id: str
    kind: str
    seconds: float = 0.0
    errors: list = field(default_factory=list)


def _run(command: list, env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _tail(process: subprocess.CompletedProcess, lines: int = 25) -> str:
    text = (process.stdout or "") + (process.stderr or "")
    return "\n".join(text.strip().splitlines()[-lines:])


def export_wasm(entry, out: Path, env: dict, lock: threading.Lock) -> Result:
    result = Result(entry.id, "wasm")
    started = time.monotonic()
    staged = stage(entry)
    target = out / wasm_path(entry.id)
    command = [
        sys.executable,
        "-m",
        "marimo",
        "export",
        "html-wasm",
        str(staged),
        "-o",
        str(target),
        "--mode",
        "run",
        "--no-sandbox",
        "-f",
    ]
    with lock:  # pages of one folder share its assets/ and public/wheels/: one export at a time
        process = _run(command, env, timeout=600)
    if process.returncode != 0 or not target.is_file():
        result.errors.append(f"marimo export html-wasm failed (exit {process.returncode}):\n" + _tail(process))
    result.seconds = time.monotonic() - started
    return result


def export_static(entry, out: Path, env: dict) -> Result:
    result = Result(entry.id, "static")
    started = time.monotonic()
    target = out / static_path(entry.id)
    target.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "marimo", "export", "html", entry.path, "-o", str(target), "--no-sandbox", "-f"]
    process = _run(command, env, timeout=900)
    if process.returncode != 0 or not target.is_file():
        result.errors.append(
            f"marimo export html failed (exit {process.returncode}); a cell "
            f"raised or the export broke:\n" + _tail(process)
        )
    result.seconds = time.monotonic() - started
    return result


# ----------------------------------------------------------------------------- home page
INDEX_CSS = """
body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827;
       max-width: 60rem; margin: 2.5rem auto; padding: 0 1.25rem; }
h1 { font-size: 2rem; margin-bottom: .25rem; } h2 { margin-top: 2.25rem; }
.lead { color: #4b5563; margin-top: 0; }
ol, ul.sheets { padding-left: 0; list-style: none; }
li.page { border: 1px solid #e5e7eb; border-radius: .6rem; padding: .8rem 1rem; margin: .7rem 0; }
li.page a.title { font-weight: 600; font-size: 1.1rem; color: #1d4ed8; text-decoration: none; }
li.page a.title:hover { text-decoration: underline; }
.summary { margin: .3rem 0; } .meta { font-size: .85rem; color: #6b7280; }
.meta a { color: #6b7280; } .number { color: #9ca3af; margin-right: .4rem; }
footer { margin-top: 3rem; font-size: .85rem; color: #6b7280; }
"""


def _page_item(entry, number: str = "") -> str:
    kind = "cheat sheet" if entry.kind == "cheatsheet" else "notebook"
    topics = ", ".join(t.replace("_", " ") for t in entry.topics)
    num = f'<span class="number">{html.escape(number)}</span>' if number else ""
    return (
        f'<li class="page" id="{html.escape(entry.id)}">{num}'
        f'<a class="title" href="{html.escape(toc.link(entry.id, from_id="index", mode="site"))}">'
        f"{html.escape(entry.title)}</a>\n"
        f'  <p class="summary">{html.escape(entry.summary)}</p>\n'
        f'  <p class="meta">{kind} · {html.escape(topics)} · '
        f'<a class="static" href="{html.escape(static_path(entry.id))}">static page</a> · '
        f"source <code>{html.escape(entry.path)}</code></p></li>"
    )


def index_html(marimo_version: str, wheel: str | None) -> str:
    notebooks = "\n".join(_page_item(e, e.id.split("_")[0]) for e in toc.notebooks())
    sheets = "\n".join(_page_item(e) for e in toc.cheatsheets())
    wheel_note = f" The engine ships to the browser as <code>{html.escape(wheel)}</code>." if wheel else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(SITE_TITLE)}</title>
<style>{INDEX_CSS}</style>
</head>
<body>
<h1>{html.escape(SITE_TITLE)}</h1>
<p class="lead">An interactive deep-learning course: {len(toc.notebooks())} notebooks and
{len(toc.cheatsheets())} cheat sheets, computed by a small NumPy autograd engine written for
the course, with PyTorch's names.</p>
<p>Each title opens the interactive page: Python runs in your browser (WebAssembly, Pyodide
{PYODIDE_VERSION}); the first visit downloads the runtime, later pages reuse it. "Static page"
opens a copy with the notebook's code and the outputs computed when the site was built: it loads
at once and needs no Python, but its controls do not recompute anything.</p>
<h2>Notebooks</h2>
<ol class="notebooks">
{notebooks}
</ol>
<h2>Cheat sheets</h2>
<ul class="sheets">
{sheets}
</ul>
<footer>Built with marimo {html.escape(marimo_version)}.{wheel_note}
To run the course locally with full speed: <code>make run</code> in the repository.</footer>
</body>
</html>
"""


# ----------------------------------------------------------------------------- build
def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def page_wheels(out: Path, entry) -> dict[str, Path]:
    """The wheels a built WASM page asks for, resolved as the browser does (from ./assets/)."""
    page = out / wasm_path(entry.id)
    requirements = wheel_requirements(embedded_notebook(page.read_text(encoding="utf-8")))
    base = page.parent / "assets" / "x"  # the Pyodide worker script's location
    return {name: Path(os.path.normpath(base.parent / urllib.parse.unquote(url))) for name, url in requirements.items()}


def select_entries(only, allow_missing: bool) -> tuple[list, list]:
    """The table of contents' pages to build (all, or the ``only`` ids) and the listed files missing."""
    entries = [e for e in toc.entries() if not only or e.id in only]
    unknown = set(only or ()) - {e.id for e in toc.entries()}
    if unknown:
        raise SystemExit(f"build_site: unknown page id(s) {sorted(unknown)}")
    missing = [e.path for e in entries if not (ROOT / e.path).is_file()]
    if missing and not allow_missing:
        raise SystemExit(
            "build_site: pages listed in engine/course/toc.py are missing: "
            + ", ".join(missing)
            + " (--allow-missing builds the others)"
        )
    return [e for e in entries if (ROOT / e.path).is_file()], missing


def _path_with_venv() -> str:
    """PATH with this Python's bin/ first: marimo runs ``uv`` from PATH."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def require_uv() -> None:
    if shutil.which("uv", path=_path_with_venv()) is None:
        raise SystemExit("build_site: uv is needed by `marimo export html-wasm` (pip install uv)")


def export_env(lock_file: Path) -> dict:
    """The exports' environment: Pyodide's lock file for marimo's pins, and ``uv`` reachable."""
    require_uv()
    env = dict(os.environ, MARIMO_PYODIDE_LOCK_FILE=str(lock_file), PATH=_path_with_venv())
    uv = Path(sys.executable).parent / "uv"
    if uv.is_file():
        env.setdefault("UV", str(uv))
    return env


def fresh_out(out: Path) -> None:
    """Empty the output folder, refusing to delete anything this script did not build."""
    if out.exists():
        if out == ROOT or ROOT.is_relative_to(out) or (any(out.iterdir()) and not (out / "site.json").is_file()):
            raise SystemExit(f"build_site: refusing to replace {out}: not a site this script built")
        shutil.rmtree(out)
    out.mkdir(parents=True)


def export_pages(entries, out: Path, env: dict, jobs: int, static: bool) -> list:
    """Every page's WebAssembly export (and static export), ``jobs`` at a time; their Results."""
    folder_locks = {folder: threading.Lock() for folder in ("notebooks", "cheatsheets")}
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(export_wasm, e, out, env, folder_locks[e.path.split("/")[0]]) for e in entries]
            if static:
                futures += [pool.submit(export_static, e, out, env) for e in entries]
            results = [f.result() for f in futures]
    finally:
        shutil.rmtree(STAGE_DIR, ignore_errors=True)
    for r in sorted(results, key=lambda r: (r.kind, r.id)):
        print(f"  {r.kind:6s} {r.id:22s} {r.seconds:6.1f} s{'  FAILED' if r.errors else ''}")
    return results


def check_wheels(out: Path, entries) -> tuple[set, list]:
    """The engine wheels the built pages name, and a failed Result for each page naming none."""
    wheels, failures = set(), []
    for e in entries:
        if not (out / wasm_path(e.id)).is_file():
            continue
        found = page_wheels(out, e)
        if "engine" not in found or not found["engine"].is_file():
            failures.append(
                Result(e.id, "wheel", errors=[f"{wasm_path(e.id)} does not name an existing engine wheel: {found}"])
            )
        else:
            wheels.add(found["engine"].name)
    if len(wheels) > 1:
        # Each page bundles only the engine modules it reaches; engine/__init__.py and
        # engine/course/__init__.py must import every submodule for the pages to share one wheel.
        print(
            f"build_site: warning: the pages bundle {len(wheels)} different engine wheels "
            f"({', '.join(sorted(wheels))}); engine/__init__.py and engine/course/__init__.py should "
            "import every submodule"
        )
    return wheels, failures


def write_index_and_manifest(out: Path, entries, wheels: set, missing: list, static: bool) -> None:
    """``index.html`` (the home page), ``site.json`` (what the tests read) and ``.nojekyll``."""
    import marimo

    (out / ".nojekyll").touch()
    wheel = sorted(wheels)[0] if len(wheels) == 1 else None
    (out / "index.html").write_text(index_html(marimo.__version__, wheel), encoding="utf-8")
    manifest = {
        "marimo": marimo.__version__,
        "pyodide": PYODIDE_VERSION,
        "wasm_dependencies": list(WASM_DEPENDENCIES),
        "engine_wheels": sorted(wheels),
        "pages": [
            {
                "id": e.id,
                "kind": e.kind,
                "title": e.title,
                "source": e.path,
                "wasm": wasm_path(e.id),
                "static": static_path(e.id) if static else None,
            }
            for e in entries
        ],
        "missing": missing,
    }
    (out / "site.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def build(out: Path, only=None, jobs: int = 2, allow_missing: bool = False, static: bool = True) -> int:
    """Build the site into ``out``; 0 when every export succeeded, 1 otherwise (failures on stderr)."""
    started = time.monotonic()
    entries, missing = select_entries(only, allow_missing)
    env = export_env(ensure_pyodide_lock())
    fresh_out(out)
    results = export_pages(entries, out, env, jobs, static)
    wheels, wheel_failures = check_wheels(out, entries)
    write_index_and_manifest(out, entries, wheels, missing, static)

    print(
        f"site: {len(entries)} pages ({len(missing)} missing) in {out}, "
        f"{folder_size(out) / 2**20:.1f} MiB, built in {time.monotonic() - started:.0f} s"
    )
    failures = [r for r in results if r.errors] + wheel_failures
    if failures:
        for r in failures:
            print(f"\n--- {r.kind} {r.id}:\n" + "\n".join(r.errors), file=sys.stderr)
        print(f"build_site: {len(failures)} export(s) failed", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_site", help="output folder (_site)")
    parser.add_argument("--only", nargs="+", metavar="ID", help="build only these page ids")
    parser.add_argument("--jobs", type=int, default=2, help="exports run at once (2)")
    parser.add_argument(
        "--allow-missing", action="store_true", help="build the pages that exist when some listed pages are missing"
    )
    parser.add_argument("--no-static", dest="static", action="store_false", help="skip the static (non-WASM) exports")
    parser.add_argument(
        "--tools-only", action="store_true", help="only fetch the Pyodide lock file (npm) and check for uv, then stop"
    )
    args = parser.parse_args(argv)
    if args.tools_only:
        print(f"Pyodide lock file: {ensure_pyodide_lock()}")
        require_uv()
        return 0
    out = args.out if args.out.is_absolute() else Path.cwd() / args.out
    return build(out, only=args.only, jobs=args.jobs, allow_missing=args.allow_missing, static=args.static)


if __name__ == "__main__":
    sys.exit(main())
