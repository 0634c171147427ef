"""The repository's promises: dependencies, `make run`, CI, benchmarks (a NumPy-only `engine`:
tests/engine/test_layers.py)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import textwrap
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
from browser_tools import stop_process_group

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
RUNTIME_DEPENDENCIES = {"marimo==0.25.2", "numpy", "pillow", "altair>=6,<7", "matplotlib>=3,<4"}
# The widgets of issue 15, pinned exactly (the WebAssembly pages copy these pins).
WIDGET_DEPENDENCIES = {"wigglystuff==0.5.36", "anywidget==0.11.0", "drawdata==0.5.2"}


# ----------------------------------------------------------------------------- pyproject.toml
def test_runtime_dependencies_are_exactly_the_listed_ones():
    """An unlisted addition fails here: add it to the sets above only with a reason in pyproject."""
    dependencies = PYPROJECT["project"]["dependencies"]
    assert sorted(dependencies) == sorted(RUNTIME_DEPENDENCIES | WIDGET_DEPENDENCIES)
    assert len(dependencies) == len(set(dependencies))


def test_every_widget_dependency_is_pinned_with_a_written_reason():
    """Each widget requirement is `==`-pinned and the line above it in pyproject.toml is a comment."""
    lines = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    for requirement in WIDGET_DEPENDENCIES:
        assert "==" in requirement
        row = lines.index(f'    "{requirement}",')
        assert lines[row - 1].strip().startswith("#"), f"{requirement} has no reason above it"


def test_python_version_and_import_package():
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["engine", "engine.*"]


def test_torch_is_only_a_test_oracle_never_a_requirement():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"pytest", "hypothesis", "playwright"} <= set(extras["test"])
    every_requirement = PYPROJECT["project"]["dependencies"] + [r for e in extras.values() for r in e]
    assert not [r for r in every_requirement if r.lower().startswith("torch")]


def test_marimo_finds_engine_and_pytest_knows_the_markers():
    assert PYPROJECT["tool"]["marimo"]["runtime"]["pythonpath"] == ["."]
    pytest_options = PYPROJECT["tool"]["pytest"]["ini_options"]
    assert pytest_options["testpaths"] == ["tests"]
    declared = {marker.split(":")[0] for marker in pytest_options["markers"]}
    assert {"oracle", "browser", "slow"} <= declared


# ----------------------------------------------------------------------------- make run
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _make_dry_run(target: str, *variables: str) -> str:
    result = subprocess.run(
        ["make", "-n", target, f"VENV={sys.prefix}", *variables],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_targets_exist():
    for target in ("run", "edit", "test", "bench", "check", "install"):
        _make_dry_run(target)
    assert "benchmarks.run" in _make_dry_run("bench")
    assert "pytest" in _make_dry_run("test")
    assert "ruff check" in _make_dry_run("lint")


def test_the_test_tiers_are_markers_and_the_readme_names_each():
    """make test leaves out the slow tier, test-slow runs only it, test-fast the library and labs."""
    assert '-m "not slow"' in _make_dry_run("test")
    assert "-m slow" in _make_dry_run("test-slow")
    fast = _make_dry_run("test-fast")
    assert '-m "not slow and not browser"' in fast and "tests/engine" in fast and "tests/notebooks" not in fast
    assert "-m" not in _make_dry_run("test-all").split("pytest", 1)[1]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in ("make test-fast", "make test", "make test-slow", "make test-all"):
        assert f"`{target}`" in readme


@pytest.mark.slow
def test_make_run_serves_the_gallery_on_localhost_only():
    port = _free_port()
    command = next(line for line in _make_dry_run("run", f"PORT={port}").splitlines() if "marimo run" in line)
    folders = [name for name in ("notebooks", "cheatsheets") if (ROOT / name).is_dir()]
    if not folders:
        pytest.fail("neither notebooks/ nor cheatsheets/ exists: nothing for `make run` to serve")
    assert f"marimo run {' '.join(folders)} " in command and "--host 127.0.0.1" in command
    server = subprocess.Popen(
        shlex.split(command),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, server.stdout.read().decode(errors="replace")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    assert response.status == 200
                    assert "marimo" in response.read().decode(errors="replace").lower()
                    break
            except OSError:
                assert time.monotonic() < deadline, "marimo run did not answer within 90 s"
                time.sleep(0.5)
        psutil = pytest.importorskip("psutil")
        listening = {
            c.laddr.ip
            for c in psutil.Process(server.pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        }
        assert listening == {"127.0.0.1"}, f"marimo listens on {listening}"
    finally:
        stop_process_group(server)


# ----------------------------------------------------------------------------- CI script
def test_ci_script_requires_every_tool():
    script = ROOT / ".ci" / "run"
    assert os.access(script, os.X_OK), ".ci/run must be executable"
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    text = script.read_text(encoding="utf-8")
    assert "set -euo pipefail" in text
    assert "pip install torch==2.13.0" in text
    assert "apt-get install -y" in text and "chromium" in text
    assert "REQUIRE_ORACLE=1 REQUIRE_BROWSER=1 make test" in text
    assert "REQUIRE_ORACLE=1 REQUIRE_BROWSER=1 make test-slow" in text
    # a learner's machine: no PyTorch (before torch is installed), and another CPU's BLAS kernel
    assert text.index("make test-fast") < text.index("pip install torch==2.13.0")
    assert "export OPENBLAS_CORETYPE=SandyBridge" in text
    assert text.index("make lint") < text.index("make test-fast")  # the linter before any test


# ----------------------------------------------------------------------------- benchmarks
BENCH_MODULE = textwrap.dedent(
    """
    import time
    from benchmarks.run import Case

    def sleeper(seconds):
        return lambda: (lambda: time.sleep(seconds))

    def broken():
        raise RuntimeError("setup failed on purpose")

    CASES = [
        Case("fast engine", engine=sleeper(0.001), numpy=sleeper(0.004)),
        Case("broken column", engine=broken, numpy=sleeper(0.001)),
    ]
    """
)


def test_benchmark_runner_times_every_column_and_reports_errors(tmp_path):
    from benchmarks import run

    (tmp_path / "bench_fake.py").write_text(BENCH_MODULE)
    (tmp_path / "helper.py").write_text("CASES = 1 / 0  # not a bench_ module: never imported\n")
    cases = run.discover(tmp_path)
    assert [case.name for _, case in cases] == ["fast engine", "broken column"]

    errors: list[str] = []
    fast = run.measure_case(cases[0][1], repeat=3, min_time=0.005, warmup=1, errors=errors)
    assert 0.0009 < fast["engine"].seconds < fast["numpy"].seconds
    assert fast["torch"].seconds is None and fast["torch"].note == "n/a"
    broken = run.measure_case(cases[1][1], repeat=2, min_time=0.002, warmup=1, errors=errors)
    assert broken["engine"].note == "error" and broken["numpy"].seconds is not None
    assert len(errors) == 1 and "setup failed on purpose" in errors[0]

    table = run.format_table([("fast engine", fast), ("broken column", broken)])
    lines = table.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == [
        "case",
        "engine ms",
        "numpy ms",
        "torch ms",
        "engine/numpy",
        "engine/torch",
    ]
    ratio = fast["engine"].seconds / fast["numpy"].seconds
    assert f"{ratio:.2f}x" in lines[2]
    assert "error" in lines[3]


# ----------------------------------------------------------------------------- README
def test_readme_links_every_page_of_the_course():
    """The README's course table links each notebook and cheat sheet that engine.course.toc lists."""
    import re

    from engine.course import toc

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(((?:notebooks|cheatsheets)/[^)]+\.py)\)", readme))
    listed = {entry.path for entry in toc.entries()}
    assert linked == listed, f"missing from README: {listed - linked}; unknown: {linked - listed}"


# ----------------------------------------------------------------------------- public names
def test_every_module_names_each_public_name_once_and_defines_it():
    """``__all__`` of every module of the library and the course layer: no name twice (07's lab
    listed one twice), none it does not define (a `from module import *` would fail on it)."""
    import importlib
    import pkgutil
    from collections import Counter

    import engine

    found = []
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", ())
        found += [f"{info.name}: {n} listed twice" for n, k in Counter(names).items() if k > 1]
        found += [f"{info.name}: {n} not defined" for n in names if not hasattr(module, n)]
    assert not found, found
