# The two commands a new user runs: `make run` and `make test`. Each sets itself up from scratch.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run lint test test-all bench docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip >/dev/null

# make test: the package with the test extra (peers, docs tools, linters)
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -e ".[test]"
	touch $(STAMP) $(RUN_STAMP)

# make run: the package and what its figure needs (the plot extra), nothing else
$(RUN_STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -e ".[plot]"
	touch $(RUN_STAMP)

# prints the report of the built-in plan (src/dpamp/data/default_plan.toml) and writes its
# figure (epsilon against steps, every method) next to it: dpamp-report.png
run: $(RUN_STAMP)
	$(VENV)/bin/dpamp report --plot dpamp-report.png

# the linter and the type checker ([tool.ruff], [tool.mypy] in pyproject.toml): make test runs
# them first and stops on their errors
lint: $(STAMP)
	$(PY) -m ruff check src tests
	$(PY) -m mypy

# two workers (pytest-xdist): the default run is ~790 s of CPU, ~430 s on two cores
WORKERS ?= 2

test: lint
	$(PY) -m pytest -n $(WORKERS)

# every test, the ones marked slow too (the big cases: batteries, peers at scale)
test-all: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) -m "slow or not slow"

bench: $(STAMP)
	$(PY) benchmarks/bench_rdp.py
	$(PY) benchmarks/bench_pld.py
	$(PY) benchmarks/bench_sweep.py

# the documentation site (mkdocs.yml): API pages from the docstrings, guides, papers; into site/
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build site src/*.egg-info
