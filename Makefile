# The course's commands. Everything runs inside ./.venv, created on first use.
#
#   make run     serve every notebook and cheat sheet (marimo gallery) on http://127.0.0.1:2718
#   make edit    open the notebooks in marimo's editor (NB=notebooks/01_activations.py for one)
#   make test    install the test tools into .venv and run the suite but its slow tier (< 15 min on 2 cores)
#   make test-fast  the library and the course layer: every gradient and PyTorch check (< 2 min)
#   make test-slow  the slow tier: checkpoint retraining, headless runs and exports, site, browser
#   make test-all   both tiers: what CI runs
#   make lint    ruff check (pyflakes, pycodestyle's errors, import order) and ruff format --check
#   make bench   engine vs NumPy vs PyTorch timings, at 1 and 2 threads (median of 30 samples)
#   make bench-ui  time each page and control in Chromium under marimo run and edit (BENCH_UI_ARGS=...)
#   make check   marimo's linter, strict, over every notebook and cheat sheet
#   make checkpoints  retrain the trained default models the notebooks ship (engine/course/checkpoints/)
#   make site    build the static site into _site/ (WebAssembly pages + static exports + index)
#   make serve-site  serve _site/ on http://127.0.0.1:8000 (SITE_PORT=...)
#
# torch is never installed here: it is the test oracle, installed by .ci/run (or by hand with
# `.venv/bin/pip install torch==2.13.0`); without it the oracle tests skip with a reason.

PYTHON ?= python3
VENV   ?= .venv
HOST   ?= 127.0.0.1
PORT   ?= 2718
NB     ?=
PYTEST_ARGS ?=
SITE_DIR  ?= _site
SITE_PORT ?= 8000
SITE_ARGS ?=

BIN := $(VENV)/bin

# The course's models are small: one BLAS thread per process avoids OpenBLAS threads spinning
# against each other (and against other sessions) on a busy machine. `make bench` sets its own.
run edit test test-fast test-slow test-all site: export OPENBLAS_NUM_THREADS ?= 1
run edit test test-fast test-slow test-all site: export OMP_NUM_THREADS ?= 1
# Stamps: reinstall only when pyproject.toml changes.
INSTALLED      := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.installed-test
# The folders that exist (git keeps no empty folder; a fresh clone may lack one for a while).
NOTEBOOK_DIRS  := $(wildcard notebooks cheatsheets)

.PHONY: help venv install run edit test test-fast test-slow test-all test-tools lint bench bench-ui check checkpoints site site-tools serve-site clean

help:
	@sed -n 's/^#   //p' Makefile

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

venv: $(BIN)/python

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e .
	@touch $@

install: $(INSTALLED)

run: install
	@test -n "$(NOTEBOOK_DIRS)" || { echo "make run: no notebooks/ or cheatsheets/ folder"; exit 1; }
	@echo "Serving the course at http://$(HOST):$(PORT)  (Ctrl-C to stop)"
	$(BIN)/marimo run $(NOTEBOOK_DIRS) --host $(HOST) --port $(PORT) --headless --no-token --no-sandbox

edit: install
	$(BIN)/marimo edit $(NB) --host $(HOST) --port $(PORT) --no-sandbox

$(TEST_INSTALLED): pyproject.toml $(INSTALLED)
	$(BIN)/pip install -e '.[test]'
	@touch $@

test-tools: $(TEST_INSTALLED)

# The tiers are pytest markers, written in the tests themselves (pyproject.toml lists them):
# `slow` marks what takes seconds a test (retraining, a notebook run in a subprocess, an export,
# a browser). TESTS narrows any tier to some files: make test TESTS=tests/engine/test_tensor.py
TESTS ?=
FAST_TESTS := tests/engine tests/course tests/test_repo.py tests/test_torch_imports.py
# pytest exits with 5 when it collects no test; that is not a failure of the repository.
define pytest_tier
	@$(BIN)/python -m pytest $(1) $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest: no tests collected"; exit 0; fi; exit $$status
endef

# The tiers run on every core (pytest-xdist; TEST_JOBS=1 for one process): the in-process tests
# are CPU-bound Python on one BLAS thread each. The slow tier's tests start servers, browsers and
# exports of their own; they go to the workers a file at a time (one server per test module), and
# the workers share one site build (tests/support/site_build.py).
TEST_JOBS ?= auto
test: test-tools
	$(call pytest_tier,-n $(TEST_JOBS) -m "not slow" $(TESTS))

test-fast: test-tools
	$(call pytest_tier,-n $(TEST_JOBS) -m "not slow and not browser" $(or $(TESTS),$(FAST_TESTS)))

test-slow: test-tools
	$(call pytest_tier,-n $(TEST_JOBS) --dist loadfile -m slow $(TESTS))

test-all: test-tools
	$(call pytest_tier,$(TESTS))

lint: test-tools
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python -m benchmarks.run

# Chromium + Playwright (the test tools) time every page's first run and every control's update.
BENCH_UI_ARGS ?=
bench-ui: test-tools
	$(BIN)/python -m benchmarks.bench_ui $(BENCH_UI_ARGS)

check: install
	@test -n "$(NOTEBOOK_DIRS)" || { echo "make check: no notebooks/ or cheatsheets/ folder"; exit 1; }
	$(BIN)/marimo check --strict $(NOTEBOOK_DIRS)

# Each lab's CHECKPOINTS, trained from fixed seeds (NAMES="a b" for some): see engine/course/checkpoints/.
NAMES ?=
checkpoints: install
	$(BIN)/python scripts/make_checkpoints.py $(NAMES)

# `marimo export html-wasm` finds the notebooks' local modules with uv (from PyPI).
$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install uv

# The pages listed in engine/course/toc.py as WebAssembly pages + static exports + index.html.
# Needs npm once (the Pyodide lock file, pyodide@314.0.0, goes to build/pyodide/).
site-tools: install $(BIN)/uv
	$(BIN)/python scripts/build_site.py --tools-only

site: site-tools
	$(BIN)/python scripts/build_site.py --out $(SITE_DIR) $(SITE_ARGS)

serve-site:
	@test -f $(SITE_DIR)/index.html || { echo "make serve-site: no $(SITE_DIR)/index.html; run make site first"; exit 1; }
	@echo "Serving $(SITE_DIR) at http://$(HOST):$(SITE_PORT)  (Ctrl-C to stop)"
	$(BIN)/python -m http.server $(SITE_PORT) --bind $(HOST) --directory $(SITE_DIR)

# Caches and build output only; `rm -rf .venv` by hand to start from scratch.
clean:
	rm -rf .pytest_cache .hypothesis build _site *.egg-info
