# openseal — every set-up step lives here so a fresh machine needs only Python and make.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: help install quickstart validate test test-slow test-all check fmt lint typecheck schemas errors sql golden bench console-screenshots clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# pip shows each package as it is fetched and built: the first install takes minutes and
# should not look stuck
$(STAMP): pyproject.toml
	@echo "installing openseal and its test extra into $(VENV) (a few minutes the first time)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --progress-bar on -e '.[test]'
	@touch $(STAMP)
	@echo "installed: $(BIN)/openseal"

install: $(STAMP)  ## create .venv and install openseal with the test extra

quickstart: $(STAMP)  ## the procurement example end to end on the embedded default (openseal quickstart)
	$(BIN)/openseal quickstart

validate: $(STAMP)  ## validate the example definitions
	$(BIN)/openseal validate definitions/

test: $(STAMP)  ## run the test suite, without the tests marked slow
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

test-slow: $(STAMP)  ## run the slow tests: real processes killed mid-flight, the browser, big inputs
	$(BIN)/pytest -m slow $(PYTEST_ARGS)

test-all: $(STAMP)  ## run every test, as CI does
	$(BIN)/pytest $(PYTEST_ARGS)

fmt: $(STAMP)  ## format the code
	$(BIN)/ruff format openseal tests bench
	$(BIN)/ruff check --fix openseal tests bench

lint: $(STAMP)  ## format check and lint
	$(BIN)/ruff format --check openseal tests bench
	$(BIN)/ruff check openseal tests bench

typecheck: $(STAMP)  ## mypy, strict
	$(BIN)/mypy

check: lint typecheck test  ## format check + lint + types + tests

schemas: $(STAMP)  ## regenerate schemas/ from the models
	$(BIN)/openseal schema --out schemas/

errors: $(STAMP)  ## regenerate the code tables of docs/errors.md from openseal/error_codes.py
	$(BIN)/python -m openseal.error_codes docs/errors.md

sql: $(STAMP)  ## regenerate the SQL the store reads without SQLAlchemy (openseal/runtime/store/tables/sqlite_sql.py)
	$(BIN)/python -m openseal.runtime.store.tables.prepared_reads
	$(BIN)/ruff format openseal/runtime/store/tables/sqlite_sql.py

golden: $(STAMP)  ## regenerate tests/golden/ (review the diff before committing)
	OPENSEAL_UPDATE_GOLDEN=1 $(BIN)/pytest -q tests -k golden

console-screenshots: $(STAMP)  ## regenerate the console's screenshots in docs/images (needs chromium)
	$(BIN)/python -m tests.console.screenshots docs/images

bench: $(STAMP)  ## run the benchmarks
	$(BIN)/python -m bench

clean:  ## remove the virtual environment and caches
	rm -rf $(VENV) .openseal build .pytest_cache .mypy_cache .ruff_cache
