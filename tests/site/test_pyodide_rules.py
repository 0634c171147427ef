"""The engine runs in the browser (Pyodide): a static check of the whole package.

Pyodide is CPython compiled to WebAssembly, in one thread of a browser tab. What works on a
laptop but not there: threads and processes, sockets, shelling out, native extensions that are not
in Pyodide's distribution, and writing files outside the virtual file system that the page
provides. The rules, checked on every file of ``engine/`` by reading its syntax tree:

1. pure Python: no compiled or to-be-compiled files (.so, .pyd, .c, .pyx, ...);
2. no import of threading, multiprocessing, concurrent, subprocess, socket, signal, ctypes, ...,
   nor of a standard module Pyodide leaves out (tkinter, curses, readline, ...); one exception,
   ``engine/ops/_parallel.py`` may import threading and concurrent.futures (both import under
   Pyodide): it starts no thread there (``sys.platform == "emscripten"``); and
   ``engine/_memory.py`` may import ctypes, inside a function that returns before it anywhere but
   Linux (tests/engine/test_memory.py);
3. no ``os.system``/``os.popen``/``os.fork``/``os.exec*``/``os.spawn*``/``os.kill``;
4. third-party packages: NumPy at module level, and nothing else there; inside functions, only
   where ``LAZY_ALLOWED`` lists them: Altair, Matplotlib and Pillow in
   ``engine.course.plot`` (charts, colour maps, images) and Matplotlib and Pillow in
   ``engine.course.widgets`` (the pucks' background, a drawing), all three from Pyodide's lock;
   ``engine.course.plot``, ``engine.course.toc`` and ``engine.course.ui`` may import marimo
   (the runtime); ``engine.course.widgets`` marimo, anywidget, wigglystuff and drawdata
   (pure-Python wheels the page's header pins); the optional PyTorch column of the
   formula sheets imports torch inside functions of
   ``engine/course/formulas/evaluate.py`` only.
   Every package the engine imports is one that Pyodide ships (its lock file says so), marimo aside;
5. no file writes (``open`` for writing, ``write_text``, ``np.save``, ``savefig`` to a path,
   ``os.remove``, ``tempfile``, ``shutil``, ...) except in ``engine/io.py``, the save/load module,
   whose files go to the browser's virtual file system.

The checker itself is tested on small bad sources, so it can fail.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"

FORBIDDEN_MODULES = {
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "subprocess",
    "socket",
    "socketserver",
    "ssl",
    "select",
    "selectors",
    "signal",
    "ctypes",
    "mmap",
    "pty",
    "tty",
    "termios",
    "fcntl",
    "resource",
    "asyncio",
    "http",
    "urllib.request",
    "ftplib",
    "smtplib",
    "telnetlib",
    "xmlrpc",
    "webbrowser",
    "sched",
}
NOT_IN_PYODIDE = {  # standard modules Pyodide's CPython does not ship
    "tkinter",
    "turtle",
    "turtledemo",
    "curses",
    "readline",
    "dbm",
    "idlelib",
    "ensurepip",
    "venv",
    "lib2to3",
    "grp",
    "pwd",
    "syslog",
    "crypt",
    "nis",
    "spwd",
    "ossaudiodev",
    "winreg",
    "winsound",
    "msvcrt",
}
PROCESS_CALLS = {
    "system",
    "popen",
    "fork",
    "forkpty",
    "kill",
    "killpg",
    "execv",
    "execve",
    "execl",
    "execlp",
    "execvp",
    "execvpe",
    "execle",
    "execlpe",
    "spawnl",
    "spawnle",
    "spawnv",
    "spawnve",
    "spawnlp",
    "spawnvp",
    "posix_spawn",
    "posix_spawnp",
    "startfile",
}
# Methods that write whatever object they are called on (Path, ndarray, np).
WRITE_METHODS = {
    "write_text",
    "write_bytes",
    "tofile",
    "savetxt",
    "savez",
    "savez_compressed",
    "touch",
    "mkdir",
    "unlink",
    "symlink_to",
    "hardlink_to",
}
# os functions that change the file system (str.replace, list.remove are not writes: os. only).
OS_WRITES = {
    "remove",
    "unlink",
    "rename",
    "replace",
    "renames",
    "makedirs",
    "mkdir",
    "rmdir",
    "removedirs",
    "truncate",
    "chmod",
    "link",
    "symlink",
    "mkfifo",
    "write",
}
WRITE_MODULES = {"tempfile", "shutil"}
IO_MODULE = "engine/io.py"
# The modules that may import a forbidden module, each named: _parallel runs on one thread under
# Pyodide; _memory imports ctypes only on Linux (sys.platform is "emscripten" in the browser).
FORBIDDEN_ALLOWED = {
    "engine/ops/_parallel.py": {"threading", "concurrent.futures", "concurrent.futures.ThreadPoolExecutor"},
    "engine/_memory.py": {"ctypes"},
}
MODULE_LEVEL_THIRD_PARTY = {"numpy"}
LAZY_ALLOWED = {  # third-party packages imported inside functions, and where
    "PIL": {"engine/course/plot.py", "engine/course/widgets.py"},  # writes images, reads a drawing
    "altair": {
        "engine/course/plot.py",
        "engine/course/ui.py",  # charts; ui.chart's one conversion
        "engine/course/labs/optimizers.py",  # 04's surface map, built on its cached grid
        "engine/course/labs/activations.py",  # 01's decision-region images and dead-ReLU sweep
        "engine/course/labs/backprop.py",  # 03's class regions as one image
    },
    "matplotlib": {
        "engine/course/plot.py",
        "engine/course/widgets.py",  # charts; the pucks' background
        "engine/course/labs/backprop.py",  # matplotlib.colors.to_rgb for the regions image
    },
    "anywidget": {"engine/course/widgets.py"},
    "marimo": {
        "engine/course/plot.py",
        "engine/course/toc.py",
        "engine/course/ui.py",
        "engine/course/widgets.py",
        "engine/course/formulas/page.py",
    },  # a sheet's try-it panel and its tables
    "torch": {"engine/course/formulas/evaluate.py"},
    "wigglystuff": {"engine/course/widgets.py"},
    "drawdata": {"engine/course/widgets.py"},
}
IN_BROWSER_WITHOUT_LOCK = {"marimo"}  # the WASM runtime itself
# Pure-Python widget wheels Pyodide does not ship: micropip fetches them from PyPI at the versions
# pyproject.toml pins, which the site build writes into each page's header (issue 15).
FROM_PYPI_IN_BROWSER = {"wigglystuff", "drawdata", "anywidget"}
PACKAGE_OF = {"PIL": "pillow"}  # the name a page installs, where it differs from the import
OPTIONAL_OUTSIDE_BROWSER = {"torch"}  # guarded by torch_available(); absent in the browser


def _name(node) -> str:
    """Dotted name of an attribute chain (``np.save`` -> 'np.save'), '' otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _open_mode(call: ast.Call):
    """The mode of an ``open(...)`` call: a string, None when it cannot be known, 'r' by default."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return "r"
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return mode.value
    return None


def violations(relative: str, source: str) -> list[str]:
    """Every rule a source file breaks, as 'path:line: what'."""
    tree = ast.parse(source, relative)
    found = []
    stdlib = set(sys.stdlib_module_names)
    function_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            function_nodes.update(id(n) for n in ast.walk(node) if n is not node)

    def where(node):
        return f"{relative}:{getattr(node, 'lineno', '?')}"

    for node in ast.walk(tree):
        # Imports.
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            top = name.split(".")[0]
            if name in FORBIDDEN_ALLOWED.get(relative, ()):
                continue
            if name in FORBIDDEN_MODULES or top in FORBIDDEN_MODULES:
                found.append(f"{where(node)}: imports {name} (no threads, processes or sockets in the browser)")
            elif top in NOT_IN_PYODIDE:
                found.append(f"{where(node)}: imports {name}, which Pyodide does not ship")
            elif top in WRITE_MODULES and relative != IO_MODULE:
                found.append(f"{where(node)}: imports {name} (file writes belong in {IO_MODULE})")
            elif top in stdlib or top == "engine" or top == "__future__":
                continue
            elif top in MODULE_LEVEL_THIRD_PARTY:
                continue
            elif relative in LAZY_ALLOWED.get(top, ()):
                if id(node) not in function_nodes:
                    found.append(
                        f"{where(node)}: imports {top} at module level (import it inside the "
                        "function that needs it: `import engine` needs only NumPy)"
                    )
            else:
                found.append(f"{where(node)}: imports third-party {top} (the engine is pure Python over NumPy)")

        if not isinstance(node, ast.Call):
            continue
        callee = _name(node.func)
        last = node.func.attr if isinstance(node.func, ast.Attribute) else callee
        # Processes.
        if callee.startswith("os.") and last in PROCESS_CALLS:
            found.append(f"{where(node)}: calls {callee} (no processes in the browser)")
        if relative == IO_MODULE:
            continue
        # File writes.
        if last == "open" and callee in (
            "open",
            "io.open",
            "os.open",
            "os.fdopen",
            "gzip.open",
            "bz2.open",
            "lzma.open",
            "zipfile.ZipFile",
        ):
            mode = _open_mode(node)
            if callee == "os.open" or mode is None or any(c in mode for c in "wax+"):
                found.append(f"{where(node)}: {callee}(...) may write a file (writes belong in {IO_MODULE})")
        elif callee == "zipfile.ZipFile" or last == "ZipFile":
            mode = _open_mode(node)
            if mode is None or any(c in mode for c in "wax"):
                found.append(f"{where(node)}: writes a zip file (writes belong in {IO_MODULE})")
        elif isinstance(node.func, ast.Attribute) and last in WRITE_METHODS:
            found.append(
                f"{where(node)}: calls {callee or '...'}.{last}() (file writes belong in {IO_MODULE})"
                if not callee
                else f"{where(node)}: calls {callee} (file writes belong in {IO_MODULE})"
            )
        elif callee.startswith("os.") and last in OS_WRITES:
            found.append(f"{where(node)}: calls {callee} (file writes belong in {IO_MODULE})")
        elif callee in ("np.save", "numpy.save"):
            found.append(f"{where(node)}: calls {callee} (file writes belong in {IO_MODULE})")
        elif (
            last == "savefig"
            and node.args
            and not (isinstance(node.args[0], ast.Name) and "buf" in node.args[0].id.lower())
        ):
            target = node.args[0]
            if isinstance(target, (ast.Constant, ast.JoinedStr)) or "path" in ast.dump(target).lower():
                found.append(f"{where(node)}: savefig to a file (draw into a BytesIO instead)")
    return found


def engine_files() -> list[Path]:
    return sorted(ENGINE.rglob("*"))


def test_the_engine_is_pure_python():
    compiled = [
        p.relative_to(ROOT).as_posix()
        for p in engine_files()
        if p.is_file() and p.suffix in {".so", ".pyd", ".dll", ".dylib", ".c", ".cpp", ".pyx", ".pxd", ".f90"}
    ]
    assert not compiled, f"files that need compiling: {compiled}"
    assert (ENGINE / "__init__.py").is_file()
    assert len(list(ENGINE.rglob("*.py"))) > 10


def test_the_scan_covers_the_library_and_the_course_layer():
    scanned = {p.relative_to(ROOT).as_posix() for p in engine_files() if p.suffix == ".py"}
    for path in (
        "engine/tensor.py",
        "engine/course/toc.py",
        "engine/course/plot.py",
        "engine/course/ui.py",
        "engine/course/formulas/evaluate.py",
        "engine/course/labs/convolution.py",
    ):
        assert path in scanned, f"{path} is not scanned"
    for paths in LAZY_ALLOWED.values():
        assert all((ROOT / path).is_file() for path in paths), f"LAZY_ALLOWED names a missing file: {paths}"


def test_every_engine_file_follows_the_browser_rules():
    problems = []
    for path in engine_files():
        if path.suffix == ".py" and "__pycache__" not in path.parts:
            relative = path.relative_to(ROOT).as_posix()
            problems += violations(relative, path.read_text(encoding="utf-8"))
    assert not problems, "engine code that cannot run in Pyodide:\n" + "\n".join(problems)


def test_every_package_the_engine_imports_ships_with_pyodide():
    """numpy and PIL (pillow) are in the lock file of the Pyodide the site pins."""
    from site_build import build_site, require_site_tools

    require_site_tools()
    lock = json.loads(build_site.ensure_pyodide_lock().read_text())
    assert lock["info"]["python"].startswith("3.")
    shipped = {name for spec in lock["packages"].values() for name in spec.get("imports", [])}
    imported = MODULE_LEVEL_THIRD_PARTY | set(LAZY_ALLOWED)
    needed = imported - IN_BROWSER_WITHOUT_LOCK - OPTIONAL_OUTSIDE_BROWSER - FROM_PYPI_IN_BROWSER
    assert needed <= shipped, f"not in Pyodide {build_site.PYODIDE_VERSION}: {needed - shipped}"
    # The site's pages install exactly these (their PEP 723 header), the widgets at exact pins.
    assert set(build_site.WASM_DEPENDENCIES) == (
        {PACKAGE_OF.get(n, n) for n in needed} | set(build_site.WIDGET_DEPENDENCIES)
    )
    assert FROM_PYPI_IN_BROWSER <= {d.split("==")[0] for d in build_site.WIDGET_DEPENDENCIES}
    assert all("==" in d for d in build_site.WIDGET_DEPENDENCIES)


# ----------------------------------------------------------------------------- the checker itself
@pytest.mark.parametrize(
    "source, expected",
    [
        ("import threading", "no threads"),
        ("from concurrent.futures import ThreadPoolExecutor", "no threads"),
        ("import multiprocessing as mp", "no threads"),
        ("import subprocess\nsubprocess.run(['ls'])", "no threads"),
        ("import socket", "no threads"),
        ("from urllib.request import urlopen", "no threads"),
        ("import os\nos.system('ls')", "calls os.system"),
        ("import os\nos.popen('ls')", "calls os.popen"),
        ("import tkinter", "Pyodide does not ship"),
        ("import scipy", "third-party scipy"),
        ("import torch", "third-party torch"),
        ("import matplotlib.pyplot as plt", "third-party matplotlib"),
        ("open('x.txt', 'w').write('1')", "may write a file"),
        ("open(name, mode)", "may write a file"),
        ("with open(p, mode='a') as f: pass", "may write a file"),
        ("from pathlib import Path\nPath('x').write_text('1')", "write_text"),
        ("import numpy as np\nnp.save('x.npy', a)", "np.save"),
        ("import numpy as np\nnp.savez(path, a=a)", "np.savez"),
        ("import tempfile", "writes belong in engine/io.py"),
        ("import os\nos.remove(p)", "os.remove"),
        ("import os\nos.replace(a, b)", "os.replace"),
        ("arr.tofile('x.bin')", "arr.tofile"),
        ("fig.savefig('out.png')", "savefig to a file"),
    ],
)
def test_the_checker_catches(source, expected):
    found = violations("engine/example.py", source)
    assert any(expected in message for message in found), found


@pytest.mark.parametrize(
    "relative, source",
    [
        ("engine/example.py", "import numpy as np\nimport math, dataclasses\nfrom engine import nn"),
        ("engine/example.py", "with open(p) as f: f.read()\nopen(p, 'rb')"),
        ("engine/example.py", "name.replace('_', ' ')\nitems.remove(x)\ns.rename(columns=c)"),
        (
            "engine/course/widgets.py",
            "def read():\n    from PIL import Image\n    import anywidget\n"
            "    buf = io.BytesIO()\n    fig.savefig(buf, format='png')",
        ),
        ("engine/io.py", "import os, tempfile\nopen(p, 'wb')\nos.replace(a, b)"),
        ("engine/course/formulas/evaluate.py", "def f():\n    import torch"),
        ("engine/ops/_parallel.py", "import threading\nfrom concurrent.futures import ThreadPoolExecutor"),
    ],
)
def test_the_checker_allows(relative, source):
    assert violations(relative, source) == []


def test_the_thread_exception_names_its_modules_only():
    found = violations("engine/ops/_parallel.py", "import multiprocessing\nfrom concurrent import interpreters")
    assert len(found) == 3 and all("no threads" in message for message in found), found


def test_lazy_imports_must_stay_lazy():
    found = violations("engine/course/widgets.py", "from PIL import Image")
    assert any("at module level" in message for message in found), found
