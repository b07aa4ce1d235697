# Two commands for newcomers: `make demo` and `make test`. Each sets up .venv itself.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,plot]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/windowkeeper demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy --strict src/

pytest: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

# The evaluation (docs/benchmarks.md and its plots); needs the bench-only extra (langchain-core).
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,plot,bench]'
	$(BIN)/python bench/evaluate.py
	$(BIN)/python bench/bench_storage.py
	$(BIN)/python bench/bench_shapes.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
