"""Write the course's shipped checkpoints (``make checkpoints``): see engine/course/checkpoints/.

    python scripts/make_checkpoints.py             # every checkpoint the labs declare
    python scripts/make_checkpoints.py NAME ...    # only these
    python scripts/make_checkpoints.py --list

Each checkpoint is trained by its lab's own function (fixed seed, default settings) and written
as ``engine/course/checkpoints/<name>.py``. Run it after changing a lab's default model or its
training code; tests/course/test_checkpoints.py fails until the shipped file matches again.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import importlib.util
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine  # noqa: E402
from engine.course import checkpoints  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=None)
def notebook_module(notebook: str):
    """``notebooks/<notebook>.py`` imported as a module: its setup cell runs, and its
    ``@app.function`` / ``@app.class_definition`` cells become the module's functions and classes
    (a file named ``08_vae.py`` cannot be imported by name)."""
    path = ROOT / "notebooks" / f"{notebook}.py"
    name = f"notebook_{notebook}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # registered before it runs: marimo keeps an @app.class_definition cell only when the class's
    # module can be found, and inspect reads a class's source through sys.modules
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def made_by(lab: str, train) -> str:
    """What a checkpoint's MADE_BY records: the notebook function or the lab function."""
    if isinstance(train, checkpoints.FromNotebook):
        return train.__name__
    return f"{lab}.{train.__name__}"


def recipe(train):
    """``(zero-argument function returning the state, fingerprint or None)`` for a declaration."""
    if isinstance(train, checkpoints.FromNotebook):
        module = notebook_module(train.notebook)
        code = [getattr(module, name) for name in train.code]
        return getattr(module, train.function), checkpoints.code_fingerprint(*code)
    return train, None


def retrain_archive(name: str) -> bytes:
    """Checkpoint ``name`` trained again, as the engine.save archive that ``make checkpoints`` would
    write (a function of this module so that tests can run it in worker processes)."""
    _, train = checkpoints.registry()[name]
    function, _ = recipe(train)
    buffer = io.BytesIO()
    engine.save(function(), buffer)
    return buffer.getvalue()


def module_text(name: str, state, made_by: str, fingerprint: str | None = None) -> str:
    """The source of checkpoint module ``name`` holding ``state`` (what :func:`write` writes)."""
    buffer = io.BytesIO()
    engine.save(state, buffer)
    blob = buffer.getvalue()
    # Double-quoted (json.dumps of ASCII text is a Python string literal): the module is already in
    # ruff's format, which `make lint` checks.
    fingerprint_line = f"FINGERPRINT = {json.dumps(fingerprint)}\n" if fingerprint else ""
    return (
        f'"""Checkpoint `{name}`: the state {made_by}() returns, saved with engine.save.\n\n'
        "Written by `make checkpoints` (scripts/make_checkpoints.py); do not edit by hand.\n"
        "tests/course/test_checkpoints.py retrains it and compares. See __init__.py for why it is a\n"
        'Python module.\n"""\n\n'
        f"MADE_BY = {json.dumps(made_by)}\n"
        f"{fingerprint_line}"
        f"SIZE = {len(blob)}\n"
        f"SHA256 = {json.dumps(hashlib.sha256(blob).hexdigest())}\n"
        f"ARCHIVE = {json.dumps(base64.b64encode(blob).decode('ascii'))}\n"
    )


def write(name: str, state, made_by: str, folder: Path = checkpoints.FOLDER, fingerprint: str | None = None) -> Path:
    """Write checkpoint module ``name`` into ``folder``; returns its path."""
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"checkpoint name {name!r} must be a public Python identifier (it names a module)")
    path = folder / f"{name}.py"
    path.write_text(module_text(name, state, made_by, fingerprint), encoding="utf-8")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="checkpoint names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the declared checkpoints and exit")
    args = parser.parse_args(argv)
    found = checkpoints.registry()
    if args.list:
        for name, (lab, train) in sorted(found.items()):
            print(f"{name:32s} {made_by(lab, train)}")
        return 0
    unknown = sorted(set(args.names) - set(found))
    if unknown:
        parser.error(f"no lab declares {', '.join(unknown)}; declared: {', '.join(sorted(found)) or 'none'}")
    for name in args.names or sorted(found):
        lab, train = found[name]
        started = time.perf_counter()
        function, fingerprint = recipe(train)
        path = write(name, function(), made_by=made_by(lab, train), fingerprint=fingerprint)
        print(
            f"{name}: {time.perf_counter() - started:.1f} s, {path.stat().st_size / 1024:.0f} KiB -> "
            f"{path.relative_to(checkpoints.FOLDER.parents[2])}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
