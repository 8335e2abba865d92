# One-command set-up: every target creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: test lint typecheck demo bench docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demo needs only the runtime dependencies; tests, benchmarks and docs add their extras.
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

lint: $(STAMP)
	$(BIN)/ruff check agentflow tests benchmarks docs
	$(BIN)/ruff format --check agentflow tests benchmarks docs

typecheck: $(STAMP)
	$(BIN)/mypy --strict agentflow

# No test may reach a real model: requests to hosts other than this machine raise ModelRequestBlocked.
test: lint typecheck
	AGENTFLOW_BLOCK_MODEL_REQUESTS=1 $(BIN)/pytest -q

demo: $(VENV)/.installed-base
	$(BIN)/python -m agentflow.demo

$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python -m benchmarks

$(VENV)/.installed-docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $@

docs: $(VENV)/.installed-docs
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
