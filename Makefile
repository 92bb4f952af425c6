# Two entry points: `make demo` (main job on the embedded default) and `make test` (everything).
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit clean

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "python3.11 not found; set PY=..."; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/reasonwire demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

clean:
	rm -rf $(VENV)
