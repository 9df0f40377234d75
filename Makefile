# Set-up and entry points. Every target installs what it needs into .venv first.
#   make demo   - fit the two-moons demo, print test accuracy, write figures/
#   make test   - lint (ruff check, ruff format --check), then the test suite (fast + slow
#                 tiers, notebook 09, command line, README blocks)
#   make lint   - ruff check and ruff format --check alone (make format: apply both)
#   make test-fast - the inner loop: neither the slow nor the integration tier
#   make test-benchmarks - every benchmark script's --quick smoke run (CI runs it after make test)
#   make test-notebooks - every notebook's quick run but 09's (in make test) (CI runs it too)
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
# Re-install when the package metadata changes.
STAMP  = $(VENV)/.installed-$(1)-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test lint format test-fast test-benchmarks test-notebooks test-extended bench clean venv

$(VENV)/bin/python:
	@interp="$$(bash tools/find_python.sh)" || exit 1; \
	echo "creating $(VENV) with $$interp"; \
	"$$interp" -m venv $(VENV) && $(PY) -m pip install --quiet --upgrade pip

$(call STAMP,run): $(VENV)/bin/python
	$(PY) -m pip install --quiet -e ".[jax,nutpie]"
	@touch $@

$(call STAMP,test): $(VENV)/bin/python
	$(PY) -m pip install --quiet -e ".[test,bench,notebooks]"
	@touch $@ $(call STAMP,run)

venv: $(call STAMP,test)

demo: $(call STAMP,run)
	$(PY) -m pymc_bnn demo --out figures

# two workers (the machines have 2 cores): most of a test's time is single-threaded
# graph compilation; tests sharing a costly fixture carry one xdist_group mark
# (tests/test_xdist_groups.py checks that pytest-xdist honours it); the units of work
# go out in the order conftest.py gives them, heaviest first
XDIST := -n 2 --dist loadgroup --no-loadscope-reorder

lint: $(call STAMP,test)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(call STAMP,test)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: lint
	$(PY) -m pytest $(XDIST) -m "not benchmark and not notebook and not extended"

test-fast: $(call STAMP,test)
	$(PY) -m pytest $(XDIST) -m "not slow and not integration"

test-benchmarks: $(call STAMP,test)
	$(PY) -m pytest $(XDIST) -m benchmark

test-notebooks: $(call STAMP,test)
	$(PY) -m pytest $(XDIST) -m notebook

test-extended: $(call STAMP,test)
	$(PY) -m pytest $(XDIST) -m extended

bench: $(call STAMP,test)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) figures .pytest_cache
